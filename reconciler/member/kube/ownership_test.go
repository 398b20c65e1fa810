package kube_test

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/member"
	"github.com/gitfleet/gitfleet/reconciler/member/kube"
)

// ownedByAnotherPlacement is the failed placement of an object another
// placement holds on the member: KubeFleet's work applier refuses to
// place an object twice (takeOverPreExistingObject, isPlacedByFleetInDuplicate).
const ownedByAnotherPlacement = "Failed to apply the manifest (error: failed to take over a pre-existing object: " +
	"the object is already owned by another Fleet AppliedWork object)"

// of is d as the binding of placement on its member.
func of(placement string, d member.Delivery) member.Delivery {
	d.Binding.Name = placement + "-" + d.Binding.Spec.TargetCluster
	d.Binding.Labels = map[string]string{fleet.PlacementTrackingLabel: placement}
	return d
}

func TestAnObjectAnotherPlacementHoldsIsNotTakenOver(t *testing.T) {
	for _, tt := range []struct {
		name            string
		strategy        fleet.ApplyStrategy
		reason, message string
	}{
		{"by default", fleet.ApplyStrategy{}, member.FailedToTakeOverReason, ownedByAnotherPlacement},
		// KubeFleet: "Fleet does not support the case where one resource
		// is being placed multiple times by different CRPs on the same
		// member cluster ... even with the AllowCoOwnership setting".
		{"nor with co-ownership allowed", fleet.ApplyStrategy{AllowCoOwnership: true}, member.FailedToTakeOverReason, ownedByAnotherPlacement},
		{"nor if it does not differ", fleet.ApplyStrategy{WhenToTakeOver: fleet.WhenToTakeOverTypeIfNoDiff}, member.FailedToTakeOverReason, ownedByAnotherPlacement},
		{"nor ever", fleet.ApplyStrategy{WhenToTakeOver: fleet.WhenToTakeOverTypeNever}, member.NotTakenOverReason,
			"Failed to apply the manifest (error: no ownership of the object in the member cluster; takeover is needed)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil)
			owner := delivery(t, "member1", 1, "place-0-snapshot", namespace, configMap("shared", "v"))
			f.deliverAvailable(f.drivers, owner)
			rv := f.get("member1", "v1", "ConfigMap", "test-namespace", "shared").GetResourceVersion()

			second := withStrategy(of("other", delivery(t, "member1", 1, "other-0-snapshot", configMap("shared", "v"), configMap("own", "v"))), tt.strategy)
			must(t, f.drivers.Driver("member1").Deliver(f.ctx, pushed(t, second)))
			rep := f.reports.waitCond(t, second.Key(), 1, fleet.ResourceBindingApplied, metav1.ConditionFalse, member.WorkNotAppliedReason)
			if c := f.reports.cond(second.Key(), 1, fleet.ResourceBindingApplied); c.Message != "Work object other-work has failed to apply" {
				t.Errorf("Applied message = %q", c.Message)
			}
			if len(rep.failed) != 1 || rep.failed[0].Name != "shared" || rep.failed[0].Condition.Reason != tt.reason || rep.failed[0].Condition.Message != tt.message {
				t.Errorf("failed = %+v, want shared with %s: %s", rep.failed, tt.reason, tt.message)
			}
			cm := f.get("member1", "v1", "ConfigMap", "test-namespace", "shared")
			if cm.GetLabels()[kube.PlacementLabel] != "place" || cm.GetResourceVersion() != rv {
				t.Errorf("shared = labels %v, resourceVersion %s → %s: written for the second placement", cm.GetLabels(), rv, cm.GetResourceVersion())
			}
			if own := f.get("member1", "v1", "ConfigMap", "test-namespace", "own"); own == nil || own.GetLabels()[kube.PlacementLabel] != "other" {
				t.Errorf("own = %v: the second placement's object of its own is not applied", own)
			}
			// The first placement's binding stays Available: nothing
			// fights over the object.
			if c := f.reports.cond(owner.Key(), 1, fleet.ResourceBindingAvailable); c == nil || c.Status != metav1.ConditionTrue {
				t.Errorf("first placement's Available = %+v", c)
			}
		})
	}
}

func TestAPlacementNeverPrunesAnObjectAnotherPlacementHolds(t *testing.T) {
	f := newFixture(t, nil)
	owner := delivery(t, "member1", 1, "place-0-snapshot", namespace, configMap("shared", "v"))
	f.deliverAvailable(f.drivers, owner)
	second := of("other", delivery(t, "member1", 1, "other-0-snapshot", configMap("shared", "v")))
	must(t, f.drivers.Driver("member1").Deliver(f.ctx, pushed(t, second)))
	f.reports.waitCond(t, second.Key(), 1, fleet.ResourceBindingApplied, metav1.ConditionFalse, member.WorkNotAppliedReason)
	shared := func() *unstructured.Unstructured {
		return f.get("member1", "v1", "ConfigMap", "test-namespace", "shared")
	}

	// The second placement stops selecting it, and then is deleted:
	// the object is the first one's all along.
	second2 := of("other", delivery(t, "member1", 2, "other-1-snapshot", configMap("own", "v")))
	f.deliverAvailable(f.drivers, second2)
	if cm := shared(); cm == nil || cm.GetLabels()[kube.PlacementLabel] != "place" {
		t.Fatalf("shared = %v after the second placement stopped selecting it, want it kept for the first", cm)
	}
	must(t, f.drivers.Driver("member1").Remove(f.ctx, pushed(t, second2)))
	if cm := shared(); cm == nil || cm.GetLabels()[kube.PlacementLabel] != "place" {
		t.Fatalf("shared = %v after the second placement was removed, want it kept for the first", cm)
	}

	// The first lets go of it: deleted, as KubeFleet's garbage collector
	// deletes an object whose one AppliedWork owner is gone; a placement
	// selecting it then applies it as its own.
	owner2 := delivery(t, "member1", 2, "place-1-snapshot", namespace)
	f.deliverAvailable(f.drivers, owner2)
	if cm := shared(); cm != nil {
		t.Fatalf("shared = %v after its one placement let go of it", cm.GetLabels())
	}
	third := of("other", delivery(t, "member1", 3, "other-2-snapshot", configMap("shared", "v")))
	f.deliverAvailable(f.drivers, third)
	if cm := shared(); cm == nil || cm.GetLabels()[kube.PlacementLabel] != "other" {
		t.Fatalf("shared = %v, want it the second placement's", cm)
	}
}

// TestPruneSparesAnObjectAnotherPlacementsRecordHolds: two placements
// applying the same new object at once both create it, and both record
// it; the label says the one that wrote last. Until the next apply
// refuses it to the other, neither's prune deletes it: an object is
// deleted only when no other record on the member holds it. Here the
// race is set up by hand: the second placement's record, written as its
// apply writes it before applying.
func TestPruneSparesAnObjectAnotherPlacementsRecordHolds(t *testing.T) {
	f := newFixture(t, nil)
	f.create(namespace)
	owner := delivery(t, "member1", 1, "place-0-snapshot", configMap("raced", "v"))
	f.deliverAvailable(f.drivers, owner)
	ids, err := json.Marshal([]fleet.ResourceIdentifier{{Version: "v1", Kind: "ConfigMap", Namespace: "test-namespace", Name: "raced"}})
	must(t, err)
	rec := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "other-work", "namespace": kube.InventoryNamespace,
			"labels": map[string]any{"app.kubernetes.io/managed-by": "gitfleet", kube.RecordPlacementLabel: "other"}},
		"data": map[string]any{"resources": string(ids)}}}
	must(t, f.clusters[0].Client().Create(f.ctx, rec))

	owner2 := delivery(t, "member1", 2, "place-1-snapshot", configMap("own", "v"))
	f.deliverAvailable(f.drivers, owner2)
	if f.get("member1", "v1", "ConfigMap", "test-namespace", "raced") == nil {
		t.Fatal("the first placement's prune deleted an object the second placement's record holds")
	}
	must(t, f.drivers.Driver("member1").Remove(f.ctx, pushed(t, owner2)))
	if f.get("member1", "v1", "ConfigMap", "test-namespace", "raced") == nil {
		t.Fatal("the first placement's removal deleted an object the second placement's record holds")
	}

	// The second placement's next apply finds it held by no other record:
	// it takes it over.
	second := of("other", delivery(t, "member1", 1, "other-0-snapshot", configMap("raced", "v")))
	f.deliverAvailable(f.drivers, second)
	if cm := f.get("member1", "v1", "ConfigMap", "test-namespace", "raced"); cm.GetLabels()[kube.PlacementLabel] != "other" {
		t.Errorf("raced labels = %v, want the second placement's", cm.GetLabels())
	}
}
