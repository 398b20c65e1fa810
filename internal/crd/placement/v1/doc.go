// Package v1 declares the root types of the placement.kubernetes-fleet.io/v1
// API KubeFleet serves beside v1beta1, for controller-gen to add v1 to the
// CustomResourceDefinitions in config/crd. v1beta1 is the storage version
// and both versions have one schema, so the API server converts between
// them without a webhook (conversion None), as KubeFleet's CRDs do.
//
// +groupName=placement.kubernetes-fleet.io
// +kubebuilder:object:generate=false
package v1
