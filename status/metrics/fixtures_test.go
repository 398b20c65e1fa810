package metrics

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// t0 is when the fixtures' runs were created.
var t0 = time.Date(2026, 1, 9, 1, 49, 6, 0, time.UTC)

func cond(typ string, status metav1.ConditionStatus, reason, msg string, gen int64, at time.Duration) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen,
		LastTransitionTime: metav1.NewTime(t0.Add(at))}
}

// run builds a run at generation 1 with the given run conditions.
func run(ns, name string, state fleet.State, conds ...metav1.Condition) *fleet.UpdateRun {
	return &fleet.UpdateRun{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Generation: 1, CreationTimestamp: metav1.NewTime(t0)},
		Spec:       fleet.UpdateRunSpec{PlacementName: "example-placement", StagedUpdateStrategyName: "example-strategy", State: state},
		Status:     fleet.UpdateRunStatus{Conditions: conds},
	}
}

var (
	initialized = cond("Initialized", "True", fleet.UpdateRunInitializeSucceededReason, "The UpdateRun initialized successfully", 1, 0)
	waiting     = cond("Progressing", "False", fleet.UpdateRunWaitingReason, "The updateRun is waiting for after-stage tasks in stage canary to complete", 1, time.Minute)
	progressing = cond("Progressing", "True", fleet.UpdateRunProgressingReason, "The update run is making progress", 1, 2*time.Minute)
	succeeded   = cond("Succeeded", "True", fleet.UpdateRunSucceededReason, "All stages are completed successfully", 1, 3*time.Minute)
	done        = cond("Progressing", "False", fleet.UpdateRunSucceededReason, "All stages are completed", 1, 3*time.Minute)
)

// stagedRun is a run in stage canary: member1 done, member3 updating,
// member5 pending; stage prod waits for its before-stage approval.
func stagedRun() *fleet.UpdateRun {
	r := run("", "example-run", fleet.StateRun, initialized, progressing)
	started := cond("Started", "True", fleet.ClusterUpdatingStartedReason, "Cluster update started", 1, time.Minute)
	ok := cond("Succeeded", "True", fleet.ClusterUpdatingSucceededReason, "Cluster update completed successfully", 1, 2*time.Minute)
	r.Status.StagesStatus = []fleet.StageUpdatingStatus{
		{StageName: "canary", Clusters: []fleet.ClusterUpdatingStatus{
			{ClusterName: "member1", Conditions: []metav1.Condition{started, ok}},
			{ClusterName: "member3", Conditions: []metav1.Condition{started}},
			{ClusterName: "member5"},
		}},
		{StageName: "prod", Clusters: []fleet.ClusterUpdatingStatus{{ClusterName: "member2"}},
			BeforeStageTaskStatus: []fleet.StageTaskStatus{{Type: fleet.StageTaskTypeApproval, ApprovalRequestName: "example-run-before-prod",
				Conditions: []metav1.Condition{cond("ApprovalRequestCreated", "True", fleet.StageTaskApprovalRequestCreatedReason, "ApprovalRequest object is created", 1, 5*time.Minute)}}}},
	}
	r.Status.DeletionStageStatus = &fleet.StageUpdatingStatus{StageName: fleet.UpdateRunDeleteStageName, Clusters: []fleet.ClusterUpdatingStatus{}}
	return r
}
