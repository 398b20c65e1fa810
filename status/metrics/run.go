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
	stages := make([]*fleet.StageUpdatingStatus, 0, len(run.Status.StagesStatus)+1)
	for i := range run.Status.StagesStatus {
		stages = append(stages, &run.Status.StagesStatus[i])
	}
	if run.Status.DeletionStageStatus != nil {
		stages = append(stages, run.Status.DeletionStageStatus)
	}
	for _, s := range stages {
		counts := map[string]int{}
		for _, c := range s.Clusters {
			counts[clusterState(c.Conditions)]++
		}
		// The stage list is frozen at initialization, so setting every
		// state of every stage leaves no stale series behind.
		for _, state := range []string{ClusterPending, ClusterUpdating, ClusterSucceeded, ClusterFailed} {
			m.stageClusters.WithLabelValues(run.Namespace, run.Name, s.StageName, state).Set(float64(counts[state]))
		}
	}

	v := runview.Of(run)
	phase := v.Phase
	m.pending.observe(run, v.Pending)

	m.mu.Lock()
	defer m.mu.Unlock()
	m.phases[runKey{run.Namespace, run.Name}] = phase
	m.publishPhasesLocked()
}

func clusterState(conds []metav1.Condition) string {
	if c := meta.FindStatusCondition(conds, fleet.ClusterUpdatingConditionSucceeded); c != nil {
		switch c.Status {
		case metav1.ConditionTrue:
			return ClusterSucceeded
		case metav1.ConditionFalse:
			return ClusterFailed
		}
	}
	if meta.IsStatusConditionTrue(conds, fleet.ClusterUpdatingConditionStarted) {
		return ClusterUpdating
	}
	return ClusterPending
}

func (m *Metrics) publishPhasesLocked() {
	counts := map[string]int{}
	for _, p := range m.phases {
		counts[p]++
	}
	for _, p := range Phases {
		m.runs.WithLabelValues(p).Set(float64(counts[p]))
	}
}
