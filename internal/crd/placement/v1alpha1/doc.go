// Package v1alpha1 declares the root types of the
// placement.kubernetes-fleet.io/v1alpha1 kinds, for controller-gen to add
// v1alpha1 to the CRDs in config/crd, as KubeFleet still serves it beside
// v1beta1 (stored) without a conversion webhook: the API server only
// rewrites apiVersion, so an object written at one version is read at the
// other as it is. See internal/crd/placement/v1beta1 for why these types
// exist apart from api/v1beta1.
//
// Where KubeFleet's v1alpha1 schema is its v1beta1 one (evictions and
// disruption budgets; approval requests; overrides and their snapshots, but
// for the rule that spec.placement is immutable, which gitfleet leaves out
// at every version, README deliberate difference 11), the root types carry
// api/v1beta1's spec and status. The staged update runs and strategies
// differ (no state, no before-stage tasks or maxConcurrency, a whole
// immutable spec, 127-character run names), so their spec and status are
// the v1alpha1 types of stagedupdate.go, which only controller-gen reads.
//
// +groupName=placement.kubernetes-fleet.io
// +kubebuilder:object:generate=false
package v1alpha1
