package kube

import (
	"fmt"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
)

// TestAPulledRolloutHasNoFailedPass: two members pull their Works through
// real agents; a run rolls a snapshot out to them one at a time, then a
// second run rolls out an update. The bindings pass through the states
// delivery writes while the Works change and the agents report, and the
// engine, woken by each, must never take one for a failed cluster update
// (spec §3.5): no run pass fails.
func TestAPulledRolloutHasNoFailedPass(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	th := startHub(t)
	ctx := await.Context(t)
	clk := clock.Real{}
	h := th.newHub(t, Config{Resources: selectWorkload, Deliver: true})
	startAgents(t, th, h, clk, "member1", "member2")

	strategy := &fleet.UpdateStrategy{ObjectMeta: metav1.ObjectMeta{Name: "one-by-one"}, Spec: fleet.UpdateStrategySpec{
		Stages: []fleet.StageConfig{{Name: "staging", LabelSelector: &metav1.LabelSelector{}, MaxConcurrency: maxConcurrency("1")}}}}
	th.apply(t, h, strategy)
	stored := th.appPlacement(t, h)
	snapshot := func(data string) {
		t.Helper()
		w := workload.DeepCopy()
		if err := unstructured.SetNestedField(w.Object, data, "data", "k"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := resourcesnapshot.Ensure(ctx, h, stored, []*unstructured.Unstructured{w}, ""); err != nil {
			t.Fatal(err)
		}
	}
	snapshot("v1")
	if _, err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var failed []string
	engine := reconciler.NewEngine(h, clk, reconciler.EngineOptions{Committer: h, OnError: func(c string, err error) {
		bs, _ := h.ListBindings(ctx, hub.Key{Name: "app"})
		seen := fmt.Sprintf("%s: %v; bindings:", c, err)
		for _, b := range bs {
			seen += fmt.Sprintf("\n  %s gen %d %s %+v", b.Spec.TargetCluster, b.Generation, b.Spec.State, b.Status.Conditions)
		}
		mu.Lock()
		failed = append(failed, seen)
		mu.Unlock()
	}})
	f := &engineFleet{th: th, h: h, ctrl: engine}
	f.start(t)
	awaitBindings(t, h, 2)

	for i, index := range []string{"0", "1"} {
		if i > 0 {
			snapshot("v2")
		}
		run := hub.Key{Name: "run-" + index}
		th.apply(t, h, &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: run.Name}, Spec: fleet.UpdateRunSpec{
			PlacementName: "app", ResourceSnapshotIndex: index, StagedUpdateStrategyName: strategy.Name, State: fleet.StateRun}})
		await.Until(t, run.Name+" to succeed", func() bool {
			r, err := h.GetUpdateRun(ctx, run)
			return err == nil && r.Phase() == fleet.PhaseSucceeded
		})
	}
	mu.Lock()
	defer mu.Unlock()
	for _, f := range failed {
		t.Errorf("a pass failed: %s", f)
	}
}
