package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PatchDetail is one field where a member's object and its hub manifest
// differ, as a JSON pointer and the value on each side (KubeFleet's
// PatchDetail). A value is empty when the field is absent on that side.
type PatchDetail struct {
	// +kubebuilder:validation:Required
	Path string `json:"path"`
	// +kubebuilder:validation:Optional
	ValueInMember string `json:"valueInMember,omitempty"`
	// +kubebuilder:validation:Optional
	ValueInHub string `json:"valueInHub,omitempty"`
}

// DriftedResourcePlacement is a placed resource changed on the member
// since it was applied, as the drift check found it.
type DriftedResourcePlacement struct {
	ResourceIdentifier `json:",inline"`
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	ObservationTime metav1.Time `json:"observationTime"`
	// +kubebuilder:validation:Required
	TargetClusterObservedGeneration int64 `json:"targetClusterObservedGeneration"`
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	FirstDriftedObservedTime metav1.Time `json:"firstDriftedObservedTime"`
	// +kubebuilder:validation:Optional
	ObservedDrifts []PatchDetail `json:"observedDrifts,omitempty"`
}

// Unlike KubeFleet's Go type, targetClusterObservedGeneration is
// omitempty: an API server drops its null anyway (it is not nullable), so
// the embedded hub's YAML shows what kubectl shows.

// DiffedResourcePlacement is a resource whose member object differs from
// its hub manifest: reported by the ReportDiff apply strategy, or for a
// pre-existing object whenToTakeOver: IfNoDiff refused to take over.
type DiffedResourcePlacement struct {
	ResourceIdentifier `json:",inline"`
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	ObservationTime metav1.Time `json:"observationTime"`
	// TargetClusterObservedGeneration is nil when the member does not have
	// the object yet.
	// +kubebuilder:validation:Optional
	TargetClusterObservedGeneration *int64 `json:"targetClusterObservedGeneration,omitempty"`
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	FirstDiffedObservedTime metav1.Time `json:"firstDiffedObservedTime"`
	// +kubebuilder:validation:Optional
	ObservedDiffs []PatchDetail `json:"observedDiffs,omitempty"`
}

// SameDriftedPlacements reports whether a and b hold the same entries
// (times compared as instants).
func SameDriftedPlacements(a, b []DriftedResourcePlacement) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if !sameIdentifier(x.ResourceIdentifier, y.ResourceIdentifier) ||
			!x.ObservationTime.Equal(&y.ObservationTime) || !x.FirstDriftedObservedTime.Equal(&y.FirstDriftedObservedTime) ||
			x.TargetClusterObservedGeneration != y.TargetClusterObservedGeneration ||
			!sameList(x.ObservedDrifts, y.ObservedDrifts) {
			return false
		}
	}
	return true
}

// SameDiffedPlacements reports whether a and b hold the same entries
// (times compared as instants).
func SameDiffedPlacements(a, b []DiffedResourcePlacement) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		gx, gy := x.TargetClusterObservedGeneration, y.TargetClusterObservedGeneration
		if !sameIdentifier(x.ResourceIdentifier, y.ResourceIdentifier) ||
			!x.ObservationTime.Equal(&y.ObservationTime) || !x.FirstDiffedObservedTime.Equal(&y.FirstDiffedObservedTime) ||
			(gx == nil) != (gy == nil) || gx != nil && *gx != *gy ||
			!sameList(x.ObservedDiffs, y.ObservedDiffs) {
			return false
		}
	}
	return true
}

func sameIdentifier(a, b ResourceIdentifier) bool {
	ea, eb := a.Envelope, b.Envelope
	a.Envelope, b.Envelope = nil, nil
	return a == b && (ea == nil) == (eb == nil) && (ea == nil || *ea == *eb)
}

// SimDriftAnnotation on a simulated MemberCluster is an edit someone makes
// on the member after every apply, so the embedded hub and `gitfleet
// simulate` can show drift detection: "<kind>/<namespace>/<name>:<JSON
// pointer>=<value>" (namespace empty for cluster-scoped objects), several
// separated by ";", the value set as a string. Example:
// "ConfigMap/app/settings:/data/color=red".
const SimDriftAnnotation = GitfleetPrefix + "sim-drift"
