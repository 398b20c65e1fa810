package metrics

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

func get(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestHandlerServesMetricsHealthAndReadiness(t *testing.T) {
	m, reg, _ := newMetrics()
	populate(m)
	h := Handler(reg)
	srv := httptest.NewServer(h)
	defer srv.Close()

	if code, body := get(t, srv, "/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz = %d %q", code, body)
	}
	code, body := get(t, srv, "/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "first fetch and render") {
		t.Errorf("/readyz before SetReady = %d %q, want 503 saying why", code, body)
	}
	h.SetReady()
	if code, body := get(t, srv, "/readyz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/readyz after SetReady = %d %q", code, body)
	}
	note := ""
	h.SetNote(func() string { return note })
	note = "rendering commit 0123abc for 12s"
	if code, body := get(t, srv, "/readyz"); code != http.StatusOK || body != "ok; rendering commit 0123abc for 12s\n" {
		t.Errorf("/readyz with a note = %d %q, want 200 with the note", code, body)
	}
	note = ""
	if code, body := get(t, srv, "/readyz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/readyz with an empty note = %d %q", code, body)
	}
	h.SetNotReady("not ready: cannot fetch the fleet repository")
	if code, body := get(t, srv, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "cannot fetch") {
		t.Errorf("/readyz after SetNotReady = %d %q", code, body)
	}

	code, body = get(t, srv, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics = %d", code)
	}
	for _, name := range Names {
		if !strings.Contains(body, "# TYPE "+name+" ") {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	if code, _ := get(t, srv, "/nothing"); code != http.StatusNotFound {
		t.Errorf("/nothing = %d, want 404", code)
	}
}

// Once ready, /readyz and /healthz ask their checks on every request and
// answer 503 with the check's words while it fails.
func TestHandlerAsksTheChecks(t *testing.T) {
	_, reg, _ := newMetrics()
	h := Handler(reg)
	srv := httptest.NewServer(h)
	defer srv.Close()
	var readyErr, healthErr error
	h.SetChecks(func() error { return readyErr }, func() error { return healthErr })
	h.SetReady()
	for _, tc := range []struct {
		name              string
		ready, health     error
		readyz, healthz   int
		readyIn, healthIn string
	}{
		{"both pass", nil, nil, 200, 200, "ok", "ok"},
		{"sync too old", errors.New("the last successful sync was 5m ago"), nil, 503, 200, "5m ago", "ok"},
		{"wedged", nil, errors.New("the loop is wedged"), 200, 503, "ok", "wedged"},
	} {
		readyErr, healthErr = tc.ready, tc.health
		if code, body := get(t, srv, "/readyz"); code != tc.readyz || !strings.Contains(body, tc.readyIn) {
			t.Errorf("%s: /readyz = %d %q", tc.name, code, body)
		}
		if code, body := get(t, srv, "/healthz"); code != tc.healthz || !strings.Contains(body, tc.healthIn) {
			t.Errorf("%s: /healthz = %d %q", tc.name, code, body)
		}
	}
}

// One of several replicas: a standby is ready and names the leader (a
// Deployment's rollout waits for readiness), the leader says it leads once
// it is ready, and /healthz stays 200 on both.
func TestReadyzSaysWhichReplicaLeads(t *testing.T) {
	_, reg, _ := newMetrics()
	h := Handler(reg)
	srv := httptest.NewServer(h)
	defer srv.Close()
	var mu sync.Mutex // the handler reads them on the server's goroutine
	me, leader := false, ""
	h.SetLeader(func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return me, leader
	})

	tests := []struct {
		name     string
		me       bool
		leader   string
		ready    bool
		check    error
		wantCode int
		wantBody string
	}{
		{"standby before any election", false, "", false, nil, http.StatusOK, "ok: standby, the leader is not elected yet\n"},
		{"standby of a leader", false, "pod-a_1234", true, nil, http.StatusOK, "ok: standby, the leader is pod-a_1234\n"},
		{"leader not synced yet", true, "pod-b_5678", false, nil, http.StatusServiceUnavailable, notReadyReason + "\n"},
		{"leader whose check fails", true, "pod-b_5678", true, errors.New("last sync too old"), http.StatusServiceUnavailable, "not ready: last sync too old\n"},
		{"ready leader", true, "pod-b_5678", true, nil, http.StatusOK, "ok: leading as pod-b_5678\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			me, leader = tt.me, tt.leader
			mu.Unlock()
			h.SetNotReady(notReadyReason)
			if tt.ready {
				h.SetReady()
			}
			h.SetChecks(func() error { return tt.check }, nil)
			if code, body := get(t, srv, "/readyz"); code != tt.wantCode || body != tt.wantBody {
				t.Errorf("/readyz = %d %q, want %d %q", code, body, tt.wantCode, tt.wantBody)
			}
			if code, _ := get(t, srv, "/healthz"); code != http.StatusOK {
				t.Errorf("/healthz = %d, want 200", code)
			}
		})
	}
}
