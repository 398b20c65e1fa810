package v1beta1

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The per-cluster lists of a run and of a placement are nearly all of a
// large fleet's state (10,000 entries each), and both the hub and the
// status tree ask after every pass whether they changed. reflect.DeepEqual
// walks them field by field through reflection; these comparisons do the
// same with ==, about ten times cheaper.
//
// They are as strict as reflect.DeepEqual or stricter, never looser: a nil
// list differs from an empty one (the two encode differently when the field
// is not omitempty), and times and pointers compare with == (two times in
// distinct but equal locations differ). A "differs" that DeepEqual would
// not say costs a caller a needless write, which its own byte comparison
// then drops; an "equal" that DeepEqual would not say would lose a change,
// which is why the lists below are checked against the types' fields when
// this package compiles.

// SameClusterUpdatingStatuses reports whether a and b hold the same entries.
func SameClusterUpdatingStatuses(a, b []ClusterUpdatingStatus) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.ClusterName != y.ClusterName ||
			!sameList(x.ResourceOverrideSnapshots, y.ResourceOverrideSnapshots) ||
			!sameList(x.ClusterResourceOverrideSnapshots, y.ClusterResourceOverrideSnapshots) ||
			!sameList(x.Conditions, y.Conditions) {
			return false
		}
	}
	return true
}

// SamePerClusterPlacementStatuses reports whether a and b hold the same
// entries.
func SamePerClusterPlacementStatuses(a, b []PerClusterPlacementStatus) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.ClusterName != y.ClusterName || x.ObservedResourceIndex != y.ObservedResourceIndex ||
			!sameList(x.ApplicableResourceOverrides, y.ApplicableResourceOverrides) ||
			!sameList(x.ApplicableClusterResourceOverrides, y.ApplicableClusterResourceOverrides) ||
			!sameList(x.FailedPlacements, y.FailedPlacements) ||
			!SameDriftedPlacements(x.DriftedPlacements, y.DriftedPlacements) ||
			!SameDiffedPlacements(x.DiffedPlacements, y.DiffedPlacements) ||
			!sameList(x.Conditions, y.Conditions) {
			return false
		}
	}
	return true
}

// sameList is slices.Equal that tells nil from empty.
func sameList[T comparable](a, b []T) bool {
	return (a == nil) == (b == nil) && slices.Equal(a, b)
}

// These conversions stop the build when a field is added to a type the
// comparisons above walk: the new field must be compared too. (The
// elements compared with == must stay comparable, which sameList's
// constraint checks.)
var (
	_ = struct {
		ClusterName                      string
		ResourceOverrideSnapshots        []NamespacedName
		ClusterResourceOverrideSnapshots []string
		Conditions                       []metav1.Condition
	}(ClusterUpdatingStatus{})
	_ = struct {
		ClusterName                        string
		ObservedResourceIndex              string
		ApplicableResourceOverrides        []NamespacedName
		ApplicableClusterResourceOverrides []string
		FailedPlacements                   []FailedResourcePlacement
		DriftedPlacements                  []DriftedResourcePlacement
		DiffedPlacements                   []DiffedResourcePlacement
		Conditions                         []metav1.Condition
	}(PerClusterPlacementStatus{})
)
