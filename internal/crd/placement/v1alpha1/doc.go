// Package v1alpha1 declares the root types of the kinds KubeFleet also
// serves at placement.kubernetes-fleet.io/v1alpha1, for controller-gen; see
// internal/crd/placement/v1beta1 for why these types exist apart from
// api/v1beta1. Their schemas are v1beta1's (the same Go types), so the API
// server converts between the versions without a webhook; v1beta1 is the
// storage version.
//
// +groupName=placement.kubernetes-fleet.io
// +kubebuilder:object:generate=false
package v1alpha1
