package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// ---- evictions and disruption budgets ----
//
// Both are also served at v1alpha1 with the same schema
// (internal/crd/placement/v1alpha1); v1beta1 is stored, as upstream.

// ClusterResourcePlacementEviction removes a placement's resources from one
// member cluster, once, as the placement's disruption budget allows.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories={fleet,fleet-placement},shortName=crpe
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="Valid")].status`,name="Valid",type=string
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="Executed")].status`,name="Executed",type=string
type ClusterResourcePlacementEviction struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec fleet.PlacementEvictionSpec `json:"spec"`
	// +optional
	Status fleet.PlacementEvictionStatus `json:"status,omitempty"`
}

// ClusterResourcePlacementDisruptionBudget bounds the voluntary disruptions
// (evictions) of the placement of the same name.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories={fleet,fleet-placement},shortName=crpdb
// +kubebuilder:storageversion
type ClusterResourcePlacementDisruptionBudget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:validation:XValidation:rule="!(has(self.maxUnavailable) && has(self.minAvailable))",message="Both MaxUnavailable and MinAvailable cannot be specified"
	// +required
	Spec fleet.PlacementDisruptionBudgetSpec `json:"spec"`
}
