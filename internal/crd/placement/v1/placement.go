package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	crdv1beta1 "github.com/gitfleet/gitfleet/internal/crd/placement/v1beta1"
)

// The kinds KubeFleet serves at v1 beside v1beta1 whose v1 schema gitfleet
// gives as v1beta1's (README, "Deliberate differences"): the root types
// are v1beta1's, word for word, but for the storage version marker;
// TestServedVersionsShareOneSchema holds them to it.

// ClusterResourcePlacement selects cluster-scoped resources (and whole
// namespaces) of the hub and places them on member clusters.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=crp,categories={fleet,fleet-placement}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:JSONPath=`.metadata.generation`,name="Gen",type=string
// +kubebuilder:printcolumn:JSONPath=`.spec.policy.placementType`,name="Type",priority=1,type=string
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="ClusterResourcePlacementScheduled")].status`,name="Scheduled",type=string
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="ClusterResourcePlacementScheduled")].observedGeneration`,name="Scheduled-Gen",type=string
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="ClusterResourcePlacementWorkSynchronized")].status`,name="Work-Synchronized",priority=1,type=string
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="ClusterResourcePlacementWorkSynchronized")].observedGeneration`,name="Work-Synchronized-Gen",priority=1,type=string
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="ClusterResourcePlacementAvailable")].status`,name="Available",type=string
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="ClusterResourcePlacementAvailable")].observedGeneration`,name="Available-Gen",type=string
// +kubebuilder:printcolumn:JSONPath=`.metadata.creationTimestamp`,name="Age",type=date
// +kubebuilder:validation:XValidation:rule=`has(oldSelf.spec.policy) || !has(self.spec.policy) || !has(self.spec.policy.placementType) || self.spec.policy.placementType == 'PickAll'`,message="placement type is immutable",fieldPath=`.spec.policy`
// +kubebuilder:validation:XValidation:rule=`!has(self.spec.statusReportingScope) || self.spec.statusReportingScope == 'ClusterScopeOnly'`,message="gitfleet does not support statusReportingScope NamespaceAccessible; only ClusterScopeOnly",fieldPath=`.spec.statusReportingScope`
// +kubebuilder:validation:XValidation:rule=`!has(self.spec.strategy) || !has(self.spec.strategy.deleteStrategy) || !has(self.spec.strategy.deleteStrategy.propagationPolicy) || self.spec.strategy.deleteStrategy.propagationPolicy == 'Delete'`,message="gitfleet does not support deleteStrategy.propagationPolicy Abandon; only Delete",fieldPath=`.spec.strategy.deleteStrategy.propagationPolicy`
// +kubebuilder:validation:XValidation:rule=`!has(self.spec.strategy) || !has(self.spec.strategy.reportBackStrategy) || self.spec.strategy.reportBackStrategy.type == 'Disabled'`,message="gitfleet does not support reportBackStrategy.type Mirror; only Disabled",fieldPath=`.spec.strategy.reportBackStrategy.type`
// +kubebuilder:validation:XValidation:rule=`!self.spec.resourceSelectors.exists(x, has(x.selectionScope) && x.selectionScope == 'NamespaceWithResourceSelectors')`,message="gitfleet does not support selectionScope NamespaceWithResourceSelectors; only NamespaceOnly and NamespaceWithResources",fieldPath=`.spec.resourceSelectors`
type ClusterResourcePlacement struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:validation:Required
	// +kubebuilder:validation:XValidation:rule="!(has(oldSelf.policy) && !has(self.policy))",message="policy cannot be removed once set"
	// +kubebuilder:validation:XValidation:rule="!(self.statusReportingScope == 'NamespaceAccessible' && size(self.resourceSelectors.filter(x, x.kind == 'Namespace')) != 1)",message="when statusReportingScope is NamespaceAccessible, exactly one resourceSelector with kind 'Namespace' is required"
	// +kubebuilder:validation:XValidation:rule="!has(oldSelf.statusReportingScope) || self.statusReportingScope == oldSelf.statusReportingScope",message="statusReportingScope is immutable"
	Spec   fleet.PlacementSpec   `json:"spec"`
	Status fleet.PlacementStatus `json:"status,omitempty"`
}

// ResourcePlacement selects resources of its own namespace and places them
// on member clusters.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=rp,categories={fleet,fleet-placement}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:JSONPath=`.metadata.generation`,name="Gen",type=string
// +kubebuilder:printcolumn:JSONPath=`.spec.policy.placementType`,name="Type",priority=1,type=string
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="ResourcePlacementScheduled")].status`,name="Scheduled",type=string
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="ResourcePlacementScheduled")].observedGeneration`,name="Scheduled-Gen",type=string
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="ResourcePlacementWorkSynchronized")].status`,name="Work-Synchronized",priority=1,type=string
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="ResourcePlacementWorkSynchronized")].observedGeneration`,name="Work-Synchronized-Gen",priority=1,type=string
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="ResourcePlacementAvailable")].status`,name="Available",type=string
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="ResourcePlacementAvailable")].observedGeneration`,name="Available-Gen",type=string
// +kubebuilder:printcolumn:JSONPath=`.metadata.creationTimestamp`,name="Age",type=date
// +kubebuilder:validation:XValidation:rule=`has(oldSelf.spec.policy) || !has(self.spec.policy) || !has(self.spec.policy.placementType) || self.spec.policy.placementType == 'PickAll'`,message="placement type is immutable",fieldPath=`.spec.policy`
// +kubebuilder:validation:XValidation:rule=`!has(self.spec.statusReportingScope) || self.spec.statusReportingScope == 'ClusterScopeOnly'`,message="gitfleet does not support statusReportingScope NamespaceAccessible; only ClusterScopeOnly",fieldPath=`.spec.statusReportingScope`
// +kubebuilder:validation:XValidation:rule=`!has(self.spec.strategy) || !has(self.spec.strategy.deleteStrategy) || !has(self.spec.strategy.deleteStrategy.propagationPolicy) || self.spec.strategy.deleteStrategy.propagationPolicy == 'Delete'`,message="gitfleet does not support deleteStrategy.propagationPolicy Abandon; only Delete",fieldPath=`.spec.strategy.deleteStrategy.propagationPolicy`
// +kubebuilder:validation:XValidation:rule=`!has(self.spec.strategy) || !has(self.spec.strategy.reportBackStrategy) || self.spec.strategy.reportBackStrategy.type == 'Disabled'`,message="gitfleet does not support reportBackStrategy.type Mirror; only Disabled",fieldPath=`.spec.strategy.reportBackStrategy.type`
// +kubebuilder:validation:XValidation:rule=`!self.spec.resourceSelectors.exists(x, has(x.selectionScope) && x.selectionScope == 'NamespaceWithResourceSelectors')`,message="gitfleet does not support selectionScope NamespaceWithResourceSelectors; only NamespaceOnly and NamespaceWithResources",fieldPath=`.spec.resourceSelectors`
type ResourcePlacement struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:validation:Required
	// +kubebuilder:validation:XValidation:rule="!(has(oldSelf.policy) && !has(self.policy))",message="policy cannot be removed once set"
	Spec   fleet.PlacementSpec   `json:"spec"`
	Status fleet.PlacementStatus `json:"status,omitempty"`
}

// ClusterSchedulingPolicySnapshot is one immutable version of a
// ClusterResourcePlacement's policy and the scheduler's decisions for it.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=csps,categories={fleet,fleet-placement}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:JSONPath=`.metadata.generation`,name="Gen",type=string
// +kubebuilder:printcolumn:JSONPath=`.metadata.creationTimestamp`,name="Age",type=date
type ClusterSchedulingPolicySnapshot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   fleet.SchedulingPolicySnapshotSpec   `json:"spec"`
	Status fleet.SchedulingPolicySnapshotStatus `json:"status,omitempty"`
}

// ClusterResourceSnapshot is one immutable version of the resources a
// ClusterResourcePlacement selected.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=crs,categories={fleet,fleet-placement}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:JSONPath=`.metadata.generation`,name="Gen",type=string
// +kubebuilder:printcolumn:JSONPath=`.metadata.creationTimestamp`,name="Age",type=date
type ClusterResourceSnapshot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   crdv1beta1.ResourceSnapshotSpec `json:"spec"`
	Status fleet.ResourceSnapshotStatus    `json:"status,omitempty"`
}

// ClusterResourceBinding binds a ClusterResourcePlacement's resources to
// one member cluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=crb,categories={fleet,fleet-placement}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="WorkSynchronized")].status`,name="WorkSynchronized",type=string
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="Applied")].status`,name="ResourcesApplied",type=string
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="Available")].status`,name="ResourceAvailable",priority=1,type=string
// +kubebuilder:printcolumn:JSONPath=`.metadata.creationTimestamp`,name="Age",type=date
type ClusterResourceBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   fleet.ResourceBindingSpec   `json:"spec"`
	Status fleet.ResourceBindingStatus `json:"status,omitempty"`
}
