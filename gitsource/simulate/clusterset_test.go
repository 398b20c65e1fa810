package simulate

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// A succeeded run that did not update every cluster of its placement says
// which it skipped, left out and left to the next run.
func TestDetailNamesTheClustersASucceededRunDidNotUpdate(t *testing.T) {
	ok := func(typ, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: reason, ObservedGeneration: 1}
	}
	run := &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 1}, Status: fleet.UpdateRunStatus{
		ResourceSnapshotIndexUsed: "3",
		Conditions: []metav1.Condition{ok(fleet.StagedUpdateRunConditionInitialized, fleet.UpdateRunInitializeSucceededReason),
			ok(fleet.StagedUpdateRunConditionSucceeded, fleet.UpdateRunSucceededReason)},
		StagesStatus: []fleet.StageUpdatingStatus{{StageName: "prod", Clusters: []fleet.ClusterUpdatingStatus{
			{ClusterName: "m1", Conditions: []metav1.Condition{ok(fleet.ClusterUpdatingConditionSucceeded, fleet.ClusterUpdatingSucceededReason)}},
			{ClusterName: "m3", Conditions: []metav1.Condition{ok(fleet.ClusterUpdatingConditionSkipped, fleet.ClusterLeftPlacementReason)}},
		}}},
		UnmatchedClusters: []string{"m9"}, PendingClusters: []string{"m7", "m8"},
	}}
	want := "resource snapshot 3 on every cluster of the run; skipped (left the placement): m3; " +
		"left out (no stage selects them): m9; pending (joined after initialization): m7, m8"
	if got := Detail(run); got != want {
		t.Errorf("Detail = %q\nwant %q", got, want)
	}
	run.Status.StagesStatus[0].Clusters = run.Status.StagesStatus[0].Clusters[:1]
	run.Status.UnmatchedClusters, run.Status.PendingClusters = nil, nil
	if got := Detail(run); got != "resource snapshot 3 on every cluster" {
		t.Errorf("Detail of a run that updated every cluster = %q", got)
	}
}
