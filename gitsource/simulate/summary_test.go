package simulate

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// The summary names the approval requests a person can act on: the
// deletion stage's too, and a stopped run's pending request beside the
// reason it does not move.
func TestDetailNamesTheApprovalsToGive(t *testing.T) {
	c := func(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: 1}
	}
	created := c(fleet.StageTaskConditionApprovalRequestCreated, metav1.ConditionTrue, fleet.StageTaskApprovalRequestCreatedReason, "")
	run := func(progressing metav1.Condition, deletion *fleet.StageUpdatingStatus, stages ...fleet.StageUpdatingStatus) *fleet.UpdateRun {
		return &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 1}, Spec: fleet.UpdateRunSpec{State: fleet.StateStop},
			Status: fleet.UpdateRunStatus{StagesStatus: stages, DeletionStageStatus: deletion, Conditions: []metav1.Condition{
				c(fleet.StagedUpdateRunConditionInitialized, metav1.ConditionTrue, fleet.UpdateRunInitializeSucceededReason, ""), progressing}}}
	}
	done := fleet.StageUpdatingStatus{StageName: "prod", Conditions: []metav1.Condition{
		c(fleet.StageUpdatingConditionSucceeded, metav1.ConditionTrue, fleet.StageUpdatingSucceededReason, "")}}
	for _, tc := range []struct {
		name string
		run  *fleet.UpdateRun
		want string
	}{
		{"the deletion stage's approval", run(c(fleet.StagedUpdateRunConditionProgressing, metav1.ConditionFalse, fleet.UpdateRunWaitingReason, "waiting"),
			&fleet.StageUpdatingStatus{StageName: fleet.UpdateRunDeleteStageName, Clusters: []fleet.ClusterUpdatingStatus{{ClusterName: "old"}},
				BeforeStageTaskStatus: []fleet.StageTaskStatus{{Type: fleet.StageTaskTypeApproval, ApprovalRequestName: "web-before-delete-stage", Conditions: []metav1.Condition{created}}},
				Conditions:            []metav1.Condition{c(fleet.StageUpdatingConditionProgressing, metav1.ConditionFalse, fleet.StageUpdatingWaitingReason, "")}},
			done),
			"waiting for approval: web-before-delete-stage (gitfleet approve NAME)"},
		{"stopped with an approval pending", run(c(fleet.StagedUpdateRunConditionProgressing, metav1.ConditionFalse, fleet.UpdateRunStoppedReason, "The update run has been stopped"), nil,
			fleet.StageUpdatingStatus{StageName: "prod", Clusters: []fleet.ClusterUpdatingStatus{{ClusterName: "p1"}},
				BeforeStageTaskStatus: []fleet.StageTaskStatus{{Type: fleet.StageTaskTypeApproval, ApprovalRequestName: "web-before-prod", Conditions: []metav1.Condition{created}}},
				Conditions:            []metav1.Condition{c(fleet.StageUpdatingConditionProgressing, metav1.ConditionFalse, fleet.StageUpdatingStoppedReason, "")}}),
			"The update run has been stopped; approval pending: web-before-prod"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Detail(tc.run); got != tc.want {
				t.Errorf("Detail = %q, want %q", got, tc.want)
			}
		})
	}
}
