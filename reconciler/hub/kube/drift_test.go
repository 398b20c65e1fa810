package kube

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/hubtest"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

// A driver's report of drifts and diffs reaches the binding's status on the
// hub's API server whole (the CRD keeps every field), with the hub's times.
func TestDriftAndDiffReportsReachTheBindingOnTheKubeHub(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	th := startHub(t)
	h := th.newHub(t, Config{Deliver: true})
	ctx := await.Context(t)
	b := &fleet.Binding{ObjectMeta: metav1.ObjectMeta{Name: "app-member1",
		Labels: map[string]string{fleet.PlacementTrackingLabel: "app"}},
		Spec: fleet.ResourceBindingSpec{State: fleet.BindingStateBound, TargetCluster: "member1",
			SchedulingPolicySnapshotName: "app-0", ResourceSnapshotName: "app-0-snapshot"},
		Status: fleet.ResourceBindingStatus{Conditions: []metav1.Condition{hubtest.RolloutStarted(1)}}}
	if err := h.CreateBinding(ctx, b); err != nil {
		t.Fatal(err)
	}
	key := hub.Key{Name: b.Name}
	cur, err := h.GetBinding(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	gen := int64(3)
	id := fleet.ResourceIdentifier{Version: "v1", Kind: "ConfigMap", Name: "cm", Namespace: "app"}
	p := member.Placements{
		Failed: []fleet.FailedResourcePlacement{{ResourceIdentifier: id, Condition: metav1.Condition{Type: fleet.ResourceBindingApplied,
			Status: metav1.ConditionFalse, Reason: member.FoundDriftsReason, Message: "m", ObservedGeneration: gen}}},
		Drifted: []fleet.DriftedResourcePlacement{{ResourceIdentifier: id, TargetClusterObservedGeneration: 0,
			ObservedDrifts: []fleet.PatchDetail{{Path: "/data/key", ValueInMember: "edited", ValueInHub: "v1"}}}},
		Diffed: []fleet.DiffedResourcePlacement{{ResourceIdentifier: id,
			ObservedDiffs: []fleet.PatchDetail{{Path: "/", ValueInHub: "(the whole object)"}}}},
	}
	cond := metav1.Condition{Type: fleet.ResourceBindingApplied, Status: metav1.ConditionFalse, Reason: member.WorkNotAppliedReason,
		Message: "Work object app-work has failed to apply", ObservedGeneration: cur.Generation}
	if err := h.Delivery().ReportBindingStatus(key, cur.Generation, []metav1.Condition{cond}, p); err != nil {
		t.Fatal(err)
	}
	got, err := h.GetBinding(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	d := got.Status.DriftedPlacements
	if len(d) != 1 || d[0].ObservedDrifts[0] != p.Drifted[0].ObservedDrifts[0] || d[0].FirstDriftedObservedTime.IsZero() ||
		!d[0].ObservationTime.Equal(&d[0].FirstDriftedObservedTime) {
		t.Errorf("driftedPlacements = %+v, want %+v observed now", d, p.Drifted)
	}
	df := got.Status.DiffedPlacements
	if len(df) != 1 || df[0].ObservedDiffs[0] != p.Diffed[0].ObservedDiffs[0] || df[0].TargetClusterObservedGeneration != nil ||
		df[0].FirstDiffedObservedTime.IsZero() {
		t.Errorf("diffedPlacements = %+v, want %+v observed now", df, p.Diffed)
	}
	first := d[0].FirstDriftedObservedTime
	// The same drift reported again writes nothing.
	if err := h.Delivery().ReportBindingStatus(key, cur.Generation, []metav1.Condition{cond}, p); err != nil {
		t.Fatal(err)
	}
	again, err := h.GetBinding(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if again.ResourceVersion != got.ResourceVersion || !again.Status.DriftedPlacements[0].FirstDriftedObservedTime.Equal(&first) {
		t.Errorf("the same report was written again: resourceVersion %s → %s", got.ResourceVersion, again.ResourceVersion)
	}
}
