package kube

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// A namespaced fleet object in Git whose namespace the hub lacks is
// applied into a namespace gitfleet creates (labelled as its own), so the
// commit's other objects are not held back by a missing namespace.
func TestApplyIntoANamespaceTheHubLacksCreatesIt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	th := startHub(t)
	h := th.newHub(t, Config{})
	ctx := await.Context(t)
	run := &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: "run", Namespace: "nowhere"},
		Spec: fleet.UpdateRunSpec{PlacementName: "app", StagedUpdateStrategyName: "s", State: fleet.StateRun}}
	if err := h.Apply(ctx, run); err != nil {
		t.Fatalf("Apply into a missing namespace: %v", err)
	}
	if _, err := h.GetUpdateRun(ctx, hub.Key{Namespace: "nowhere", Name: "run"}); err != nil {
		t.Errorf("the applied run: %v", err)
	}
	ns, err := th.client.Resource(namespacesGVR).Get(ctx, "nowhere", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ns.GetLabels()["app.kubernetes.io/managed-by"]; got != NamespaceManagedBy {
		t.Errorf("the namespace gitfleet created is managed by %q; want %q", got, NamespaceManagedBy)
	}
}

// The Git loop applies every fleet object of every commit: applying one
// the hub holds as Apply last wrote it makes no request, while one whose
// spec or labels someone else changed since is applied again (Git wins).
func TestApplyingAnUnchangedObjectMakesNoRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	th := startHub(t)
	calls := &callCounter{}
	rc := *th.rest
	rc.WrapTransport = calls.wrap
	h := th.newHub(t, Config{Rest: &rc})
	ctx := await.Context(t)
	strategy := &fleet.UpdateStrategy{ObjectMeta: metav1.ObjectMeta{Name: "s", Labels: map[string]string{"team": "a"}},
		Spec: fleet.UpdateStrategySpec{Stages: []fleet.StageConfig{{Name: "all", LabelSelector: &metav1.LabelSelector{}}}}}
	key := hub.Key{Name: "s"}
	applied := func(what string, wantWrite bool) {
		t.Helper()
		before := calls.writes.Load()
		if err := h.Apply(ctx, strategy.DeepCopy()); err != nil {
			t.Fatal(err)
		}
		if wrote := calls.writes.Load() > before; wrote != wantWrite {
			t.Errorf("%s: Apply wrote %v; want %v", what, wrote, wantWrite)
		}
		got, err := h.GetUpdateStrategy(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Spec.Stages) != 1 || got.Spec.Stages[0].Name != "all" || got.Labels["team"] != "a" {
			t.Errorf("%s: the hub holds stages %+v and labels %v; want Git's", what, got.Spec.Stages, got.Labels)
		}
	}
	applied("the first apply", true)
	applied("the same object again", false)

	others := th.resource(resources[fleet.KindClusterStagedUpdateStrategy], "")
	changed := func(what, patch string) {
		t.Helper()
		u, err := others.Patch(ctx, "s", types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl"})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.informers[fleet.KindClusterStagedUpdateStrategy].caughtUp(ctx, u); err != nil {
			t.Fatal(err)
		}
		applied(what, true)
		applied(what+", then the same object again", false)
	}
	changed("after someone renamed the stage", `{"spec":{"stages":[{"name":"other","labelSelector":{}}]}}`)
	changed("after someone removed a label", `{"metadata":{"labels":{"team":null}}}`)
}
