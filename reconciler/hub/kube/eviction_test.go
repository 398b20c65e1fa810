package kube

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// TestEvictionOnKubeHub: on a real API server, with every cluster of a
// PickAll placement available, a disruption budget of minAvailable 3
// blocks an eviction (Valid True, Executed False with upstream's message);
// a budget of minAvailable 2 lets a second eviction, created at v1alpha1
// as an older KubeFleet client would, delete member1's binding, after
// which the scheduler picks member1 again with a new Scheduled binding.
func TestEvictionOnKubeHub(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	th := startHub(t)
	h := th.newHub(t, Config{Resources: selectWorkload})
	members := map[string]map[string]string{"member1": nil, "member2": nil, "member3": nil}
	strategy := &fleet.UpdateStrategy{ObjectMeta: metav1.ObjectMeta{Name: "all-at-once"}, Spec: fleet.UpdateStrategySpec{
		Stages: []fleet.StageConfig{{Name: "all", LabelSelector: &metav1.LabelSelector{}, MaxConcurrency: maxConcurrency("3")}}}}
	f := newEngineFleet(t, th, h, members, strategy)
	simulateMembers(t, th.rest, nil)
	f.start(t)
	ctx := await.Context(t)
	awaitBindings(t, h, 3)
	run := hub.Key{Name: "rollout"}
	th.apply(t, h, &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: run.Name}, Spec: fleet.UpdateRunSpec{
		PlacementName: "app", StagedUpdateStrategyName: strategy.Name, State: fleet.StateRun}})
	awaitSucceeded(t, h, run)

	budget := func(minAvailable int32) {
		v := intstr.FromInt32(minAvailable)
		th.apply(t, h, &fleet.ClusterResourcePlacementDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "app"},
			Spec: fleet.PlacementDisruptionBudgetSpec{MinAvailable: &v}})
	}
	awaitEviction := func(name string) *fleet.ClusterResourcePlacementEviction {
		t.Helper()
		var e *fleet.ClusterResourcePlacementEviction
		await.Until(t, "eviction "+name+" to be done", func() bool {
			var err error
			e, err = h.GetEviction(ctx, hub.Key{Name: name})
			return err == nil && e.IsTerminal()
		})
		return e
	}
	executed := func(e *fleet.ClusterResourcePlacementEviction) (metav1.ConditionStatus, string) {
		c := e.GetCondition(string(fleet.PlacementEvictionConditionTypeExecuted))
		if c == nil {
			return "", ""
		}
		return c.Status, c.Message
	}

	budget(3)
	th.apply(t, h, &fleet.ClusterResourcePlacementEviction{ObjectMeta: metav1.ObjectMeta{Name: "blocked"},
		Spec: fleet.PlacementEvictionSpec{PlacementName: "app", ClusterName: "member1"}})
	blocked := awaitEviction("blocked")
	if s, msg := executed(blocked); s != metav1.ConditionFalse ||
		msg != "Eviction is blocked by specified ClusterResourcePlacementDisruptionBudget, availablePlacements: 3, totalPlacements: 3" {
		t.Fatalf("blocked eviction: Executed=%s %q", s, msg)
	}
	if bs, _ := h.ListBindings(ctx, hub.Key{Name: "app"}); len(bs) != 3 {
		t.Fatalf("a blocked eviction left %d bindings", len(bs))
	}

	budget(2)
	alpha := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": fleet.PlacementGroup + "/v1alpha1", "kind": fleet.KindClusterResourcePlacementEviction,
		"metadata": map[string]any{"name": "executed"},
		"spec":     map[string]any{"placementName": "app", "clusterName": "member1"}}}
	gvr := resources[fleet.KindClusterResourcePlacementEviction]
	gvr.Version = "v1alpha1"
	if _, err := th.client.Resource(gvr).Create(ctx, alpha, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	done := awaitEviction("executed")
	if s, msg := executed(done); s != metav1.ConditionTrue ||
		msg != "Eviction is allowed by specified ClusterResourcePlacementDisruptionBudget, availablePlacements: 3, totalPlacements: 3" {
		t.Fatalf("executed eviction: Executed=%s %q", s, msg)
	}
	await.Until(t, "member1 to be scheduled again with a new binding", func() bool {
		bs, err := h.ListBindings(ctx, hub.Key{Name: "app"})
		if err != nil {
			return false
		}
		for _, b := range bs {
			if b.Spec.TargetCluster == "member1" {
				return b.Spec.State == fleet.BindingStateScheduled && b.DeletionTimestamp == nil
			}
		}
		return false
	})
	if again, err := h.GetEviction(ctx, hub.Key{Name: "blocked"}); err != nil || again.ResourceVersion != blocked.ResourceVersion {
		t.Errorf("the blocked eviction was evaluated again under the looser budget: %v", err)
	}
}
