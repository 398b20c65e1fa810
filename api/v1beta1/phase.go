package v1beta1

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Phases of a run, derived from its conditions for summaries, dashboards and
// `gitfleet get`. They are a reading aid; the conditions are the API.
const (
	PhaseInitializing = "Initializing" // not initialized yet
	PhaseInitFailed   = "InitFailed"   // Initialized=False
	PhaseInitialized  = "Initialized"  // initialized, state Initialize
	PhaseProgressing  = "Progressing"  // Progressing=True
	PhaseWaiting      = "Waiting"      // waiting for a stage task (approval, wait)
	PhaseStuck        = "Stuck"        // a cluster has been updating too long
	PhaseStopping     = "Stopping"     // Stop requested, clusters still in flight
	PhaseStopped      = "Stopped"      // stopped, waiting to be resumed
	PhaseSucceeded    = "Succeeded"    // all stages completed
	PhaseFailed       = "Failed"       // aborted
)

// Phase summarizes the run's conditions in one word.
func (r *UpdateRun) Phase() string {
	conds := r.Status.Conditions
	init := meta.FindStatusCondition(conds, StagedUpdateRunConditionInitialized)
	switch {
	case init == nil:
		return PhaseInitializing
	case init.Status == metav1.ConditionFalse:
		return PhaseInitFailed
	}
	if s := meta.FindStatusCondition(conds, StagedUpdateRunConditionSucceeded); s != nil {
		if s.Status == metav1.ConditionTrue {
			return PhaseSucceeded
		}
		return PhaseFailed
	}
	p := meta.FindStatusCondition(conds, StagedUpdateRunConditionProgressing)
	if p == nil {
		return PhaseInitialized
	}
	switch p.Reason {
	case UpdateRunWaitingReason:
		return PhaseWaiting
	case UpdateRunStuckReason:
		return PhaseStuck
	case UpdateRunStoppingReason:
		return PhaseStopping
	case UpdateRunStoppedReason:
		return PhaseStopped
	}
	return PhaseProgressing
}
