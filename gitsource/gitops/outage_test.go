package gitops_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gitfleet/gitfleet/gitsource/gitops"
	"github.com/gitfleet/gitfleet/internal/clock"
)

// While the remote is away, fetches fail and back off; once it is back,
// everything pushed meanwhile is processed in order and nothing is lost.
func TestRemoteOutageHealsWithoutLosingCommits(t *testing.T) {
	files := quickstartFleet(t)
	r := newFleetRepo(t, files)
	d := startDaemon(t, "file://"+r.remote, t.TempDir(), 50*time.Millisecond)
	waitForCanaryApproval(t, r)

	// The remote disappears; a colleague's clone keeps working offline.
	away := r.remote + ".away"
	if err := os.Rename(r.remote, away); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a failed fetch", func() bool { return d.LastError() != nil })

	if err := os.Rename(away, r.remote); err != nil {
		t.Fatal(err)
	}
	v2 := strings.Replace(string(files["workload.yaml"]), "key: value1", "key: value2", 1)
	v3 := strings.Replace(string(files["workload.yaml"]), "key: value1", "key: value3", 1)
	c2 := r.commit("value2", map[string][]byte{"workload.yaml": []byte(v2)})
	c3 := r.commit("value3", map[string][]byte{"workload.yaml": []byte(v3)})

	eventually(t, "snapshots of both commits", func() bool {
		return r.file("status/snapshots/example-placement/2.yaml") != nil
	})
	for idx, commit := range map[string]string{"1": c2, "2": c3} {
		if got := string(r.file("status/snapshots/example-placement/" + idx + ".yaml")); !strings.Contains(got, "gitfleet.io/commit: "+commit) {
			t.Errorf("snapshot %s does not record commit %s", idx, commit[:12])
		}
	}
	if d.LastError() != nil {
		t.Errorf("the daemon still reports %v after the remote came back", d.LastError())
	}
}

// logLines is a slog JSON handler's output that a test can read while the
// daemon writes it.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// with returns the records whose message is msg, decoded.
func (l *logLines) with(msg string) []map[string]any {
	var out []map[string]any
	for _, rec := range l.all() {
		if rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// all returns every record, decoded.
func (l *logLines) all() []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(l.buf.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil {
			out = append(out, rec)
		}
	}
	return out
}

// logTo makes the daemon log JSON into l.
func logTo(l *logLines) func(*gitops.Config) {
	return func(c *gitops.Config) { c.Log = slog.New(slog.NewJSONHandler(l, nil)) }
}

// The retry log and the retries agree: one line per failed attempt, and
// the next attempt comes exactly retry_in later on the daemon's clock —
// not sooner on a trigger, and growing only up to RetryMax.
func TestFailedFetchesRetryWhenTheLogSays(t *testing.T) {
	r := newFleetRepo(t, map[string][]byte{"config.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: n\n")})
	clk := clock.NewFake(time.Now())
	logs := &logLines{}
	const retryMax = 4 * time.Second
	d := startDaemonWith(t, "file://"+r.remote, t.TempDir(), 0, func(c *gitops.Config) {
		onFakeClock(clk)(c)
		logTo(logs)(c)
		c.RetryMax = retryMax
		c.RetryClock = clk
	})
	bringBack := r.takeAway()
	const failed = "fetch or sync failed; retrying"
	d.poke()
	for attempt := 1; attempt <= 5; attempt++ {
		var line map[string]any
		eventually(t, fmt.Sprintf("failed attempt %d in the log", attempt), func() bool {
			lines := logs.with(failed)
			if len(lines) > attempt {
				t.Fatalf("%d retry lines after %d attempts: %v", len(lines), attempt, lines)
			}
			if len(lines) == attempt {
				line = lines[attempt-1]
			}
			return line != nil
		})
		if got := line["attempt"]; got != float64(attempt) {
			t.Errorf("attempt %d logged as attempt %v", attempt, got)
		}
		if !strings.Contains(fmt.Sprint(line["err"]), r.remote) || line["next_step"] == nil {
			t.Errorf("the retry line does not name the remote %s and the next step: %v", r.remote, line)
		}
		wait, err := time.ParseDuration(fmt.Sprint(line["retry_in"]))
		if err != nil || wait <= 0 || wait > retryMax+retryMax/10 {
			t.Fatalf("attempt %d: retry_in %v (%v), want a duration up to %s", attempt, line["retry_in"], err, retryMax)
		}
		// The wait is a timer on the daemon's clock of exactly retry_in.
		eventually(t, fmt.Sprintf("the retry timer %s ahead", wait), func() bool {
			next, ok := clk.Next()
			return ok && next.Sub(clk.Now()) == wait
		})
		// A trigger (a poll, a webhook) does not cut the wait short: the
		// daemon leaves it queued for the retry to answer.
		d.poke()
		if n := len(logs.with(failed)); n != attempt {
			t.Fatalf("%d retry lines after a trigger during wait %d", n, attempt)
		}
		if attempt == 5 {
			bringBack()
		}
		clk.Step()
	}
	eventually(t, "the fetch to succeed again", func() bool { return d.LastError() == nil && len(logs.with("fetch and sync succeed again")) == 1 })
}
