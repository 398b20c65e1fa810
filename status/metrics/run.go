package metrics

import (
	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/runview"
)

// Phases lists every phase of gitfleet_update_runs (fleet.UpdateRun.Phase);
// each always has a series, so a dashboard shows zeros instead of gaps.
var Phases = []string{fleet.PhaseInitializing, fleet.PhaseInitFailed, fleet.PhaseInitialized, fleet.PhaseWaiting,
	fleet.PhaseProgressing, fleet.PhaseStuck, fleet.PhaseStopping, fleet.PhaseStopped, fleet.PhaseSucceeded, fleet.PhaseFailed}

// ObserveRun refreshes gitfleet's gauges of one run: clusters per stage and
// state, the run's phase, and its pending approvals. RecordStatus calls it;
// call it directly for runs the engine did not pass over (e.g. on startup).
func (m *Metrics) ObserveRun(run *fleet.UpdateRun) {
	v := runview.Of(run)
	for _, s := range v.Stages {
		counts := map[string]int{}
		for _, c := range s.Clusters {
			counts[clusterStates[c.State]]++
		}
		// The stage list is frozen at initialization, so setting every
		// state of every stage leaves no stale series behind.
		for _, state := range []string{ClusterPending, ClusterUpdating, ClusterSucceeded, ClusterFailed, ClusterSkipped} {
			m.stageClusters.WithLabelValues(run.Namespace, run.Name, s.Name, state).Set(float64(counts[state]))
		}
	}
	m.pending.observe(run, v.Pending)
	phase := v.Phase

	m.mu.Lock()
	defer m.mu.Unlock()
	m.phases[runKey{run.Namespace, run.Name}] = phase
	m.publishPhasesLocked()
}

// clusterStates are the state label values of runview's cluster states.
var clusterStates = map[runview.ClusterState]string{runview.ClusterPending: ClusterPending,
	runview.ClusterUpdating: ClusterUpdating, runview.ClusterSucceeded: ClusterSucceeded, runview.ClusterFailed: ClusterFailed,
	runview.ClusterSkipped: ClusterSkipped}

func (m *Metrics) publishPhasesLocked() {
	counts := map[string]int{}
	for _, p := range m.phases {
		counts[p]++
	}
	for _, p := range Phases {
		m.runs.WithLabelValues(p).Set(float64(counts[p]))
	}
}
