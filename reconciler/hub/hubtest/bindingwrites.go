package hubtest

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// finalizerIsAddedOnce: hub.AddBindingFinalizer (delivery's guard) adds a
// finalizer and nothing else, once; a terminating binding gets none; what
// a reader held before keeps its version.
func (s *suite) finalizerIsAddedOnce() {
	const f = "test.gitfleet.io/guard"
	b := s.binding("b1", "app", "member-1")
	b.Finalizers = []string{"test.gitfleet.io/other"}
	s.must(s.h.CreateBinding(s.ctx, b))
	b = s.getBinding("b1")
	b.Status.Conditions = []metav1.Condition{condition(fleet.ResourceBindingApplied, 1)}
	s.must(s.h.UpdateBindingStatus(s.ctx, b))
	before, err := hub.GetBindingReadOnly(s.ctx, s.h, s.key("b1"))
	s.must(err)

	got, err := hub.AddBindingFinalizer(s.ctx, s.h, s.key("b1"), f)
	s.must(err)
	stored := s.getBinding("b1")
	for what, b := range map[string]*fleet.Binding{"returned": got, "stored": stored} {
		if !slices.Equal(b.Finalizers, []string{"test.gitfleet.io/other", f}) || b.Generation != 1 ||
			len(b.Status.Conditions) != 1 || b.Spec.TargetCluster != "member-1" || b.ResourceVersion == before.ResourceVersion {
			s.t.Errorf("%s binding after AddBindingFinalizer: finalizers %v, generation %d, %d conditions, cluster %q, resourceVersion %s (was %s); "+
				"want the finalizer added and nothing else changed", what, b.Finalizers, b.Generation, len(b.Status.Conditions),
				b.Spec.TargetCluster, b.ResourceVersion, before.ResourceVersion)
		}
	}
	if slices.Contains(before.Finalizers, f) {
		s.t.Errorf("the binding read before AddBindingFinalizer changed under its reader: finalizers %v", before.Finalizers)
	}

	again, err := hub.AddBindingFinalizer(s.ctx, s.h, s.key("b1"), f)
	s.must(err)
	if again.ResourceVersion != stored.ResourceVersion || len(again.Finalizers) != 2 {
		s.t.Errorf("a second AddBindingFinalizer wrote: resourceVersion %s → %s, finalizers %v; want no write",
			stored.ResourceVersion, again.ResourceVersion, again.Finalizers)
	}

	s.must(s.h.CreateBinding(s.ctx, s.binding("b2", "app", "member-2")))
	held := s.getBinding("b2")
	held.Finalizers = []string{"test.gitfleet.io/other"}
	s.must(s.h.UpdateBinding(s.ctx, held))
	s.must(s.h.DeleteBinding(s.ctx, s.key("b2")))
	if _, err := hub.AddBindingFinalizer(s.ctx, s.h, s.key("b2"), f); err != nil {
		s.t.Errorf("AddBindingFinalizer on a terminating binding: %v; want nil (nothing to add)", err)
	}
	if got := s.getBinding("b2"); slices.Contains(got.Finalizers, f) {
		s.t.Errorf("a terminating binding was given a finalizer: %v", got.Finalizers)
	}
	if _, err := hub.AddBindingFinalizer(s.ctx, s.h, s.key("none"), f); !hub.IsNotFound(err) {
		s.t.Errorf("AddBindingFinalizer on a missing binding: %v; want NotFound", err)
	}
}

// handedOverStatusIsAStatusWrite: hub.HandOverBindingStatus (delivery's
// member reports) writes as UpdateBindingStatus does: the status alone,
// the caller's resourceVersion moved, a stale one a Conflict; the stored
// binding's later versions keep it.
func (s *suite) handedOverStatusIsAStatusWrite() {
	s.must(s.h.CreateBinding(s.ctx, s.binding("b1", "app", "member-1")))
	stale := s.getBinding("b1")
	b := s.getBinding("b1")
	b.Spec.State = fleet.BindingStateBound
	b.Finalizers = []string{"test.gitfleet.io/other"}
	b.Status.Conditions = []metav1.Condition{condition(fleet.ResourceBindingApplied, 1)}
	s.must(hub.HandOverBindingStatus(s.ctx, s.h, b))
	got := s.getBinding("b1")
	if got.Spec.State != fleet.BindingStateScheduled || len(got.Finalizers) != 0 || len(got.Status.Conditions) != 1 ||
		got.ResourceVersion != b.ResourceVersion {
		s.t.Errorf("binding after HandOverBindingStatus: state %s, finalizers %v, %d conditions, resourceVersion %s (caller's %s); "+
			"want Scheduled, none, 1, the caller's", got.Spec.State, got.Finalizers, len(got.Status.Conditions), got.ResourceVersion, b.ResourceVersion)
	}

	stale.Status.Conditions = []metav1.Condition{condition(fleet.ResourceBindingAvailable, 1)}
	if err := hub.HandOverBindingStatus(s.ctx, s.h, stale); !hub.IsConflict(err) {
		s.t.Errorf("HandOverBindingStatus on a stale resourceVersion: %v; want Conflict", err)
	}

	got.Spec.State = fleet.BindingStateBound
	s.must(s.h.UpdateBinding(s.ctx, got))
	if after := s.getBinding("b1"); len(after.Status.Conditions) != 1 || after.Status.Conditions[0].Type != fleet.ResourceBindingApplied {
		s.t.Errorf("an object write after a handed-over status left conditions %+v; want the handed-over Applied", after.Status.Conditions)
	}
}
