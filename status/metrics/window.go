package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// WindowWaitSecondsTotal is the time runs spent waiting for RolloutWindows
// to open or freezes to end.
const WindowWaitSecondsTotal = "gitfleet_window_wait_seconds_total"

// windowWaits exports gitfleet_window_wait_seconds_total: every run has a
// series from its first pass (0 until it waits); time is added at each
// pass of a waiting run, and at the pass that ends the wait, from the
// clock (virtual time in `gitfleet simulate`).
type windowWaits struct {
	total *prometheus.CounterVec
	since map[runKey]time.Time // last pass of each waiting run
}

func newWindowWaits() *windowWaits {
	return &windowWaits{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: WindowWaitSecondsTotal,
			Help: "Time an update run waited for its stages' and members' rollout windows to open (or freezes to end), in seconds.",
		}, []string{LabelNamespace, LabelName}),
		since: map[runKey]time.Time{},
	}
}

// observeLocked counts the run's wait up to now; waiting says whether it
// still waits for a window.
func (w *windowWaits) observeLocked(run *fleet.UpdateRun, waiting bool, now time.Time) {
	key := runKey{run.Namespace, run.Name}
	c := w.total.WithLabelValues(run.Namespace, run.Name)
	if last, ok := w.since[key]; ok {
		c.Add(now.Sub(last).Seconds())
		delete(w.since, key)
	}
	if waiting {
		w.since[key] = now
	}
}

func (w *windowWaits) deleteRunLocked(namespace, name string) {
	w.total.DeletePartialMatch(prometheus.Labels{LabelNamespace: namespace, LabelName: name})
	delete(w.since, runKey{namespace, name})
}
