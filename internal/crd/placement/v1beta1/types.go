// Package v1beta1 declares one root type per kind of the
// placement.kubernetes-fleet.io/v1beta1 API, for controller-gen to write the
// CustomResourceDefinitions in config/crd from. gitfleet's own code never
// uses these types: api/v1beta1 serves both kinds of a cluster/namespaced
// pair with one Go type, and controller-gen makes one CRD per Go type.
//
// Each root type's spec and status ARE api/v1beta1's types, so the schemas
// follow gitfleet's API; only the per-kind facts live here: scope, short
// names, categories, printer columns, the status subresource (all as in
// KubeFleet's CRDs) and the CEL rules that refuse what gitfleet's admission
// refuses beyond KubeFleet's CRDs: a transition KubeFleet's webhook
// refuses, and the values of fields gitfleet does not act on
// (api/v1beta1/unsupported.go), with a fieldPath so the refusal names the
// field. Markers KubeFleet puts on its root types' spec (CEL rules that
// differ between kinds) sit on the Spec fields here, as upstream's. Where
// KubeFleet puts a marker on a field of a spec or status type, gitfleet puts
// it on the same field in api/v1beta1; only what KubeFleet puts on its root
// types is here (updaterun.go and override.go hold the staged-update and
// override kinds).
//
// Kinds KubeFleet also serves at v1 or v1alpha1 have root types in ../v1
// and ../v1alpha1 too (the staged-update and override kinds at both);
// v1beta1 is stored.
//
// Regenerate with `make crds`; internal/crd's tests fail when config/crd is
// stale.
//
// +groupName=placement.kubernetes-fleet.io
// +kubebuilder:object:generate=false
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// ---- placements ----

// ClusterResourcePlacement selects cluster-scoped resources (and whole
// namespaces) of the hub and places them on member clusters.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
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
// +kubebuilder:storageversion
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

// ---- scheduling policy snapshots ----

// ClusterSchedulingPolicySnapshot is one immutable version of a
// ClusterResourcePlacement's policy and the scheduler's decisions for it.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
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

// SchedulingPolicySnapshot is one immutable version of a ResourcePlacement's
// policy and the scheduler's decisions for it.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:scope=Namespaced,shortName=sps,categories={fleet,fleet-placement}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:JSONPath=`.metadata.generation`,name="Gen",type=string
// +kubebuilder:printcolumn:JSONPath=`.metadata.creationTimestamp`,name="Age",type=date
type SchedulingPolicySnapshot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   fleet.SchedulingPolicySnapshotSpec   `json:"spec"`
	Status fleet.SchedulingPolicySnapshotStatus `json:"status,omitempty"`
}

// ---- resource snapshots ----
//
// KubeFleet's resource snapshots have a status subresource with
// conditions; nothing in gitfleet writes them, but the schema is
// KubeFleet's (api/v1beta1's ResourceSnapshotStatus).

// ResourceSnapshotSpec is api/v1beta1's ResourceSnapshotSpec with
// KubeFleet's schema for each selected resource: an embedded object (its
// apiVersion, kind and metadata checked) whose other fields are kept.
// api/v1beta1 keeps plain RawExtensions, which controller-gen cannot mark
// one by one; the JSON is the same.
type ResourceSnapshotSpec struct {
	SelectedResources []ResourceContent `json:"selectedResources"`
}

// ResourceContent is one selected resource.
type ResourceContent struct {
	// +kubebuilder:validation:EmbeddedResource
	// +kubebuilder:pruning:PreserveUnknownFields
	runtime.RawExtension `json:"-,inline"`
}

// ClusterResourceSnapshot is one immutable version of the resources a
// ClusterResourcePlacement selected.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:scope=Cluster,shortName=crs,categories={fleet,fleet-placement}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:JSONPath=`.metadata.generation`,name="Gen",type=string
// +kubebuilder:printcolumn:JSONPath=`.metadata.creationTimestamp`,name="Age",type=date
type ClusterResourceSnapshot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ResourceSnapshotSpec         `json:"spec"`
	Status fleet.ResourceSnapshotStatus `json:"status,omitempty"`
}

// ResourceSnapshot is one immutable version of the resources a
// ResourcePlacement selected.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:scope=Namespaced,shortName=rs,categories={fleet,fleet-placement}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:JSONPath=`.metadata.generation`,name="Gen",type=string
// +kubebuilder:printcolumn:JSONPath=`.metadata.creationTimestamp`,name="Age",type=date
type ResourceSnapshot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ResourceSnapshotSpec         `json:"spec"`
	Status fleet.ResourceSnapshotStatus `json:"status,omitempty"`
}

// ---- bindings ----

// ClusterResourceBinding binds a ClusterResourcePlacement's resources to
// one member cluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
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

// ResourceBinding binds a ResourcePlacement's resources to one member
// cluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:scope=Namespaced,shortName=rb,categories={fleet,fleet-placement}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="WorkSynchronized")].status`,name="WorkSynchronized",type=string
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="Applied")].status`,name="ResourcesApplied",type=string
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="Available")].status`,name="ResourceAvailable",priority=1,type=string
// +kubebuilder:printcolumn:JSONPath=`.metadata.creationTimestamp`,name="Age",type=date
type ResourceBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   fleet.ResourceBindingSpec   `json:"spec"`
	Status fleet.ResourceBindingStatus `json:"status,omitempty"`
}

// ---- envelopes ----
//
// An envelope's manifests sit at the top level (data), not in a spec, as
// in KubeFleet; the field and its markers are api/v1beta1's Envelope's.

// ClusterResourceEnvelope wraps cluster-scoped resources for placement.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope="Cluster",categories={fleet,fleet-placement}
type ClusterResourceEnvelope struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// The manifests wrapped in this envelope.
	//
	// Each manifest is uniquely identified by a string key, typically a filename that represents
	// the manifest. The value is the manifest object itself.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=50
	Data map[string]runtime.RawExtension `json:"data"`
}

// ResourceEnvelope wraps namespaced resources for placement.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope="Namespaced",categories={fleet,fleet-placement}
type ResourceEnvelope struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// The manifests wrapped in this envelope.
	//
	// Each manifest is uniquely identified by a string key, typically a filename that represents
	// the manifest. The value is the manifest object itself.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=50
	Data map[string]runtime.RawExtension `json:"data"`
}
