package delivery

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// deliverable reports whether b is delivered as it is: Bound, and its
// rollout decided at its generation.
func deliverable(b *fleet.Binding) bool {
	return b.Spec.State == fleet.BindingStateBound && rolloutDecided(b)
}

// rolloutDecided reports whether the binding's RolloutStarted condition
// is True or False at the binding's generation, the test of KubeFleet's
// work generator before it writes a Bound binding's Works: a run binds
// (a spec write, the generation moves) and then marks RolloutStarted at
// the new generation (a status write); delivering in between would race
// the member's report (a status write of the same binding) against the
// run's, one of them a Conflict retried. gitfleet's engine writes only
// True; False, which KubeFleet's rollout controller writes for a binding
// it holds back on its current spec, delivers that spec as upstream does.
func rolloutDecided(b *fleet.Binding) bool {
	c := meta.FindStatusCondition(b.Status.Conditions, fleet.ResourceBindingRolloutStarted)
	return c != nil && c.ObservedGeneration == b.Generation &&
		(c.Status == metav1.ConditionTrue || c.Status == metav1.ConditionFalse)
}
