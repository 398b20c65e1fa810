package metrics

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// Phases of gitfleet_update_runs. Initialized is a run in state Initialize
// that finished initializing: it waits for a person to set `state: Run`
// (the documented pitfall of runs created without a state), which is worth
// telling apart from both Initializing and Waiting.
const (
	PhaseInitializing = "Initializing"
	PhaseInitialized  = "Initialized"
	PhaseWaiting      = "Waiting"
	PhaseProgressing  = "Progressing"
	PhaseStuck        = "Stuck"
	PhaseStopping     = "Stopping"
	PhaseStopped      = "Stopped"
	PhaseSucceeded    = "Succeeded"
	PhaseFailed       = "Failed"
)

// Phases lists every phase; each always has a series.
var Phases = []string{PhaseInitializing, PhaseInitialized, PhaseWaiting, PhaseProgressing, PhaseStuck,
	PhaseStopping, PhaseStopped, PhaseSucceeded, PhaseFailed}

// Phase sums up a run's conditions in one word.
func Phase(run *fleet.UpdateRun) string {
	conds := run.Status.Conditions
	succeeded := meta.FindStatusCondition(conds, fleet.StagedUpdateRunConditionSucceeded)
	initialized := meta.FindStatusCondition(conds, fleet.StagedUpdateRunConditionInitialized)
	progressing := meta.FindStatusCondition(conds, fleet.StagedUpdateRunConditionProgressing)
	switch {
	case succeeded != nil && succeeded.Status == metav1.ConditionTrue:
		return PhaseSucceeded
	case succeeded != nil && succeeded.Status == metav1.ConditionFalse,
		initialized != nil && initialized.Status == metav1.ConditionFalse:
		return PhaseFailed
	case initialized == nil || initialized.Status != metav1.ConditionTrue:
		return PhaseInitializing
	case progressing == nil:
		return PhaseInitialized
	}
	switch progressing.Reason {
	case fleet.UpdateRunWaitingReason:
		return PhaseWaiting
	case fleet.UpdateRunStuckReason:
		return PhaseStuck
	case fleet.UpdateRunStoppingReason:
		return PhaseStopping
	case fleet.UpdateRunStoppedReason:
		return PhaseStopped
	}
	return PhaseProgressing
}

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

	phase := Phase(run)
	m.pending.observe(run, phase == PhaseSucceeded || phase == PhaseFailed)

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
