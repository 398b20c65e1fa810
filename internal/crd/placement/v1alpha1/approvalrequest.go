package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// KubeFleet's v1alpha1 ClusterApprovalRequest is its v1beta1 one;
// ApprovalRequest has no v1alpha1.

// ClusterApprovalRequest gates a stage of a ClusterStagedUpdateRun until a
// person sets its Approved condition.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=careq,categories={fleet,fleet-placement}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:JSONPath=`.spec.parentStageRollout`,name="Update-Run",type=string
// +kubebuilder:printcolumn:JSONPath=`.spec.targetStage`,name="Stage",type=string
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="Approved")].status`,name="Approved",type=string
// +kubebuilder:printcolumn:JSONPath=`.metadata.creationTimestamp`,name="Age",type=date
type ClusterApprovalRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="The spec field is immutable"
	// +kubebuilder:validation:Required
	Spec fleet.ApprovalRequestSpec `json:"spec"`
	// +kubebuilder:validation:Optional
	Status fleet.ApprovalRequestStatus `json:"status,omitempty"`
}
