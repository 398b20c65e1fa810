package eviction

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// TestAllowedFollowsUpstreamsArithmetic is upstream's TestIsEvictionAllowed
// (controller_test.go at e160c1cd), case by case: the bindings, the
// placement and the budget, and whether one more disruption is allowed with
// how many bindings count as available.
func TestAllowedFollowsUpstreamsArithmetic(t *testing.T) {
	available := []metav1.Condition{{Type: fleet.ResourceBindingAvailable, Status: metav1.ConditionTrue, Reason: "available"}}
	binding := func(name string, state fleet.BindingState, conds []metav1.Condition) *fleet.Binding {
		return &fleet.Binding{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: fleet.ResourceBindingSpec{State: state, TargetCluster: name}, Status: fleet.ResourceBindingStatus{Conditions: conds}}
	}
	scheduledUnavailableBinding := binding("scheduled-binding", fleet.BindingStateScheduled, nil)
	boundAvailableBinding := binding("bound-available-binding", fleet.BindingStateBound, available)
	anotherBoundAvailableBinding := binding("another-bound-available-binding", fleet.BindingStateBound, available)
	boundUnavailableBinding := binding("bound-unavailable-binding", fleet.BindingStateBound, nil)
	unScheduledAvailableBinding := binding("unscheduled-available-binding", fleet.BindingStateUnscheduled, available)
	bs := func(b ...*fleet.Binding) []*fleet.Binding { return b }
	pickN := func(n int32) *fleet.Placement {
		return &fleet.Placement{Spec: fleet.PlacementSpec{Policy: &fleet.PlacementPolicy{PlacementType: fleet.PickNPlacementType, NumberOfClusters: &n}}}
	}
	pickAll := func() *fleet.Placement {
		return &fleet.Placement{Spec: fleet.PlacementSpec{Policy: &fleet.PlacementPolicy{PlacementType: fleet.PickAllPlacementType}}}
	}
	budget := func(spec fleet.PlacementDisruptionBudgetSpec) *fleet.ClusterResourcePlacementDisruptionBudget {
		return &fleet.ClusterResourcePlacementDisruptionBudget{Spec: spec}
	}
	maxUnavailable := func(v intstr.IntOrString) *fleet.ClusterResourcePlacementDisruptionBudget {
		return budget(fleet.PlacementDisruptionBudgetSpec{MaxUnavailable: &v})
	}
	minAvailable := func(v intstr.IntOrString) *fleet.ClusterResourcePlacementDisruptionBudget {
		return budget(fleet.PlacementDisruptionBudgetSpec{MinAvailable: &v})
	}
	for _, tc := range []struct {
		name          string
		placement     *fleet.Placement
		bindings      []*fleet.Binding
		budget        *fleet.ClusterResourcePlacementDisruptionBudget
		wantAllowed   bool
		wantAvailable int
	}{
		{"MaxUnavailable specified as Integer zero, one available binding - block eviction", pickN(1), bs(boundAvailableBinding), maxUnavailable(intstr.FromInt32(0)), false, 1},
		{"MaxUnavailable specified as Integer zero, one unavailable bindings - block eviction", pickN(1), bs(scheduledUnavailableBinding), maxUnavailable(intstr.FromInt32(0)), false, 0},
		{"MaxUnavailable specified as Integer one, one unavailable binding - block eviction", pickN(1), bs(scheduledUnavailableBinding), maxUnavailable(intstr.FromInt32(1)), false, 0},
		{"MaxUnavailable specified as Integer one, one available binding, upscaling - allow eviction", pickN(2), bs(boundAvailableBinding), maxUnavailable(intstr.FromInt32(1)), true, 1},
		{"MaxUnavailable specified as Integer one, one available, one unavailable binding - block eviction", pickN(2), bs(boundAvailableBinding, boundUnavailableBinding), maxUnavailable(intstr.FromInt32(1)), false, 1},
		{"MaxUnavailable specified as Integer one, two available binding - allow eviction", pickN(1), bs(boundAvailableBinding, unScheduledAvailableBinding), maxUnavailable(intstr.FromInt32(1)), true, 2},
		{"MaxUnavailable specified as Integer one, available bindings greater than target, downscaling - allow eviction", pickN(1), bs(boundAvailableBinding, anotherBoundAvailableBinding, unScheduledAvailableBinding), maxUnavailable(intstr.FromInt32(1)), true, 3},
		{"MaxUnavailable specified as Integer greater than one - block eviction", pickN(4), bs(scheduledUnavailableBinding, boundAvailableBinding, anotherBoundAvailableBinding, boundUnavailableBinding), maxUnavailable(intstr.FromInt32(2)), false, 2},
		{"MaxUnavailable specified as Integer greater than one - allow eviction", pickN(3), bs(scheduledUnavailableBinding, boundAvailableBinding, unScheduledAvailableBinding), maxUnavailable(intstr.FromInt32(2)), true, 2},
		{"MaxUnavailable specified as Integer large number greater than target number - allows eviction", pickN(4), bs(scheduledUnavailableBinding, boundAvailableBinding, boundUnavailableBinding, unScheduledAvailableBinding), maxUnavailable(intstr.FromInt32(10)), true, 2},
		{"MaxUnavailable specified as percentage zero - block eviction", pickN(2), bs(boundAvailableBinding, unScheduledAvailableBinding), maxUnavailable(intstr.FromString("0%")), false, 2},
		{"MaxUnavailable specified as percentage greater than zero, rounds up to 1 - block eviction", pickN(1), bs(scheduledUnavailableBinding), maxUnavailable(intstr.FromString("10%")), false, 0},
		{"MaxUnavailable specified as percentage greater than zero, rounds up to 1 - allow eviction", pickN(1), bs(boundAvailableBinding), maxUnavailable(intstr.FromString("10%")), true, 1},
		{"MaxUnavailable specified as percentage greater than zero, rounds up to greater than 1 - block eviction", pickN(4), bs(scheduledUnavailableBinding, boundAvailableBinding, boundUnavailableBinding, unScheduledAvailableBinding), maxUnavailable(intstr.FromString("40%")), false, 2},
		{"MaxUnavailable specified as percentage greater than zero, rounds up to greater than 1 - allow eviction", pickN(3), bs(scheduledUnavailableBinding, boundAvailableBinding, unScheduledAvailableBinding), maxUnavailable(intstr.FromString("50%")), true, 2},
		{"MaxUnavailable specified as percentage hundred, target number greater than bindings - allow eviction", pickN(10), bs(scheduledUnavailableBinding, boundAvailableBinding, boundUnavailableBinding, anotherBoundAvailableBinding, unScheduledAvailableBinding), maxUnavailable(intstr.FromString("100%")), true, 3},
		{"MaxUnavailable specified as percentage hundred, target number equal to bindings - block eviction", pickN(2), bs(scheduledUnavailableBinding, boundUnavailableBinding), maxUnavailable(intstr.FromString("100%")), false, 0},
		{"MaxUnavailable specified as percentage hundred, target number equal to bindings - allow eviction", pickN(4), bs(scheduledUnavailableBinding, boundAvailableBinding, boundUnavailableBinding, unScheduledAvailableBinding), maxUnavailable(intstr.FromString("100%")), true, 2},
		{"MinAvailable specified as Integer zero, unavailable binding - block eviction", pickN(2), bs(scheduledUnavailableBinding), minAvailable(intstr.FromInt32(0)), false, 0},
		{"MinAvailable specified as Integer zero, available binding - allow eviction", pickN(2), bs(boundAvailableBinding), minAvailable(intstr.FromInt32(0)), true, 1},
		{"MinAvailable specified as Integer one, unavailable binding - block eviction", pickN(1), bs(scheduledUnavailableBinding), minAvailable(intstr.FromInt32(1)), false, 0},
		{"MinAvailable specified as Integer one, available binding, upscaling - block eviction", pickN(2), bs(boundAvailableBinding), minAvailable(intstr.FromInt32(1)), false, 1},
		{"MinAvailable specified as Integer one, one available, one unavailable binding - block eviction", pickN(1), bs(boundAvailableBinding, boundUnavailableBinding), minAvailable(intstr.FromInt32(1)), false, 1},
		{"MinAvailable specified as Integer one, two available bindings - allow eviction", pickN(2), bs(boundAvailableBinding, unScheduledAvailableBinding), minAvailable(intstr.FromInt32(1)), true, 2},
		{"MinAvailable specified as Integer one, available bindings greater than target number, downscaling - allow eviction", pickN(1), bs(boundAvailableBinding, anotherBoundAvailableBinding, unScheduledAvailableBinding), minAvailable(intstr.FromInt32(1)), true, 3},
		{"MinAvailable specified as Integer greater than one - block eviction", pickN(2), bs(boundAvailableBinding, unScheduledAvailableBinding), minAvailable(intstr.FromInt32(2)), false, 2},
		{"MinAvailable specified as Integer greater than one - allow eviction", pickN(4), bs(scheduledUnavailableBinding, boundAvailableBinding, anotherBoundAvailableBinding, unScheduledAvailableBinding), minAvailable(intstr.FromInt32(2)), true, 3},
		{"MinAvailable specified as Integer greater than one, available bindings greater than target number, downscaling - block eviction", pickN(1), bs(boundAvailableBinding, anotherBoundAvailableBinding, unScheduledAvailableBinding), minAvailable(intstr.FromInt32(3)), false, 3},
		{"MinAvailable specified as Integer large number greater than target number - blocks eviction", pickN(5), bs(scheduledUnavailableBinding, boundAvailableBinding, anotherBoundAvailableBinding, boundUnavailableBinding, unScheduledAvailableBinding), minAvailable(intstr.FromInt32(10)), false, 3},
		{"MinAvailable specified as percentage zero, all bindings are unavailable - block eviction", pickN(2), bs(scheduledUnavailableBinding, boundUnavailableBinding), minAvailable(intstr.FromString("0%")), false, 0},
		{"MinAvailable specified as percentage zero, all bindings are available - allow eviction", pickN(3), bs(boundAvailableBinding, anotherBoundAvailableBinding, unScheduledAvailableBinding), minAvailable(intstr.FromString("0%")), true, 3},
		{"MinAvailable specified as percentage rounds upto one - block eviction", pickN(1), bs(scheduledUnavailableBinding), minAvailable(intstr.FromString("10%")), false, 0},
		{"MinAvailable specified as percentage rounds upto one - allow eviction", pickN(2), bs(boundAvailableBinding, unScheduledAvailableBinding), minAvailable(intstr.FromString("10%")), true, 2},
		{"MinAvailable specified as percentage greater than zero, rounds up to greater than 1 - block eviction", pickN(3), bs(scheduledUnavailableBinding, boundAvailableBinding, anotherBoundAvailableBinding), minAvailable(intstr.FromString("40%")), false, 2},
		{"MinAvailable specified as percentage greater than zero, rounds up to greater than 1 - allow eviction", pickN(3), bs(boundAvailableBinding, anotherBoundAvailableBinding, unScheduledAvailableBinding), minAvailable(intstr.FromString("40%")), true, 3},
		{"MinAvailable specified as percentage hundred, bindings less than target number - block eviction", pickN(10), bs(boundAvailableBinding, anotherBoundAvailableBinding), minAvailable(intstr.FromString("100%")), false, 2},
		{"MinAvailable specified as percentage hundred, bindings equal to target number  - block eviction", pickN(3), bs(boundAvailableBinding, anotherBoundAvailableBinding, unScheduledAvailableBinding), minAvailable(intstr.FromString("100%")), false, 3},
		{"MinAvailable specified as percentage hundred, bindings greater than target number - allow eviction", pickN(2), bs(boundAvailableBinding, anotherBoundAvailableBinding, unScheduledAvailableBinding), minAvailable(intstr.FromString("100%")), true, 3},
		{"MinAvailable specified as Integer zero, available binding, PickAll CRP - allow eviction", pickAll(), bs(boundAvailableBinding), minAvailable(intstr.FromInt32(0)), true, 1},
		{"MinAvailable specified as Integer one, available binding, PickAll CRP - block eviction", pickAll(), bs(boundAvailableBinding), minAvailable(intstr.FromInt32(1)), false, 1},
		{"MinAvailable specified as Integer greater than one, available binding, PickAll CRP - allow eviction", pickAll(), bs(boundAvailableBinding, anotherBoundAvailableBinding, unScheduledAvailableBinding), minAvailable(intstr.FromInt32(2)), true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			allowed, n := Allowed(tc.bindings, tc.placement, tc.budget)
			if allowed != tc.wantAllowed || n != tc.wantAvailable {
				t.Errorf("Allowed = %v, %d available; want %v, %d", allowed, n, tc.wantAllowed, tc.wantAvailable)
			}
		})
	}
}

// TestAvailableCountsOnlyTheBindingsGeneration: an Available condition of
// an older generation does not count, as upstream's IsConditionStatusTrue.
func TestAvailableCountsOnlyTheBindingsGeneration(t *testing.T) {
	b := &fleet.Binding{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: fleet.ResourceBindingSpec{State: fleet.BindingStateBound},
		Status: fleet.ResourceBindingStatus{Conditions: []metav1.Condition{{Type: fleet.ResourceBindingAvailable, Status: metav1.ConditionTrue, ObservedGeneration: 1}}}}
	zero := intstr.FromInt32(0)
	if _, n := Allowed([]*fleet.Binding{b}, &fleet.Placement{}, &fleet.ClusterResourcePlacementDisruptionBudget{Spec: fleet.PlacementDisruptionBudgetSpec{MinAvailable: &zero}}); n != 0 {
		t.Errorf("available = %d, want 0", n)
	}
}

// TestBindingFailedIgnoresNotYetReasons: upstream's HasBindingFailed.
func TestBindingFailedIgnoresNotYetReasons(t *testing.T) {
	for _, tc := range []struct {
		name string
		cond metav1.Condition
		want bool
	}{
		{"applied false, failed", metav1.Condition{Type: fleet.ResourceBindingApplied, Status: metav1.ConditionFalse, Reason: "ManifestApplyFailed"}, true},
		{"available false, not yet", metav1.Condition{Type: fleet.ResourceBindingAvailable, Status: metav1.ConditionFalse, Reason: fleet.ResourceNotAvailableYetReason}, false},
		{"work not synchronized yet", metav1.Condition{Type: fleet.ResourceBindingWorkSynchronized, Status: metav1.ConditionFalse, Reason: fleet.WorkNotSynchronizedYetReason}, false},
		{"applied false of an older generation", metav1.Condition{Type: fleet.ResourceBindingApplied, Status: metav1.ConditionFalse, Reason: "ManifestApplyFailed", ObservedGeneration: 1}, false},
		{"rollout started false is not a failure", metav1.Condition{Type: fleet.ResourceBindingRolloutStarted, Status: metav1.ConditionFalse, Reason: "x"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &fleet.Binding{Status: fleet.ResourceBindingStatus{Conditions: []metav1.Condition{tc.cond}}}
			if got := BindingFailed(b); got != tc.want {
				t.Errorf("BindingFailed = %v, want %v", got, tc.want)
			}
		})
	}
}
