package gitops_test

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/status"
)

// TestEvictionPushedToGitIsExecutedOnceAndWrittenBack: on the embedded
// hub, a disruption budget and an eviction are files like any fleet
// object. Once the quickstart rolled out, an eviction of member1 under
// minAvailable 2 is executed: its conditions come back under
// status/evictions/, member1's binding is deleted and the PickAll
// placement picks member1 again (a Scheduled binding, until the next run).
// A later change of the eviction's spec is refused with the API server's
// message, noted on the eviction's status file, and the eviction is not
// executed again.
func TestEvictionPushedToGitIsExecutedOnceAndWrittenBack(t *testing.T) {
	r := newFleetRepo(t, quickstartFleet(t))
	startDaemon(t, "file://"+r.remote, t.TempDir(), 50*time.Millisecond)
	waitForCanaryApproval(t, r)
	r.commit("approve the canary", map[string][]byte{"approvals/" + approvalName + ".yaml": encode(t, status.ApprovedCopy(r.approval(approvalName), time.Now()))})
	r.waitPhase("example-run", fleet.PhaseSucceeded)

	eviction := func(cluster string) []byte {
		return []byte("apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterResourcePlacementEviction\n" +
			"metadata:\n  name: evict-member1\nspec:\n  placementName: example-placement\n  clusterName: " + cluster + "\n")
	}
	r.commit("evict member1", map[string][]byte{
		"budget.yaml": []byte("apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterResourcePlacementDisruptionBudget\n" +
			"metadata:\n  name: example-placement\nspec:\n  minAvailable: 2\n"),
		"eviction.yaml": eviction("member1"),
	})
	const file = "status/evictions/evict-member1.yaml"
	var done *fleet.ClusterResourcePlacementEviction
	eventually(t, "the eviction's conditions in "+file, func() bool {
		if r.file(file) == nil {
			return false
		}
		done = r.object(file).(*fleet.ClusterResourcePlacementEviction)
		return done.IsTerminal()
	})
	executed := meta.FindStatusCondition(done.Status.Conditions, string(fleet.PlacementEvictionConditionTypeExecuted))
	if executed == nil || executed.Status != metav1.ConditionTrue || executed.Message !=
		"Eviction is allowed by specified ClusterResourcePlacementDisruptionBudget, availablePlacements: 3, totalPlacements: 3" {
		t.Fatalf("Executed = %+v", executed)
	}
	eventually(t, "member1 scheduled again after its eviction", func() bool {
		if r.file("status/bindings/example-placement/member1.yaml") == nil {
			return false
		}
		b := r.object("status/bindings/example-placement/member1.yaml").(*fleet.Binding)
		return b.Spec.State == fleet.BindingStateScheduled && b.Spec.ResourceSnapshotName == ""
	})

	r.commit("evict member2 instead", map[string][]byte{"eviction.yaml": eviction("member2")})
	var after *fleet.ClusterResourcePlacementEviction
	eventually(t, "the refused change noted on the eviction", func() bool {
		after = r.object(file).(*fleet.ClusterResourcePlacementEviction)
		return strings.Contains(after.Annotations[fleet.RejectedChangeAnnotation],
			`spec.clusterName: Invalid value: "member2": The ClusterName field is immutable`)
	})
	if after.Spec.ClusterName != "member1" || !equality.Semantic.DeepEqual(after.Status, done.Status) {
		t.Errorf("after the refused change the eviction is %+v, %+v; want member1's, executed once", after.Spec, after.Status)
	}
}
