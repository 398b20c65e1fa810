package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// Work is what one member cluster receives of one binding (one part of
// its resource snapshot, or one envelope): the hub writes it into the
// member's namespace fleet-member-<cluster>, and whatever reaches the
// member applies it and reports back in its status.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,categories={fleet,fleet-placement}
// +kubebuilder:subresource:status
type Work struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec   fleet.WorkSpec   `json:"spec,omitempty"`
	Status fleet.WorkStatus `json:"status,omitempty"`
}
