package kube

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/status"
)

var _ hub.Loop = (*Hub)(nil)

// TestGitLoopSideOnKubeHub runs the engine on a kube hub as `serve --hub
// kube` does: the hub delivers to simulated members itself (the members'
// reports finish the run, no test simulator), and the store it was given
// mirrors the hub with what the embedded hub would persist. A stored
// object the hub does not hold is deleted from the store at Start.
func TestGitLoopSideOnKubeHub(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	th := startHub(t)
	ctx := await.Context(t)
	store := embedded.NewMemoryStore()
	stale := hub.ObjectRef{Kind: fleet.KindClusterStagedUpdateRun, Key: hub.Key{Name: "gone-run"}}
	store.Put(stale, &fleet.UpdateRun{TypeMeta: metav1.TypeMeta{APIVersion: fleet.PlacementAPIVersion, Kind: stale.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: "gone-run"}})
	h := th.newHub(t, Config{Resources: selectWorkload, Deliver: true, Store: store})

	simulated := map[string]string{fleet.DriverAnnotation: fleet.DriverSimulated}
	for _, name := range []string{"member1", "member2", "member3"} {
		if err := h.Apply(ctx, &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: simulated,
			Labels: map[string]string{"environment": "prod"}}}); err != nil {
			t.Fatal(err)
		}
	}
	strategy := &fleet.UpdateStrategy{ObjectMeta: metav1.ObjectMeta{Name: "all"}, Spec: fleet.UpdateStrategySpec{
		Stages: []fleet.StageConfig{{Name: "prod", LabelSelector: &metav1.LabelSelector{}, MaxConcurrency: maxConcurrency("1")}}}}
	f := newEngineFleet(t, th, h, nil, strategy)
	f.ctrl = reconciler.NewEngine(h, f.ctrl.Clock, reconciler.EngineOptions{Committer: h,
		OnError: func(c string, err error) { t.Logf("%s: %v", c, err) }})
	n, err := h.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Error("Start counted no objects on the hub")
	}
	if objs, _ := store.Load(ctx); containsRef(objs, stale) {
		t.Error("Start left an object in the store that the hub does not hold")
	}
	f.start(t)

	run := hub.Key{Name: "run"}
	if err := h.Apply(ctx, &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: run.Name}, Spec: fleet.UpdateRunSpec{
		PlacementName: "app", StagedUpdateStrategyName: strategy.Name, State: fleet.StateRun}}); err != nil {
		t.Fatal(err)
	}
	await.Until(t, "the run to succeed with the members' own reports", func() bool {
		r, err := h.GetUpdateRun(ctx, run)
		return err == nil && r.Phase() == fleet.PhaseSucceeded
	})
	for _, name := range []string{"member1", "member2", "member3"} {
		sim, ok := h.Members().Simulated(name)
		if !ok || len(sim.Placed()) == 0 {
			t.Errorf("simulated member %s holds nothing; want the placed workload", name)
		}
	}
	bindings, err := h.ListBindings(ctx, hub.Key{Name: "app"})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bindings {
		if !slices.Contains(b.Finalizers, fleet.WorkFinalizer) {
			t.Errorf("delivered binding %s has no work-cleanup finalizer", b.Name)
		}
	}

	// The store mirrors the hub: the finished run, encoded, is the hub's
	// run without what only an API server assigns.
	await.Until(t, "the store to hold the finished run", func() bool {
		objs, _ := store.Load(ctx)
		for _, o := range objs {
			if r, ok := o.(*fleet.UpdateRun); ok && r.Name == run.Name && r.Phase() == fleet.PhaseSucceeded {
				return true
			}
		}
		return false
	})
	objs, _ := store.Load(ctx)
	for _, o := range objs {
		r, ok := o.(*fleet.UpdateRun)
		if !ok || r.Name != run.Name {
			continue
		}
		if r.UID != "" || r.ManagedFields != nil {
			t.Errorf("the mirrored run carries the API server's uid %q or managedFields", r.UID)
		}
		onHub, err := h.GetUpdateRun(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		onHub.UID, onHub.ManagedFields = "", nil
		want, err := status.Encode(onHub)
		if err != nil {
			t.Fatal(err)
		}
		got, err := status.Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("the mirrored run encodes as\n%s\nthe hub's as\n%s", got, want)
		}
	}
	// The last status writes of the run may still be on their way to the
	// API server (runstatus.go writes them beside the engine): Pending
	// drains once they land, and stays 0.
	await.Until(t, "nothing pending after the run", func() bool { return h.Pending() == 0 })
}

func containsRef(objs []runtime.Object, ref hub.ObjectRef) bool {
	for _, o := range objs {
		if m, ok := o.(hub.Object); ok && o.GetObjectKind().GroupVersionKind().Kind == ref.Kind && keyOf(m) == ref.Key {
			return true
		}
	}
	return false
}
