package eviction_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/eviction"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/reconciler/scheduler"
)

// TestExecutionFollowsUpstream is upstream's TestExecuteEviction on the
// embedded hub: the eviction of member-1 from placement app, by the state
// of member-1's binding and the placement's budget, with the Executed
// condition upstream expects and whether the binding is deleted.
func TestExecutionFollowsUpstream(t *testing.T) {
	conds := func(applied, available metav1.ConditionStatus) []metav1.Condition {
		return []metav1.Condition{
			{Type: fleet.ResourceBindingApplied, Status: applied, Reason: "applied"},
			{Type: fleet.ResourceBindingAvailable, Status: available, Reason: "available"},
		}
	}
	healthy := conds(metav1.ConditionTrue, metav1.ConditionTrue)
	one, tenPercent := intstr.FromInt32(1), intstr.FromString("10%")
	for _, tc := range []struct {
		name        string
		pickAll     bool
		state       fleet.BindingState
		previous    fleet.BindingState // the previous-binding-state annotation
		deleting    bool
		conditions  []metav1.Condition
		budget      *fleet.PlacementDisruptionBudgetSpec
		wantStatus  metav1.ConditionStatus
		wantMessage string
	}{
		{name: "scheduled binding - eviction not executed", state: fleet.BindingStateScheduled,
			wantStatus: metav1.ConditionFalse, wantMessage: fleet.EvictionBlockedMissingPlacementMessage},
		{name: "unscheduled binding with previous state annotation doesn't exist - eviction not executed", state: fleet.BindingStateUnscheduled,
			wantStatus: metav1.ConditionFalse, wantMessage: fleet.EvictionBlockedMissingPlacementMessage},
		{name: "unscheduled binding with previous state as scheduled - eviction not executed", state: fleet.BindingStateUnscheduled,
			previous: fleet.BindingStateScheduled, wantStatus: metav1.ConditionFalse, wantMessage: fleet.EvictionBlockedMissingPlacementMessage},
		{name: "deleting binding - eviction executed", state: fleet.BindingStateUnscheduled, deleting: true,
			wantStatus: metav1.ConditionTrue, wantMessage: fleet.EvictionAllowedPlacementRemovedMessage},
		{name: "failed to apply binding - eviction executed", state: fleet.BindingStateBound,
			conditions: conds(metav1.ConditionFalse, metav1.ConditionFalse), wantStatus: metav1.ConditionTrue, wantMessage: fleet.EvictionAllowedPlacementFailedMessage},
		{name: "failed to be available binding - eviction executed", state: fleet.BindingStateBound,
			conditions: conds(metav1.ConditionTrue, metav1.ConditionFalse), wantStatus: metav1.ConditionTrue, wantMessage: fleet.EvictionAllowedPlacementFailedMessage},
		{name: "unscheduled binding that was bound, pdb not found - eviction executed", state: fleet.BindingStateUnscheduled,
			previous: fleet.BindingStateBound, conditions: healthy, wantStatus: metav1.ConditionTrue, wantMessage: fleet.EvictionAllowedNoPDBMessage},
		{name: "pdb not found - eviction executed", state: fleet.BindingStateBound, conditions: healthy,
			wantStatus: metav1.ConditionTrue, wantMessage: fleet.EvictionAllowedNoPDBMessage},
		{name: "PickAll CRP, Misconfigured PDB MaxUnavailable specified - eviction not executed", pickAll: true, state: fleet.BindingStateBound,
			conditions: healthy, budget: &fleet.PlacementDisruptionBudgetSpec{MaxUnavailable: &one},
			wantStatus: metav1.ConditionFalse, wantMessage: fleet.EvictionBlockedMisconfiguredPDBSpecifiedMessage},
		{name: "PickAll CRP, Misconfigured PDB MinAvailable specified as percentage - eviction not executed", pickAll: true, state: fleet.BindingStateBound,
			conditions: healthy, budget: &fleet.PlacementDisruptionBudgetSpec{MinAvailable: &tenPercent},
			wantStatus: metav1.ConditionFalse, wantMessage: fleet.EvictionBlockedMisconfiguredPDBSpecifiedMessage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			h := embedded.New(clk, nil)
			policy := &fleet.PlacementPolicy{PlacementType: fleet.PickNPlacementType, NumberOfClusters: ptr(int32(1))}
			if tc.pickAll {
				policy = &fleet.PlacementPolicy{PlacementType: fleet.PickAllPlacementType}
			}
			h.ApplyPlacement(&fleet.Placement{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Spec: fleet.PlacementSpec{Policy: policy}})
			b := &fleet.Binding{ObjectMeta: metav1.ObjectMeta{Name: "app-member-1", Labels: map[string]string{fleet.PlacementTrackingLabel: "app"}},
				Spec: fleet.ResourceBindingSpec{State: tc.state, TargetCluster: "member-1", SchedulingPolicySnapshotName: "app-0"}}
			if tc.previous != "" {
				b.Annotations = map[string]string{scheduler.PreviousBindingStateAnnotation: string(tc.previous)}
			}
			if tc.deleting {
				b.Finalizers = []string{"test-finalizer"}
			}
			must(t, h.CreateBinding(ctx, b))
			if tc.conditions != nil {
				b.Status.Conditions = tc.conditions
				for i := range b.Status.Conditions {
					b.Status.Conditions[i].ObservedGeneration = b.Generation
				}
				must(t, h.UpdateBindingStatus(ctx, b))
			}
			if tc.deleting {
				must(t, h.DeleteBinding(ctx, hub.Key{Name: b.Name}))
			}
			if tc.budget != nil {
				must(t, h.Apply(ctx, &fleet.ClusterResourcePlacementDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Spec: *tc.budget}))
			}
			must(t, h.Apply(ctx, &fleet.ClusterResourcePlacementEviction{ObjectMeta: metav1.ObjectMeta{Name: "evict"},
				Spec: fleet.PlacementEvictionSpec{PlacementName: "app", ClusterName: "member-1"}}))

			r := &eviction.Reconciler{Hub: h, Clock: clk}
			res, err := r.Reconcile(ctx, hub.Key{Name: "evict"})
			must(t, err)
			e, err := h.GetEviction(ctx, hub.Key{Name: "evict"})
			must(t, err)
			c := e.GetCondition(string(fleet.PlacementEvictionConditionTypeExecuted))
			if c == nil || c.Status != tc.wantStatus || c.Message != tc.wantMessage {
				t.Fatalf("Executed = %+v; want %s %q", c, tc.wantStatus, tc.wantMessage)
			}
			wantReason := fleet.EvictionNotExecutedReason
			if tc.wantStatus == metav1.ConditionTrue {
				wantReason = fleet.EvictionExecutedReason
			}
			if c.Reason != wantReason || c.ObservedGeneration != e.Generation {
				t.Errorf("Executed reason %s at generation %d; want %s at %d", c.Reason, c.ObservedGeneration, wantReason, e.Generation)
			}
			// Deleted now: an executed eviction of a binding not already
			// being deleted; nothing else is touched.
			_, gerr := h.GetBinding(ctx, hub.Key{Name: b.Name})
			deleted := hub.IsNotFound(gerr)
			wantDeleted := tc.wantStatus == metav1.ConditionTrue && !tc.deleting
			if deleted != wantDeleted || (res.Evicted != nil) != wantDeleted {
				t.Errorf("binding deleted: %v, reported evicted: %v; want %v", deleted, res.Evicted != nil, wantDeleted)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestTwoBindingsOnTheClusterMakeTheEvictionInvalid is upstream's
// TestValidateEviction case of two scheduler decisions for one cluster.
func TestTwoBindingsOnTheClusterMakeTheEvictionInvalid(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := embedded.New(clk, nil)
	h.ApplyPlacement(&fleet.Placement{ObjectMeta: metav1.ObjectMeta{Name: "app"}})
	for _, name := range []string{"app-member-1-a", "app-member-1-b"} {
		must(t, h.CreateBinding(ctx, &fleet.Binding{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{fleet.PlacementTrackingLabel: "app"}},
			Spec: fleet.ResourceBindingSpec{State: fleet.BindingStateBound, TargetCluster: "member-1", SchedulingPolicySnapshotName: "app-0"}}))
	}
	must(t, h.Apply(ctx, &fleet.ClusterResourcePlacementEviction{ObjectMeta: metav1.ObjectMeta{Name: "evict"},
		Spec: fleet.PlacementEvictionSpec{PlacementName: "app", ClusterName: "member-1"}}))
	if _, err := (&eviction.Reconciler{Hub: h, Clock: clk}).Reconcile(ctx, hub.Key{Name: "evict"}); err != nil {
		t.Fatal(err)
	}
	e, err := h.GetEviction(ctx, hub.Key{Name: "evict"})
	must(t, err)
	c := e.GetCondition(string(fleet.PlacementEvictionConditionTypeValid))
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != fleet.EvictionInvalidReason || c.Message != fleet.EvictionInvalidMultipleCRBMessage {
		t.Errorf("Valid = %+v; want False %s %q", c, fleet.EvictionInvalidReason, fleet.EvictionInvalidMultipleCRBMessage)
	}
	if bs, _ := h.ListBindings(ctx, hub.Key{Name: "app"}); len(bs) != 2 {
		t.Errorf("an invalid eviction left %d bindings; want both", len(bs))
	}
}
