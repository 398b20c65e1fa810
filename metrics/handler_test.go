package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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
