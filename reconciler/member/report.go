package member

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// deliveryConditionTypes are the binding conditions the delivery layer
// owns; RolloutStarted belongs to the run.
var deliveryConditionTypes = []string{
	fleet.ResourceBindingOverridden, fleet.ResourceBindingWorkSynchronized, fleet.ResourceBindingApplied,
	fleet.ResourceBindingAvailable, fleet.ResourceBindingDiffReported, fleet.ResourceBindingPruneSkipped,
}

// MergeReport is what a Reporter writes: the binding's status with the
// reported conditions replacing its delivery conditions (a type not
// reported is dropped, as KubeFleet drops Available when Applied is not
// True) and p replacing its failed, drifted and diffed placements.
// Transition times are now, kept when a condition's status does not
// change; a drift or diff seen before keeps its first observed time, and
// its observation time too while what is observed does not change (so a
// periodic check that finds the same drift writes nothing). It returns nil when
// the report is for another generation or changes nothing, so every hub
// ignores the same reports. The binding returned shares cur's metadata and
// spec (it is for a status write: neither may be modified); its status is
// its own, for the writer to hand over.
func MergeReport(cur *fleet.Binding, generation int64, conds []metav1.Condition, p Placements, now time.Time) *fleet.Binding {
	if cur.Generation != generation {
		return nil
	}
	at := metav1.NewTime(now.UTC().Truncate(time.Second))
	// A status write: next shares cur's metadata and spec, which nobody
	// modifies, and has a status of its own, built afresh (its placements
	// below; its conditions copied, with room for the new types), which a
	// hub may keep as it is (hub.HandOverBindingStatus).
	next := &fleet.Binding{TypeMeta: cur.TypeMeta, ObjectMeta: cur.ObjectMeta, Spec: cur.Spec}
	added := 0
	for _, c := range conds {
		if meta.FindStatusCondition(cur.Status.Conditions, c.Type) == nil {
			added++
		}
	}
	next.Status.Conditions = append(make([]metav1.Condition, 0, len(cur.Status.Conditions)+added), cur.Status.Conditions...)
	for _, c := range conds {
		c.LastTransitionTime = at
		meta.SetStatusCondition(&next.Status.Conditions, c)
	}
	for _, t := range deliveryConditionTypes {
		if !slices.ContainsFunc(conds, func(c metav1.Condition) bool { return c.Type == t }) {
			meta.RemoveStatusCondition(&next.Status.Conditions, t)
		}
	}
	p = capped(p)
	for _, f := range p.Failed {
		f.Condition.LastTransitionTime = at
		for _, was := range cur.Status.FailedPlacements {
			if equality.Semantic.DeepEqual(was.ResourceIdentifier, f.ResourceIdentifier) && was.Condition.Status == f.Condition.Status {
				f.Condition.LastTransitionTime = was.Condition.LastTransitionTime
			}
		}
		next.Status.FailedPlacements = append(next.Status.FailedPlacements, f)
	}
	for _, d := range p.Drifted {
		d.ObservationTime, d.FirstDriftedObservedTime = at, at
		for _, was := range cur.Status.DriftedPlacements {
			if equality.Semantic.DeepEqual(was.ResourceIdentifier, d.ResourceIdentifier) {
				d.FirstDriftedObservedTime = was.FirstDriftedObservedTime
				if was.TargetClusterObservedGeneration == d.TargetClusterObservedGeneration &&
					equality.Semantic.DeepEqual(was.ObservedDrifts, d.ObservedDrifts) {
					d.ObservationTime = was.ObservationTime
				}
			}
		}
		next.Status.DriftedPlacements = append(next.Status.DriftedPlacements, d)
	}
	for _, d := range p.Diffed {
		d.ObservationTime, d.FirstDiffedObservedTime = at, at
		for _, was := range cur.Status.DiffedPlacements {
			if equality.Semantic.DeepEqual(was.ResourceIdentifier, d.ResourceIdentifier) {
				d.FirstDiffedObservedTime = was.FirstDiffedObservedTime
				if equality.Semantic.DeepEqual(was.TargetClusterObservedGeneration, d.TargetClusterObservedGeneration) &&
					equality.Semantic.DeepEqual(was.ObservedDiffs, d.ObservedDiffs) {
					d.ObservationTime = was.ObservationTime
				}
			}
		}
		next.Status.DiffedPlacements = append(next.Status.DiffedPlacements, d)
	}
	if equality.Semantic.DeepEqual(cur.Status, next.Status) {
		return nil
	}
	return next
}
