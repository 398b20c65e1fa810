package hubtest

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/delivery"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

// bindingsAreDeliveredAndRemoved: delivery (reconciler/delivery), written
// once against the hub seam, delivers a bound binding whose rollout
// started through the hub's storage alone: the binding is guarded by the work-cleanup finalizer,
// its snapshot lands on the (simulated) member, the member's report lands
// on the binding; deleted, its resources come off the member and the
// binding goes.
func (s *suite) bindingsAreDeliveredAndRemoved() {
	s.s.Apply(s.t, &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "member-1",
		Annotations: map[string]string{fleet.DriverAnnotation: fleet.DriverSimulated}}})
	s.must(s.h.CreateResourceSnapshot(s.ctx, s.resourceSnapshot("app", 0)))
	b := s.binding("app-member-1", "app", "member-1")
	b.Spec.State, b.Spec.ResourceSnapshotName = fleet.BindingStateBound, "app-0-snapshot"
	b.Status.Conditions = []metav1.Condition{RolloutStarted(1)}
	s.must(s.h.CreateBinding(s.ctx, b))

	c := delivery.New(delivery.Config{Hub: s.h})
	bindings, err := s.h.ListBindings(s.ctx, s.key("app"))
	s.must(err)
	c.Resync(bindings)
	s.must(c.Guard(s.ctx))
	s.must(c.Dispatch(s.ctx))

	sim, ok := c.Members().Simulated("member-1")
	if !ok || len(sim.Placed()) != 1 || len(sim.Placed()[0].Resources) != 1 {
		s.t.Fatalf("member-1 holds %+v, want the snapshot's ConfigMap", sim)
	}
	got, err := s.h.GetBinding(s.ctx, s.key(b.Name))
	s.must(err)
	if !slices.Contains(got.Finalizers, fleet.WorkFinalizer) {
		s.t.Errorf("the delivered binding's finalizers are %v, want %s", got.Finalizers, fleet.WorkFinalizer)
	}
	for _, want := range []struct{ typ, reason string }{
		{fleet.ResourceBindingWorkSynchronized, member.AllWorkSyncedReason},
		{fleet.ResourceBindingApplied, member.AllWorkAppliedReason},
		{fleet.ResourceBindingAvailable, member.AllWorkAvailableReason},
	} {
		if cond := meta.FindStatusCondition(got.Status.Conditions, want.typ); cond == nil || cond.Reason != want.reason ||
			cond.ObservedGeneration != got.Generation {
			s.t.Errorf("%s = %+v, want %s at generation %d", want.typ, cond, want.reason, got.Generation)
		}
	}

	s.must(s.h.DeleteBinding(s.ctx, s.key(b.Name)))
	terminating, err := s.h.GetBinding(s.ctx, s.key(b.Name))
	s.must(err)
	c.Observe(got, terminating)
	s.must(c.Dispatch(s.ctx))
	if placed := sim.Placed(); len(placed) != 0 {
		s.t.Errorf("member-1 still holds %+v after the binding's deletion", placed)
	}
	if _, err := s.h.GetBinding(s.ctx, s.key(b.Name)); !hub.IsNotFound(err) {
		s.t.Errorf("the removed binding reads back: %v, want NotFound", err)
	}
}
