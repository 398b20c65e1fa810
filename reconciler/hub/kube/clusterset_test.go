package kube

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// TestFrozenClusterSetOnKubeHub: a run that freezes its cluster set, on a
// real API server with the scheduler, goes on when a member joins (listed
// as pending, its binding left alone) and another leaves (skipped, its
// binding left to the next run) while the run waits for its stage's
// approval; KubeFleet's run would fail ("the number of clusters in index
// `0` stage has changed").
func TestFrozenClusterSetOnKubeHub(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	th := startHub(t)
	h := th.newHub(t, Config{Resources: selectWorkload})
	members := map[string]map[string]string{"a-1": {"env": "prod"}, "a-2": {"env": "prod"}, "a-3": {"env": "prod"}}
	strategy := &fleet.UpdateStrategy{ObjectMeta: metav1.ObjectMeta{Name: "one-stage"}, Spec: fleet.UpdateStrategySpec{
		Stages: []fleet.StageConfig{{Name: "prod", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
			BeforeStageTasks: []fleet.StageTask{{Type: fleet.StageTaskTypeApproval}}}}}}
	f := newEngineFleet(t, th, h, members, strategy)
	simulateMembers(t, th.rest, nil)
	f.start(t)
	awaitBindings(t, h, 3)

	ctx := await.Context(t)
	run := hub.Key{Name: "frozen-run"}
	th.apply(t, h, &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: run.Name}, Spec: fleet.UpdateRunSpec{
		PlacementName: "app", StagedUpdateStrategyName: strategy.Name, State: fleet.StateRun,
		ClusterSet: &fleet.ClusterSetPolicy{WhenChanged: fleet.ClusterSetChangeFreeze}}})
	approval := hub.Key{Name: "frozen-run-before-prod"}
	await.Until(t, "the run to wait for the prod approval", func() bool {
		if _, err := h.GetApprovalRequest(ctx, approval); err != nil {
			return false
		}
		r, err := h.GetUpdateRun(ctx, run)
		return err == nil && r.Phase() == fleet.PhaseWaiting
	})

	th.apply(t, h, &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "a-4", Labels: map[string]string{"env": "prod"}}})
	if err := th.resource(resources[fleet.KindMemberCluster], "").Delete(ctx, "a-3", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	await.Until(t, "the scheduler to pick a-4 and drop a-3", func() bool {
		bs, err := h.ListBindings(ctx, hub.Key{Name: "app"})
		if err != nil {
			return false
		}
		state := map[string]fleet.BindingState{}
		for _, b := range bs {
			state[b.Spec.TargetCluster] = b.Spec.State
		}
		return state["a-4"] == fleet.BindingStateScheduled && state["a-3"] == fleet.BindingStateUnscheduled
	})

	a, err := h.GetApprovalRequest(ctx, approval)
	if err != nil {
		t.Fatal(err)
	}
	meta.SetStatusCondition(&a.Status.Conditions, metav1.Condition{Type: fleet.ApprovalRequestConditionApproved,
		Status: metav1.ConditionTrue, ObservedGeneration: a.Generation, Reason: "testPassed", Message: "approved"})
	if err := h.UpdateApprovalRequestStatus(ctx, a); err != nil {
		t.Fatal(err)
	}
	awaitSucceeded(t, h, run)

	r, err := h.GetUpdateRun(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Status.PendingClusters; !slices.Equal(got, []string{"a-4"}) {
		t.Errorf("pendingClusters %v, want [a-4]", got)
	}
	for _, c := range r.Status.StagesStatus[0].Clusters {
		skipped := meta.FindStatusCondition(c.Conditions, fleet.ClusterUpdatingConditionSkipped)
		succeeded := meta.IsStatusConditionTrue(c.Conditions, fleet.ClusterUpdatingConditionSucceeded)
		switch {
		case c.ClusterName == "a-3" && (skipped == nil || skipped.Status != metav1.ConditionTrue || skipped.Reason != fleet.ClusterLeftPlacementReason || succeeded):
			t.Errorf("a-3 left and is not skipped: %+v", c.Conditions)
		case c.ClusterName != "a-3" && !succeeded:
			t.Errorf("%s did not succeed: %+v", c.ClusterName, c.Conditions)
		}
	}
	bs, err := h.ListBindings(ctx, hub.Key{Name: "app"})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		want := fleet.BindingStateBound
		switch b.Spec.TargetCluster {
		case "a-3":
			want = fleet.BindingStateUnscheduled
		case "a-4":
			want = fleet.BindingStateScheduled
		}
		if b.Spec.State != want {
			t.Errorf("binding of %s is %s, want %s", b.Spec.TargetCluster, b.Spec.State, want)
		}
	}
}
