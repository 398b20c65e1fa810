package metrics

import (
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// notReadyReason is what /readyz says until SetReady.
const notReadyReason = "not ready: the first fetch and render of the fleet repository have not succeeded yet"

// Endpoints serves /metrics, /healthz and /readyz. /readyz answers 503 with
// the reason until the daemon calls SetReady (after its first successful
// fetch and render), so a rollout of gitfleet itself waits for a working
// instance, and then whenever the ready check fails (the last successful
// sync is too old). /healthz answers 200 while the health check passes (the
// loop is not wedged), so a liveness probe restarts a wedged instance.
type Endpoints struct {
	mux *http.ServeMux

	mu     sync.Mutex
	ready  bool
	reason string
	// readyCheck and healthCheck, if set, are asked on every request.
	readyCheck, healthCheck func() error
	// leading, if set, says whether this replica leads and who does.
	leading func() (bool, string)
	// note, if set, is added to a ready answer.
	note func() string
}

// Handler returns the endpoints over the metrics gathered from g.
func Handler(g prometheus.Gatherer) *Endpoints {
	e := &Endpoints{mux: http.NewServeMux(), reason: notReadyReason}
	e.mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	e.mux.HandleFunc("/healthz", e.healthz)
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

// SetChecks installs the checks /readyz (once ready) and /healthz ask on
// every request; a non-nil error answers 503 with its text.
func (e *Endpoints) SetChecks(ready, health func() error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.readyCheck, e.healthCheck = ready, health
}

// SetNote adds what note returns (when not empty) to /readyz's "ok", for
// what an operator may want to know without it making serve unready: a
// render in progress.
func (e *Endpoints) SetNote(note func() string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.note = note
}

// SetNotReady makes /readyz answer 503 with reason.
func (e *Endpoints) SetNotReady(reason string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ready, e.reason = false, reason
}

// SetLeader makes /readyz answer for one of several replicas and say who
// leads: "ok: standby, the leader is <identity>" while this one does not
// lead, and "ok: leading as <identity>" once it leads and is ready (before
// that, and when its sync is too old, 503 as without SetLeader).
//
// A standby is ready: it is what a Deployment's rollout waits for. Were it
// 503, a Deployment of two replicas would never be fully available, and a
// RollingUpdate would wait forever for new pods that stand by while the
// old leader holds the lease.
func (e *Endpoints) SetLeader(leading func() (bool, string)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.leading = leading
}

func (e *Endpoints) readyz(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	ready, reason, check, leading, note := e.ready, e.reason, e.readyCheck, e.leading, e.note
	e.mu.Unlock()
	ok := "ok"
	if leading != nil {
		me, leader := leading()
		if !me {
			if leader == "" {
				leader = "not elected yet"
			}
			answerText(w, "ok: standby, the leader is "+leader)
			return
		}
		ok = "ok: leading as " + leader
	}
	if ready && check != nil {
		if err := check(); err != nil {
			ready, reason = false, "not ready: "+err.Error()
		}
	}
	if !ready {
		answer(w, false, reason)
		return
	}
	if note != nil {
		if n := note(); n != "" {
			ok += "; " + n
		}
	}
	answerText(w, ok)
}

func (e *Endpoints) healthz(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	check := e.healthCheck
	e.mu.Unlock()
	if check != nil {
		if err := check(); err != nil {
			answer(w, false, "unhealthy: "+err.Error())
			return
		}
	}
	answer(w, true, "")
}

// answer writes "ok" or 503 with the reason.
func answer(w http.ResponseWriter, ok bool, reason string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(reason + "\n"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// answerText writes 200 with text.
func answerText(w http.ResponseWriter, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte(text + "\n"))
}
