package kube

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
