package hub

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// Reporter takes a member driver's report on a delivery. The hub
// implements it.
type Reporter interface {
	// ReportBindingStatus replaces the delivery conditions (Overridden,
	// WorkSynchronized, Applied, Available, DiffReported) and the failed,
	// drifted and diffed placements of the binding with conds and p
	// (reconciler/member's MergeReport). It is ignored when the binding's
	// generation is no longer generation, so a late report about an older
	// snapshot never counts.
	ReportBindingStatus(key Key, generation int64, conds []metav1.Condition, p ReportedPlacements) error
}

// ReportedPlacements are the per-resource details of a report: what
// failed, what drifted, what differs. Observation times are left to the
// hub, which keeps when each was first seen.
type ReportedPlacements struct {
	Failed  []fleet.FailedResourcePlacement
	Drifted []fleet.DriftedResourcePlacement
	Diffed  []fleet.DiffedResourcePlacement
}
