package metrics

import (
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// notReadyReason is what /readyz says until SetReady.
const notReadyReason = "not ready: the first fetch and render of the fleet repository have not succeeded yet"

// Endpoints serves /metrics, /healthz and /readyz. /healthz answers 200 as
// soon as the server runs; /readyz answers 503 with the reason until the
// daemon calls SetReady (after its first successful fetch and render), so a
// rollout of gitfleet itself waits for a working instance.
type Endpoints struct {
	mux *http.ServeMux

	mu     sync.Mutex
	ready  bool
	reason string
}

// Handler returns the endpoints over the metrics gathered from g.
func Handler(g prometheus.Gatherer) *Endpoints {
	e := &Endpoints{mux: http.NewServeMux(), reason: notReadyReason}
	e.mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	e.mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	e.mux.HandleFunc("/readyz", e.readyz)
	return e
}

// ServeHTTP implements http.Handler.
func (e *Endpoints) ServeHTTP(w http.ResponseWriter, r *http.Request) { e.mux.ServeHTTP(w, r) }

// SetReady makes /readyz answer 200.
func (e *Endpoints) SetReady() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ready = true
}

// SetNotReady makes /readyz answer 503 with reason.
func (e *Endpoints) SetNotReady(reason string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ready, e.reason = false, reason
}

func (e *Endpoints) readyz(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	ready, reason := e.ready, e.reason
	e.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if !ready {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(reason + "\n"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}
