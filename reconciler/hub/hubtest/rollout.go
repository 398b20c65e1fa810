package hubtest

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

// Deliverer is a hub that delivers: its own delivery controller
// (reconciler/delivery) hears of the hub's binding writes, and Commit runs
// it.
type Deliverer interface {
	hub.Hub
	Commit(ctx context.Context) error
	Members() *member.Drivers
}

// RolloutStarted is the condition a run writes on a binding it starts, at
// the binding's generation gen (after its bind): delivery waits for it.
// Tests that bind without a run write it as the run would.
func RolloutStarted(gen int64) metav1.Condition {
	return metav1.Condition{Type: fleet.ResourceBindingRolloutStarted, Status: metav1.ConditionTrue, ObservedGeneration: gen,
		Reason: fleet.RolloutStartedReason, Message: "started by the test",
		LastTransitionTime: metav1.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// deliveryWaitsForTheRolloutToStart: a hub delivers a Bound binding only
// once its RolloutStarted condition is True at the binding's generation,
// as KubeFleet's work generator does, so the member's report never races
// the run's RolloutStarted write; that write, which follows the bind,
// wakes the delivery (Commit, no poll). A binding deleted before its
// rollout started has what it delivered removed all the same.
func (s *suite) deliveryWaitsForTheRolloutToStart() {
	if s.s.Delivering == nil {
		s.t.Skip("the subject's hub does not deliver")
	}
	d := s.s.Delivering(s.t)
	h, ok := d.Hub.(Deliverer)
	if !ok {
		s.t.Fatalf("the delivering hub %T does not deliver", d.Hub)
	}
	d.Apply(s.t, &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "member-1",
		Annotations: map[string]string{fleet.DriverAnnotation: fleet.DriverSimulated}}})
	await.Until(s.t, "the member cluster to be read", func() bool {
		ms, err := h.ListMemberClusters(s.ctx)
		return err == nil && len(ms) == 1
	})
	s.must(h.CreateResourceSnapshot(s.ctx, s.resourceSnapshot("app", 0)))
	s.must(h.CreateResourceSnapshot(s.ctx, s.resourceSnapshot("app", 1)))
	key := s.key("app-member-1")
	s.must(h.CreateBinding(s.ctx, s.binding(key.Name, "app", "member-1")))

	get := func() *fleet.Binding {
		s.t.Helper()
		b, err := h.GetBinding(s.ctx, key)
		s.must(err)
		return b
	}
	placed := func() []member.Placed {
		if sim, ok := h.Members().Simulated("member-1"); ok {
			return sim.Placed()
		}
		return nil
	}
	// bind and start do what a run does to a cluster, one write each.
	bind := func(snapshot string) *fleet.Binding {
		s.t.Helper()
		b := get()
		b.Spec.State, b.Spec.ResourceSnapshotName = fleet.BindingStateBound, snapshot
		s.must(h.UpdateBinding(s.ctx, b))
		s.must(h.Commit(s.ctx))
		return get()
	}
	start := func(b *fleet.Binding) {
		s.t.Helper()
		meta.RemoveStatusCondition(&b.Status.Conditions, fleet.ResourceBindingRolloutStarted)
		b.Status.Conditions = append(b.Status.Conditions, RolloutStarted(b.Generation))
		s.must(h.UpdateBindingStatus(s.ctx, b))
		s.must(h.Commit(s.ctx))
	}
	holds := func(snapshot string, gen int64) {
		s.t.Helper()
		got := placed()
		if len(got) != 1 || got[0].ResourceSnapshot != snapshot || got[0].Generation != gen {
			s.t.Fatalf("member-1 holds %+v, want %s at generation %d", got, snapshot, gen)
		}
	}

	b := bind("app-0-snapshot")
	if got := placed(); len(got) != 0 {
		s.t.Fatalf("member-1 holds %+v before the rollout started", got)
	}
	if c := meta.FindStatusCondition(get().Status.Conditions, fleet.ResourceBindingWorkSynchronized); c != nil {
		s.t.Fatalf("the binding has a report before its rollout started: %+v", c)
	}

	start(b)
	holds("app-0-snapshot", b.Generation)
	await.Until(s.t, "the member's report at the binding's generation", func() bool {
		cur := get()
		c := meta.FindStatusCondition(cur.Status.Conditions, fleet.ResourceBindingAvailable)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == cur.Generation
	})

	// A new generation (another run's bind) with RolloutStarted still at
	// the old one: the member keeps what it holds until the rollout starts.
	b = bind("app-1-snapshot")
	holds("app-0-snapshot", b.Generation-1)
	start(b)
	holds("app-1-snapshot", b.Generation)

	// Deleted before the rollout of its new generation started.
	bind("app-0-snapshot")
	s.must(h.DeleteBinding(s.ctx, key))
	s.must(h.Commit(s.ctx))
	if got := placed(); len(got) != 0 {
		s.t.Errorf("member-1 holds %+v after its binding's deletion", got)
	}
	await.Until(s.t, "the removed binding to go", func() bool {
		_, err := h.GetBinding(s.ctx, key)
		return hub.IsNotFound(err)
	})
}
