// Package v1alpha1 declares the root types of gitfleet's own kinds in
// gitfleet.io/v1alpha1 that a Kubernetes hub stores on its API server, for
// controller-gen to write their CRDs into config/crd. The group is
// gitfleet's, not KubeFleet's: TestCRDsMatchKubeFleet leaves it out.
//
// +groupName=gitfleet.io
// +kubebuilder:object:generate=false
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// RolloutWindow is when updates may start: weekly windows in a time zone,
// less freezes. Stages and member clusters name them.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories={fleet,gitfleet},shortName=rw
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:JSONPath=`.spec.timeZone`,name="Time-Zone",type=string
// +kubebuilder:printcolumn:JSONPath=`.metadata.generation`,name="Gen",type=string
// +kubebuilder:printcolumn:JSONPath=`.metadata.creationTimestamp`,name="Age",type=date
type RolloutWindow struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec fleet.RolloutWindowSpec `json:"spec"`
}
