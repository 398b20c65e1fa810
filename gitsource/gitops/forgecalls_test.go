package gitops

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gitfleet/gitfleet/gitsource/forge"
	"github.com/gitfleet/gitfleet/internal/testing/await"
)

// lockedBuffer is a log destination shared with the calls' goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A call the forge fails is retried until it succeeds; every failure is
// counted, but logged once for its class, and the recovery once; the
// token appears nowhere in the log.
func TestForgeCallsRetryCountAndLogOncePerClass(t *testing.T) {
	const token = "s3cr3t-forge-token"
	t.Setenv("FORGE_TOKEN", token)
	var requests atomic.Int64
	const failures = 4
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) <= failures {
			http.Error(w, `{"message":"maintenance"}`, http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":1,"status":"success","context":"gitfleet/web"}`))
	}))
	defer srv.Close()
	f, err := forge.New(forge.Config{Kind: forge.Gitea, URL: srv.URL, Remote: "https://git.example.com/o/fleet.git", TokenEnv: "FORGE_TOKEN"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	counted := map[string]int{}
	var logs lockedBuffer
	calls := newForgeCalls(&ForgeConfig{Forge: f, RetryBase: time.Millisecond, RetryMax: 10 * time.Millisecond,
		OnError: func(op, class string) { mu.Lock(); counted[op+"/"+class]++; mu.Unlock() }},
		slog.New(slog.NewTextHandler(&logs, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { calls.run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	var succeeded atomic.Bool
	calls.Do("commit-status/web", ForgeOpStatus, func(ctx context.Context, f forge.Forge) error {
		err := f.SetStatus(ctx, "6dcb09b5b57875f334f61aebed695e2e4193db5e", forge.Status{Context: "gitfleet/web", State: forge.Success})
		succeeded.Store(err == nil)
		return err
	})
	await.Until(t, "the call to succeed", func() bool { return succeeded.Load() && calls.Pending() == 0 })

	mu.Lock()
	if got := counted[ForgeOpStatus+"/"+forge.ClassServer]; got != failures || len(counted) != 1 {
		t.Errorf("counted %v; want %d %s/%s", counted, failures, ForgeOpStatus, forge.ClassServer)
	}
	mu.Unlock()
	log := logs.String()
	if n := strings.Count(log, "forge call failed"); n != 1 || !strings.Contains(log, "class=server_error") {
		t.Errorf("failure logged %d times; want once with its class:\n%s", n, log)
	}
	if n := strings.Count(log, "forge calls succeed again"); n != 1 {
		t.Errorf("recovery logged %d times; want once:\n%s", n, log)
	}
	if strings.Contains(log, token) {
		t.Errorf("the log has the token:\n%s", log)
	}
}
