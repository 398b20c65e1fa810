package printers

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// The -o wide columns of runs answer "where is it and what is it waiting
// for", which KubeFleet's INITIALIZED/PROGRESSING/SUCCEEDED columns cannot:
// a waiting, a stopped and a stuck run all read True False <blank> there.

// currentStage is the stage the run is in: the first one not succeeded,
// then the deletion stage; empty before initialization and once done.
func currentStage(r *fleet.UpdateRun) string {
	for _, s := range r.Status.StagesStatus {
		if !meta.IsStatusConditionTrue(s.Conditions, fleet.StageUpdatingConditionSucceeded) {
			return s.StageName
		}
	}
	if d := r.Status.DeletionStageStatus; d != nil && len(r.Status.StagesStatus) > 0 &&
		!meta.IsStatusConditionTrue(d.Conditions, fleet.StageUpdatingConditionSucceeded) {
		return d.StageName
	}
	return ""
}

// waitingFor says what a person or the clock must do for the run to move
// on: the approval requests to approve, the end of a timed wait, the
// clusters that are stuck, or setting spec.state to Run.
func waitingFor(r *fleet.UpdateRun) string {
	switch r.Phase() {
	case fleet.PhaseInitialized, fleet.PhaseStopped:
		return "spec.state: Run"
	case fleet.PhaseWaiting:
		return pendingTasks(r)
	case fleet.PhaseStuck:
		return "clusters " + strings.Join(updatingClusters(r), ",")
	}
	return ""
}

// pendingTasks lists the current stage's unfinished before- and
// after-stage tasks.
func pendingTasks(r *fleet.UpdateRun) string {
	name := currentStage(r)
	var out []string
	stages := r.Status.StagesStatus
	if d := r.Status.DeletionStageStatus; d != nil {
		stages = append(stages[:len(stages):len(stages)], *d)
	}
	for _, s := range stages {
		if s.StageName != name {
			continue
		}
		for _, t := range append(append([]fleet.StageTaskStatus(nil), s.BeforeStageTaskStatus...), s.AfterStageTaskStatus...) {
			switch {
			case t.ApprovalRequestName != "" && !meta.IsStatusConditionTrue(t.Conditions, fleet.StageTaskConditionApprovalRequestApproved):
				out = append(out, "approval "+t.ApprovalRequestName)
			case t.Type == fleet.StageTaskTypeTimedWait:
				if c := meta.FindStatusCondition(t.Conditions, fleet.StageTaskConditionWaitTimeElapsed); c == nil || c.Status != metav1.ConditionTrue {
					out = append(out, waitEnd(c))
				}
			}
		}
	}
	return strings.Join(out, ", ")
}

// waitEnd reads the end of a timed wait from gitfleet's WaitTimeElapsed
// message ("Wait time ends at <RFC 3339>", deliberate difference 6).
func waitEnd(c *metav1.Condition) string {
	if c != nil {
		if end, ok := strings.CutPrefix(c.Message, "Wait time ends at "); ok {
			return "wait until " + end
		}
	}
	return "timed wait"
}

// updatingClusters are the clusters of the current stage that started and
// have not finished: the ones a stuck run waits for.
func updatingClusters(r *fleet.UpdateRun) []string {
	name := currentStage(r)
	var out []string
	for _, s := range r.Status.StagesStatus {
		if s.StageName != name {
			continue
		}
		for _, c := range s.Clusters {
			if meta.IsStatusConditionTrue(c.Conditions, fleet.ClusterUpdatingConditionStarted) &&
				meta.FindStatusCondition(c.Conditions, fleet.ClusterUpdatingConditionSucceeded) == nil {
				out = append(out, c.ClusterName)
			}
		}
	}
	return out
}
