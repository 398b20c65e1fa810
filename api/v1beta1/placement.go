package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Placement is a ClusterResourcePlacement (cluster-scoped) or a
// ResourcePlacement (namespaced): which hub resources go to which clusters
// and how they are rolled out.
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type Placement struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PlacementSpec   `json:"spec"`
	Status PlacementStatus `json:"status,omitempty"`
}

// PlacementSpec is the desired placement.
//
// The markers are KubeFleet's (config/crd is generated from them).
//
// +kubebuilder:validation:XValidation:rule="size(self.resourceSelectors.filter(x, x.kind == 'Namespace' && x.group == \"\" && x.version == 'v1' && has(x.selectionScope) && x.selectionScope == 'NamespaceWithResourceSelectors')) <= 1",message="only one namespace selector with NamespaceWithResourceSelectors mode is allowed"
// +kubebuilder:validation:XValidation:rule="size(self.resourceSelectors.filter(x, x.kind == 'Namespace' && x.group == \"\" && x.version == 'v1' && has(x.selectionScope) && x.selectionScope == 'NamespaceWithResourceSelectors')) == 0 || (size(self.resourceSelectors.filter(x, x.kind == 'Namespace' && x.group == \"\" && x.version == 'v1' && has(x.selectionScope) && x.selectionScope == 'NamespaceWithResourceSelectors' && has(x.name) && size(x.name) > 0 && !has(x.labelSelector))) == 1)",message="namespace selector with NamespaceWithResourceSelectors mode must select by name (not by label)"
// +kubebuilder:validation:XValidation:rule="size(self.resourceSelectors.filter(x, x.kind == 'Namespace' && x.group == \"\" && x.version == 'v1' && has(x.selectionScope) && x.selectionScope == 'NamespaceWithResourceSelectors')) == 0 || size(self.resourceSelectors.filter(x, x.kind == 'Namespace' && x.group == \"\" && x.version == 'v1')) == 1",message="when using NamespaceWithResourceSelectors mode, only one namespace selector is allowed (cannot mix with other namespace selectors)"
type PlacementSpec struct {
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:XValidation:rule="self.all(x, !(has(x.name) && size(x.name) > 0 && has(x.labelSelector)))",message="name and labelSelector are mutually exclusive in a resource selector"
	ResourceSelectors []ResourceSelectorTerm `json:"resourceSelectors"`
	// +kubebuilder:validation:Optional
	// +kubebuilder:validation:XValidation:rule="!(self.placementType != oldSelf.placementType)",message="placement type is immutable"
	// +kubebuilder:validation:XValidation:rule="self.placementType != 'PickFixed' || (!has(self.affinity) && !has(self.numberOfClusters) && !has(self.topologySpreadConstraints) && !has(self.tolerations))",message="affinity, numberOfClusters, topologySpreadConstraints, and tolerations cannot be set when placementType is PickFixed"
	// +kubebuilder:validation:XValidation:rule="self.placementType != 'PickAll' || (!has(self.clusterNames) && !has(self.numberOfClusters) && !has(self.topologySpreadConstraints))",message="clusterNames, numberOfClusters, and topologySpreadConstraints cannot be set when placementType is PickAll"
	// +kubebuilder:validation:XValidation:rule="self.placementType != 'PickN' || (!has(self.clusterNames) && has(self.numberOfClusters))",message="clusterNames cannot be set and numberOfClusters must be set when placementType is PickN"
	Policy *PlacementPolicy `json:"policy,omitempty"`
	// +kubebuilder:validation:Optional
	Strategy RolloutStrategy `json:"strategy,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +kubebuilder:default=10
	// +kubebuilder:validation:Optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
	// StatusReportingScope is accepted with its default, ClusterScopeOnly,
	// alone: admission refuses NamespaceAccessible (unsupported.go).
	// +kubebuilder:default=ClusterScopeOnly
	// +kubebuilder:validation:Enum=ClusterScopeOnly;NamespaceAccessible
	// +kubebuilder:validation:Optional
	StatusReportingScope StatusReportingScope `json:"statusReportingScope,omitempty"`
}

// ResourceSelectorTerm selects hub resources by group/version/kind and either
// a name or a label selector (not both). Selecting a Namespace from a
// ClusterResourcePlacement selects everything in it.
type ResourceSelectorTerm struct {
	Group         string                `json:"group"`
	Version       string                `json:"version"`
	Kind          string                `json:"kind"`
	Name          string                `json:"name,omitempty"`
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// +kubebuilder:validation:Enum=NamespaceOnly;NamespaceWithResources;NamespaceWithResourceSelectors
	// +kubebuilder:default=NamespaceWithResources
	// +kubebuilder:validation:Optional
	SelectionScope SelectionScope `json:"selectionScope,omitempty"`
}

// SelectionScope narrows what selecting a Namespace brings along.
type SelectionScope string

const (
	// NamespaceOnly selects the Namespace object alone.
	NamespaceOnly SelectionScope = "NamespaceOnly"
	// NamespaceWithResources selects the Namespace and everything in it (default).
	NamespaceWithResources SelectionScope = "NamespaceWithResources"
)

// PlacementType is the scheduling policy kind.
type PlacementType string

const (
	PickAllPlacementType   PlacementType = "PickAll"
	PickNPlacementType     PlacementType = "PickN"
	PickFixedPlacementType PlacementType = "PickFixed"
)

// PlacementPolicy says which clusters a placement picks.
type PlacementPolicy struct {
	// +kubebuilder:validation:Enum=PickAll;PickN;PickFixed
	// +kubebuilder:default=PickAll
	// +kubebuilder:validation:Optional
	PlacementType PlacementType `json:"placementType,omitempty"`
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:Optional
	ClusterNames []string `json:"clusterNames,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Optional
	NumberOfClusters *int32 `json:"numberOfClusters,omitempty"`
	// +kubebuilder:validation:Optional
	Affinity *Affinity `json:"affinity,omitempty"`
	// +kubebuilder:validation:Optional
	TopologySpreadConstraints []TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:Optional
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.operator != 'Exists' || !has(x.value) || size(x.value) == 0)",message="value must be empty when operator is Exists"
	// +kubebuilder:validation:XValidation:rule="self.all(x, (has(x.key) && size(x.key) > 0) || x.operator == 'Exists')",message="operator must be Exists when key is empty"
	Tolerations []Toleration `json:"tolerations,omitempty"`
}

// Affinity holds cluster affinity rules.
type Affinity struct {
	ClusterAffinity *ClusterAffinity `json:"clusterAffinity,omitempty"`
}

// ClusterAffinity restricts (required) and ranks (preferred) clusters.
type ClusterAffinity struct {
	RequiredDuringSchedulingIgnoredDuringExecution  *ClusterSelector           `json:"requiredDuringSchedulingIgnoredDuringExecution,omitempty"`
	PreferredDuringSchedulingIgnoredDuringExecution []PreferredClusterSelector `json:"preferredDuringSchedulingIgnoredDuringExecution,omitempty"`
}

// ClusterSelector matches a cluster if any of its terms matches (OR).
type ClusterSelector struct {
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:validation:Required
	ClusterSelectorTerms []ClusterSelectorTerm `json:"clusterSelectorTerms"`
}

// ClusterSelectorTerm matches clusters by labels and, with property-based
// scheduling, by properties (see property.go).
type ClusterSelectorTerm struct {
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`

	// PropertySelector is a property query over all joined member clusters. Clusters matching
	// the query are selected.
	//
	// If you specify both label and property selectors in the same term, the results are AND'd.
	//
	// At this moment, PropertySelector can only be used with
	// `RequiredDuringSchedulingIgnoredDuringExecution` affinity terms.
	//
	// This field is beta-level; it is for the property-based scheduling feature and is only
	// functional when a property provider is enabled in the deployment.
	// +kubebuilder:validation:Optional
	PropertySelector *PropertySelector `json:"propertySelector,omitempty"`

	// PropertySorter sorts all matching clusters by a specific property and assigns different weights
	// to each cluster based on their observed property values.
	//
	// At this moment, PropertySorter can only be used with
	// `PreferredDuringSchedulingIgnoredDuringExecution` affinity terms.
	//
	// This field is beta-level; it is for the property-based scheduling feature and is only
	// functional when a property provider is enabled in the deployment.
	// +kubebuilder:validation:Optional
	PropertySorter *PropertySorter `json:"propertySorter,omitempty"`
}

// PreferredClusterSelector adds weight to clusters matching its preference.
type PreferredClusterSelector struct {
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Minimum=-100
	// +kubebuilder:validation:Maximum=100
	Weight     int32               `json:"weight"`
	Preference ClusterSelectorTerm `json:"preference"`
}

// TopologySpreadConstraint is accepted for compatibility; gitfleet's
// scheduler does not spread by topology.
type TopologySpreadConstraint struct {
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Optional
	MaxSkew     *int32 `json:"maxSkew,omitempty"`
	TopologyKey string `json:"topologyKey"`
	// +kubebuilder:validation:Optional
	// +kubebuilder:default=DoNotSchedule
	// +kubebuilder:validation:Enum=DoNotSchedule;ScheduleAnyway
	WhenUnsatisfiable string `json:"whenUnsatisfiable,omitempty"`
}

// Toleration lets a placement land on a tainted cluster.
type Toleration struct {
	Key string `json:"key,omitempty"`
	// +kubebuilder:default=Equal
	// +kubebuilder:validation:Enum=Equal;Exists
	// +kubebuilder:validation:Optional
	Operator string `json:"operator,omitempty"`
	Value    string `json:"value,omitempty"`
	// +kubebuilder:validation:Enum=NoSchedule
	// +kubebuilder:validation:Optional
	Effect string `json:"effect,omitempty"`
}

// RolloutStrategyType selects who rolls a placement out.
type RolloutStrategyType string

const (
	// RollingUpdateRolloutStrategyType lets the placement controller roll out.
	RollingUpdateRolloutStrategyType RolloutStrategyType = "RollingUpdate"
	// ExternalRolloutStrategyType hands the rollout to staged update runs.
	ExternalRolloutStrategyType RolloutStrategyType = "External"
)

// RolloutStrategy of a placement.
type RolloutStrategy struct {
	// +kubebuilder:default=RollingUpdate
	// +kubebuilder:validation:Enum=RollingUpdate;External
	// +kubebuilder:validation:XValidation:rule="!(self != 'External' && oldSelf == 'External')",message="cannot change rollout strategy type from 'External' to other types"
	Type RolloutStrategyType `json:"type,omitempty"`
	// +kubebuilder:validation:Optional
	RollingUpdate *RollingUpdateConfig `json:"rollingUpdate,omitempty"`
	// +kubebuilder:validation:Optional
	ApplyStrategy *ApplyStrategy `json:"applyStrategy,omitempty"`
	// DeleteStrategy and ReportBackStrategy are accepted only as what
	// gitfleet does (unsupported.go): Delete, and Disabled.
	// +kubebuilder:validation:Optional
	DeleteStrategy *DeleteStrategy `json:"deleteStrategy,omitempty"`
	// +kubebuilder:validation:Optional
	// +kubebuilder:validation:XValidation:rule="(self == null) || (self.type == 'Mirror' ? size(self.destination) != 0 : true)",message="when reportBackStrategy.type is 'Mirror', a destination must be specified"
	ReportBackStrategy *ReportBackStrategy `json:"reportBackStrategy,omitempty"`
}

// RollingUpdateConfig is only meaningful with RollingUpdate.
type RollingUpdateConfig struct {
	// +kubebuilder:default="25%"
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern="^((100|[0-9]{1,2})%|[0-9]+)$"
	// +kubebuilder:validation:Optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// +kubebuilder:default="25%"
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern="^((100|[0-9]{1,2})%|[0-9]+)$"
	// +kubebuilder:validation:Optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`
	// +kubebuilder:default=60
	// +kubebuilder:validation:Optional
	// +kubebuilder:validation:Minimum=0
	UnavailablePeriodSeconds *int `json:"unavailablePeriodSeconds,omitempty"`
}

// ApplyStrategyType is how resources are applied on members.
type ApplyStrategyType string

const (
	ApplyStrategyTypeClientSideApply ApplyStrategyType = "ClientSideApply"
	ApplyStrategyTypeServerSideApply ApplyStrategyType = "ServerSideApply"
	ApplyStrategyTypeReportDiff      ApplyStrategyType = "ReportDiff"
)

// ComparisonOptionType, WhenToApplyType and WhenToTakeOverType are the other
// apply strategy knobs.
type (
	ComparisonOptionType string
	WhenToApplyType      string
	WhenToTakeOverType   string
)

const (
	ComparisonOptionTypePartialComparison ComparisonOptionType = "PartialComparison"
	ComparisonOptionTypeFullComparison    ComparisonOptionType = "FullComparison"

	WhenToApplyTypeAlways       WhenToApplyType    = "Always"
	WhenToApplyTypeIfNotDrifted WhenToApplyType    = "IfNotDrifted"
	WhenToTakeOverTypeAlways    WhenToTakeOverType = "Always"
	WhenToTakeOverTypeIfNoDiff  WhenToTakeOverType = "IfNoDiff"
	WhenToTakeOverTypeNever     WhenToTakeOverType = "Never"
)

// ApplyStrategy says how member clusters apply the placed resources. A run
// freezes the defaulted copy in its status.
type ApplyStrategy struct {
	// +kubebuilder:default=PartialComparison
	// +kubebuilder:validation:Enum=PartialComparison;FullComparison
	// +kubebuilder:validation:Optional
	ComparisonOption ComparisonOptionType `json:"comparisonOption,omitempty"`
	// +kubebuilder:default=Always
	// +kubebuilder:validation:Enum=Always;IfNotDrifted
	// +kubebuilder:validation:Optional
	WhenToApply WhenToApplyType `json:"whenToApply,omitempty"`
	// +kubebuilder:default=ClientSideApply
	// +kubebuilder:validation:Enum=ClientSideApply;ServerSideApply;ReportDiff
	// +kubebuilder:validation:Optional
	Type             ApplyStrategyType `json:"type,omitempty"`
	AllowCoOwnership bool              `json:"allowCoOwnership,omitempty"`
	// +kubebuilder:validation:Optional
	ServerSideApplyConfig *ServerSideApplyConfig `json:"serverSideApplyConfig,omitempty"`
	// +kubebuilder:default=Always
	// +kubebuilder:validation:Enum=Always;IfNoDiff;Never
	// +kubebuilder:validation:Optional
	WhenToTakeOver WhenToTakeOverType `json:"whenToTakeOver,omitempty"`
}

// ServerSideApplyConfig configures server-side apply.
type ServerSideApplyConfig struct {
	ForceConflicts bool `json:"force,omitempty"`
}

// PlacementStatus is what gitfleet reports for a placement.
type PlacementStatus struct {
	SelectedResources     []ResourceIdentifier        `json:"selectedResources,omitempty"`
	ObservedResourceIndex string                      `json:"observedResourceIndex,omitempty"`
	PlacementStatuses     []PerClusterPlacementStatus `json:"placementStatuses,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:Optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ResourceIdentifier names one selected resource.
type ResourceIdentifier struct {
	Group     string              `json:"group,omitempty"`
	Version   string              `json:"version"`
	Kind      string              `json:"kind"`
	Name      string              `json:"name"`
	Namespace string              `json:"namespace,omitempty"`
	Envelope  *EnvelopeIdentifier `json:"envelope,omitempty"`
}

// EnvelopeIdentifier names the envelope that carried a resource.
type EnvelopeIdentifier struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	// +kubebuilder:validation:Enum=ConfigMap;ClusterResourceEnvelope;ResourceEnvelope
	// +kubebuilder:default=ConfigMap
	// +kubebuilder:validation:Optional
	Type string `json:"type,omitempty"`
}

// PerClusterPlacementStatus is the placement's state on one cluster.
type PerClusterPlacementStatus struct {
	ClusterName                        string           `json:"clusterName,omitempty"`
	ObservedResourceIndex              string           `json:"observedResourceIndex,omitempty"`
	ApplicableResourceOverrides        []NamespacedName `json:"applicableResourceOverrides,omitempty"`
	ApplicableClusterResourceOverrides []string         `json:"applicableClusterResourceOverrides,omitempty"`
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:Optional
	FailedPlacements []FailedResourcePlacement `json:"failedPlacements,omitempty"`
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:Optional
	DriftedPlacements []DriftedResourcePlacement `json:"driftedPlacements,omitempty"`
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:Optional
	DiffedPlacements []DiffedResourcePlacement `json:"diffedPlacements,omitempty"`
	// +kubebuilder:validation:Optional
	Conditions []metav1.Condition `json:"conditions"`
}

// FailedResourcePlacement is a resource that failed to apply or become
// available on a cluster.
type FailedResourcePlacement struct {
	ResourceIdentifier `json:",inline"`
	Condition          metav1.Condition `json:"condition"`
}

// NamespacedName references a namespaced override snapshot.
type NamespacedName struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}
