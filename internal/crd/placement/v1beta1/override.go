package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// The override kinds and their snapshots. Their validation is in
// api/v1beta1's markers, as KubeFleet's is on its spec types, but for
// KubeFleet's rule that spec.placement is immutable, which gitfleet leaves
// out (README, deliberate difference 11): gitfleet takes a changed
// placement, runs freeze override snapshots, not overrides, and the CRD
// must not refuse what Git is allowed to say.

// ClusterResourceOverride overrides cluster-scoped resources, and through a
// selected Namespace everything in it, on the member clusters its rules
// select.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:scope=Cluster,categories={fleet,fleet-placement}
// +kubebuilder:validation:XValidation:rule="!has(self.spec.placement) || self.spec.placement.scope != 'Namespaced'",message="clusterResourceOverride placement reference cannot be Namespaced scope"
type ClusterResourceOverride struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec fleet.ClusterResourceOverrideSpec `json:"spec"`
}

// ResourceOverride overrides namespaced resources of its own namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:scope=Namespaced,categories={fleet,fleet-placement}
type ResourceOverride struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec fleet.ResourceOverrideSpec `json:"spec"`
}

// ClusterResourceOverrideSnapshot is one immutable version of a
// ClusterResourceOverride, as runs freeze it per cluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:scope=Cluster,categories={fleet,fleet-placement}
type ClusterResourceOverrideSnapshot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec fleet.ClusterResourceOverrideSnapshotSpec `json:"spec"`
}

// ResourceOverrideSnapshot is one immutable version of a ResourceOverride,
// as runs freeze it per cluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:scope=Namespaced,categories={fleet,fleet-placement}
type ResourceOverrideSnapshot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec fleet.ResourceOverrideSnapshotSpec `json:"spec"`
}
