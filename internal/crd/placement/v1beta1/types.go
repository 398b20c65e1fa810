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
// differ between kinds) sit on the Spec fields here, as upstream's.
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

// ---- overrides ----

// ClusterResourceOverride overrides cluster-scoped resources, and through a
// selected Namespace everything in it, on the member clusters its rules
// select. KubeFleet's rule that the placement is immutable is left out:
// gitfleet takes a changed placement (runs freeze override snapshots, not
// overrides), and the CRD must not refuse what Git is allowed to say. The
// scope rule allows a missing scope: KubeFleet's schema defaults it to
// Cluster, as gitfleet's decoder does; this CRD has no default, so the rule
// must not fail on an object written without it.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories={fleet,fleet-placement}
// +kubebuilder:validation:XValidation:rule="!has(self.spec.placement) || !has(self.spec.placement.scope) || self.spec.placement.scope != 'Namespaced'",message="clusterResourceOverride placement reference cannot be Namespaced scope",fieldPath=`.spec.placement.scope`
type ClusterResourceOverride struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec fleet.ClusterResourceOverrideSpec `json:"spec"`
}

// ResourceOverride overrides namespaced resources of its own namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,categories={fleet,fleet-placement}
type ResourceOverride struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec fleet.ResourceOverrideSpec `json:"spec"`
}

// ---- override snapshots ----

// ClusterResourceOverrideSnapshot is one immutable version of a
// ClusterResourceOverride, as runs freeze it per cluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories={fleet,fleet-placement}
type ClusterResourceOverrideSnapshot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec fleet.ClusterResourceOverrideSnapshotSpec `json:"spec"`
}

// ResourceOverrideSnapshot is one immutable version of a ResourceOverride,
// as runs freeze it per cluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,categories={fleet,fleet-placement}
type ResourceOverrideSnapshot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec fleet.ResourceOverrideSnapshotSpec `json:"spec"`
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

// ---- staged update strategies ----

// ClusterStagedUpdateStrategy groups member clusters into ordered stages
// for cluster staged update runs.
//
// KubeFleet declares a status subresource on this kind (not on
// StagedUpdateStrategy) though neither has a status; so does gitfleet.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=csus,categories={fleet,fleet-placement}
// +kubebuilder:subresource:status
type ClusterStagedUpdateStrategy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec fleet.UpdateStrategySpec `json:"spec"`
}

// StagedUpdateStrategy groups member clusters into ordered stages for the
// staged update runs of its namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=sus,categories={fleet,fleet-placement}
type StagedUpdateStrategy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec fleet.UpdateStrategySpec `json:"spec"`
}

// ---- staged update runs ----
//
// A run's placementName, resourceSnapshotIndex and
// stagedRolloutStrategyName never change, and its state moves only
// Initialize→Run⇄Stop (api/v1beta1.ValidateUpdateRunUpdate). An absent
// resourceSnapshotIndex counts as "" and an absent new state as
// Initialize, as there; an absent old state allows any state.

// ClusterStagedUpdateRun rolls a resource snapshot of a
// ClusterResourcePlacement out stage by stage.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=csur,categories={fleet,fleet-placement}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:JSONPath=`.spec.placementName`,name="Placement",type=string
// +kubebuilder:printcolumn:JSONPath=`.spec.resourceSnapshotIndex`,name="Resource-Snapshot-Index",type=string
// +kubebuilder:printcolumn:JSONPath=`.status.policySnapshotIndexUsed`,name="Policy-Snapshot-Index",type=string
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="Initialized")].status`,name="Initialized",type=string
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="Progressing")].status`,name="Progressing",type=string
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="Succeeded")].status`,name="Succeeded",type=string
// +kubebuilder:printcolumn:JSONPath=`.metadata.creationTimestamp`,name="Age",type=date
// +kubebuilder:printcolumn:JSONPath=`.spec.stagedRolloutStrategyName`,name="Strategy",priority=1,type=string
// +kubebuilder:validation:XValidation:rule=`size(self.metadata.name) < 64`,message="metadata.name max length is 63"
// +kubebuilder:validation:XValidation:rule=`self.spec.placementName == oldSelf.spec.placementName`,message="placementName is immutable",fieldPath=`.spec.placementName`
// +kubebuilder:validation:XValidation:rule=`(has(self.spec.resourceSnapshotIndex) ? self.spec.resourceSnapshotIndex : "") == (has(oldSelf.spec.resourceSnapshotIndex) ? oldSelf.spec.resourceSnapshotIndex : "")`,message="resourceSnapshotIndex is immutable",fieldPath=`.spec.resourceSnapshotIndex`
// +kubebuilder:validation:XValidation:rule=`self.spec.stagedRolloutStrategyName == oldSelf.spec.stagedRolloutStrategyName`,message="stagedRolloutStrategyName is immutable",fieldPath=`.spec.stagedRolloutStrategyName`
// +kubebuilder:validation:XValidation:rule=`!has(self.spec.state) || self.spec.state in ['Initialize', 'Run', 'Stop']`,message="supported values: \"Initialize\", \"Run\", \"Stop\"",fieldPath=`.spec.state`
// +kubebuilder:validation:XValidation:rule=`!(has(oldSelf.spec.state) && oldSelf.spec.state == 'Initialize' && has(self.spec.state) && self.spec.state == 'Stop')`,message="invalid state transition: cannot transition from Initialize to Stop",fieldPath=`.spec.state`
// +kubebuilder:validation:XValidation:rule=`!(has(oldSelf.spec.state) && oldSelf.spec.state == 'Run' && (!has(self.spec.state) || self.spec.state == 'Initialize'))`,message="invalid state transition: cannot transition from Run to Initialize",fieldPath=`.spec.state`
// +kubebuilder:validation:XValidation:rule=`!(has(oldSelf.spec.state) && oldSelf.spec.state == 'Stop' && (!has(self.spec.state) || self.spec.state == 'Initialize'))`,message="invalid state transition: cannot transition from Stop to Initialize",fieldPath=`.spec.state`
type ClusterStagedUpdateRun struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   fleet.UpdateRunSpec   `json:"spec"`
	Status fleet.UpdateRunStatus `json:"status,omitempty"`
}

// StagedUpdateRun rolls a resource snapshot of a ResourcePlacement out
// stage by stage.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=sur,categories={fleet,fleet-placement}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:JSONPath=`.spec.placementName`,name="Placement",type=string
// +kubebuilder:printcolumn:JSONPath=`.spec.resourceSnapshotIndex`,name="Resource-Snapshot-Index",type=string
// +kubebuilder:printcolumn:JSONPath=`.status.policySnapshotIndexUsed`,name="Policy-Snapshot-Index",type=string
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="Initialized")].status`,name="Initialized",type=string
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="Progressing")].status`,name="Progressing",type=string
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="Succeeded")].status`,name="Succeeded",type=string
// +kubebuilder:printcolumn:JSONPath=`.metadata.creationTimestamp`,name="Age",type=date
// +kubebuilder:printcolumn:JSONPath=`.spec.stagedRolloutStrategyName`,name="Strategy",priority=1,type=string
// +kubebuilder:validation:XValidation:rule=`size(self.metadata.name) < 64`,message="metadata.name max length is 63"
// +kubebuilder:validation:XValidation:rule=`self.spec.placementName == oldSelf.spec.placementName`,message="placementName is immutable",fieldPath=`.spec.placementName`
// +kubebuilder:validation:XValidation:rule=`(has(self.spec.resourceSnapshotIndex) ? self.spec.resourceSnapshotIndex : "") == (has(oldSelf.spec.resourceSnapshotIndex) ? oldSelf.spec.resourceSnapshotIndex : "")`,message="resourceSnapshotIndex is immutable",fieldPath=`.spec.resourceSnapshotIndex`
// +kubebuilder:validation:XValidation:rule=`self.spec.stagedRolloutStrategyName == oldSelf.spec.stagedRolloutStrategyName`,message="stagedRolloutStrategyName is immutable",fieldPath=`.spec.stagedRolloutStrategyName`
// +kubebuilder:validation:XValidation:rule=`!has(self.spec.state) || self.spec.state in ['Initialize', 'Run', 'Stop']`,message="supported values: \"Initialize\", \"Run\", \"Stop\"",fieldPath=`.spec.state`
// +kubebuilder:validation:XValidation:rule=`!(has(oldSelf.spec.state) && oldSelf.spec.state == 'Initialize' && has(self.spec.state) && self.spec.state == 'Stop')`,message="invalid state transition: cannot transition from Initialize to Stop",fieldPath=`.spec.state`
// +kubebuilder:validation:XValidation:rule=`!(has(oldSelf.spec.state) && oldSelf.spec.state == 'Run' && (!has(self.spec.state) || self.spec.state == 'Initialize'))`,message="invalid state transition: cannot transition from Run to Initialize",fieldPath=`.spec.state`
// +kubebuilder:validation:XValidation:rule=`!(has(oldSelf.spec.state) && oldSelf.spec.state == 'Stop' && (!has(self.spec.state) || self.spec.state == 'Initialize'))`,message="invalid state transition: cannot transition from Stop to Initialize",fieldPath=`.spec.state`
type StagedUpdateRun struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   fleet.UpdateRunSpec   `json:"spec"`
	Status fleet.UpdateRunStatus `json:"status,omitempty"`
}

// ---- approval requests ----

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
// +kubebuilder:validation:XValidation:rule=`self.spec == oldSelf.spec`,message="The spec field is immutable",fieldPath=`.spec`
type ClusterApprovalRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   fleet.ApprovalRequestSpec   `json:"spec"`
	Status fleet.ApprovalRequestStatus `json:"status,omitempty"`
}

// ApprovalRequest gates a stage of a StagedUpdateRun until a person sets
// its Approved condition.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=areq,categories={fleet,fleet-placement}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:JSONPath=`.spec.parentStageRollout`,name="Update-Run",type=string
// +kubebuilder:printcolumn:JSONPath=`.spec.targetStage`,name="Stage",type=string
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="Approved")].status`,name="Approved",type=string
// +kubebuilder:printcolumn:JSONPath=`.metadata.creationTimestamp`,name="Age",type=date
// +kubebuilder:validation:XValidation:rule=`self.spec == oldSelf.spec`,message="The spec field is immutable",fieldPath=`.spec`
type ApprovalRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   fleet.ApprovalRequestSpec   `json:"spec"`
	Status fleet.ApprovalRequestStatus `json:"status,omitempty"`
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
