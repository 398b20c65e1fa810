package gitops

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource/forge"
)

// TestClusterStatusOfASkippedCluster: a cluster a frozen run skipped
// (it left the placement) is an error on the commit, with the reason;
// a retry of the run takes it.
func TestClusterStatusOfASkippedCluster(t *testing.T) {
	run := &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: "run"}, Status: fleet.UpdateRunStatus{
		StagesStatus: []fleet.StageUpdatingStatus{{StageName: "prod", Clusters: []fleet.ClusterUpdatingStatus{
			{ClusterName: "member1", Conditions: []metav1.Condition{{Type: fleet.ClusterUpdatingConditionSkipped,
				Status: metav1.ConditionTrue, Reason: fleet.ClusterLeftPlacementReason, Message: "the cluster `member1` left the placement"}}},
		}}},
		DeletionStageStatus: &fleet.StageUpdatingStatus{StageName: fleet.UpdateRunDeleteStageName},
	}}
	got := ClusterStatuses(run)
	want := forge.Status{Context: "gitfleet/run/member1", State: forge.Error,
		Description: "skipped in stage prod: the cluster `member1` left the placement"}
	if len(got) != 1 || got[0] != want {
		t.Errorf("statuses %+v, want %+v", got, want)
	}
}
