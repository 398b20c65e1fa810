package kube

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/hub"
	"github.com/gitfleet/gitfleet/internal/await"
)

// A namespaced fleet object in Git whose namespace the hub lacks is not
// applied, and the error says to create the namespace on the hub (the
// API server's own answer only names the namespace as not found).
func TestApplyIntoANamespaceTheHubLacksSaysToCreateIt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	h := startHub(t).newHub(t, Config{})
	err := h.Apply(await.Context(t), &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: "run", Namespace: "nowhere"},
		Spec: fleet.UpdateRunSpec{PlacementName: "app", StagedUpdateStrategyName: "s", State: fleet.StateRun}})
	if err == nil || !strings.Contains(err.Error(), `namespace "nowhere" is not on the hub; create it there (kubectl create namespace nowhere)`) {
		t.Fatalf("Apply into a missing namespace: %v; want the fix named", err)
	}
	if !hub.IsNotFound(err) {
		t.Errorf("the error %v is no longer a NotFound", err)
	}
}
