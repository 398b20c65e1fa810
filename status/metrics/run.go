package metrics

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	m.countFailedLocked(run)
	m.windowWaits.observeLocked(run, v.Waiting.For == runview.WaitWindow, m.clock.Now())
}

// countFailedLocked adds the run's newly failed clusters to
// gitfleet_update_run_failed_clusters_total; every stage has a series from
// the start, so a dashboard shows 0, not "no data".
func (m *Metrics) countFailedLocked(run *fleet.UpdateRun) {
	key := runKey{run.Namespace, run.Name}
	for _, s := range run.Status.StagesStatus {
		m.failed.WithLabelValues(run.Namespace, run.Name, s.StageName)
		for _, c := range s.Clusters {
			sc := meta.FindStatusCondition(c.Conditions, fleet.ClusterUpdatingConditionSucceeded)
			if sc == nil || sc.Status != metav1.ConditionFalse || m.failedSeen[key][stageCluster{s.StageName, c.ClusterName}] {
				continue
			}
			if m.failedSeen[key] == nil {
				m.failedSeen[key] = map[stageCluster]bool{}
			}
			m.failedSeen[key][stageCluster{s.StageName, c.ClusterName}] = true
			m.failed.WithLabelValues(run.Namespace, run.Name, s.StageName).Inc()
		}
	}
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
