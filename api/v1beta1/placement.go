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
type PlacementSpec struct {
	ResourceSelectors    []ResourceSelectorTerm `json:"resourceSelectors"`
	Policy               *PlacementPolicy       `json:"policy,omitempty"`
	Strategy             RolloutStrategy        `json:"strategy,omitempty"`
	RevisionHistoryLimit *int32                 `json:"revisionHistoryLimit,omitempty"`
}

// ResourceSelectorTerm selects hub resources by group/version/kind and either
// a name or a label selector (not both). Selecting a Namespace from a
// ClusterResourcePlacement selects everything in it.
type ResourceSelectorTerm struct {
	Group          string                `json:"group"`
	Version        string                `json:"version"`
	Kind           string                `json:"kind"`
	Name           string                `json:"name,omitempty"`
	LabelSelector  *metav1.LabelSelector `json:"labelSelector,omitempty"`
	SelectionScope SelectionScope        `json:"selectionScope,omitempty"`
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
	PlacementType             PlacementType              `json:"placementType,omitempty"`
	ClusterNames              []string                   `json:"clusterNames,omitempty"`
	NumberOfClusters          *int32                     `json:"numberOfClusters,omitempty"`
	Affinity                  *Affinity                  `json:"affinity,omitempty"`
	TopologySpreadConstraints []TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	Tolerations               []Toleration               `json:"tolerations,omitempty"`
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
	ClusterSelectorTerms []ClusterSelectorTerm `json:"clusterSelectorTerms"`
}

// ClusterSelectorTerm matches clusters by labels.
type ClusterSelectorTerm struct {
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
}

// PreferredClusterSelector adds weight to clusters matching its preference.
type PreferredClusterSelector struct {
	Weight     int32               `json:"weight"`
	Preference ClusterSelectorTerm `json:"preference"`
}

// TopologySpreadConstraint is accepted for compatibility; gitfleet's
// scheduler does not spread by topology.
type TopologySpreadConstraint struct {
	MaxSkew           *int32 `json:"maxSkew,omitempty"`
	TopologyKey       string `json:"topologyKey"`
	WhenUnsatisfiable string `json:"whenUnsatisfiable,omitempty"`
}

// Toleration lets a placement land on a tainted cluster.
type Toleration struct {
	Key      string `json:"key,omitempty"`
	Operator string `json:"operator,omitempty"`
	Value    string `json:"value,omitempty"`
	Effect   string `json:"effect,omitempty"`
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
	Type          RolloutStrategyType  `json:"type,omitempty"`
	RollingUpdate *RollingUpdateConfig `json:"rollingUpdate,omitempty"`
	ApplyStrategy *ApplyStrategy       `json:"applyStrategy,omitempty"`
}

// RollingUpdateConfig is only meaningful with RollingUpdate.
type RollingUpdateConfig struct {
	MaxUnavailable           *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	MaxSurge                 *intstr.IntOrString `json:"maxSurge,omitempty"`
	UnavailablePeriodSeconds *int                `json:"unavailablePeriodSeconds,omitempty"`
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
	ComparisonOption      ComparisonOptionType   `json:"comparisonOption,omitempty"`
	WhenToApply           WhenToApplyType        `json:"whenToApply,omitempty"`
	Type                  ApplyStrategyType      `json:"type,omitempty"`
	AllowCoOwnership      bool                   `json:"allowCoOwnership,omitempty"`
	ServerSideApplyConfig *ServerSideApplyConfig `json:"serverSideApplyConfig,omitempty"`
	WhenToTakeOver        WhenToTakeOverType     `json:"whenToTakeOver,omitempty"`
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
	Conditions            []metav1.Condition          `json:"conditions,omitempty"`
}

// ResourceIdentifier names one selected resource.
type ResourceIdentifier struct {
	Group     string              `json:"group,omitempty"`
	Version   string              `json:"version,omitempty"`
	Kind      string              `json:"kind"`
	Name      string              `json:"name"`
	Namespace string              `json:"namespace,omitempty"`
	Envelope  *EnvelopeIdentifier `json:"envelope,omitempty"`
}

// EnvelopeIdentifier names the envelope that carried a resource.
type EnvelopeIdentifier struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	Type      string `json:"type,omitempty"`
}

// PerClusterPlacementStatus is the placement's state on one cluster.
type PerClusterPlacementStatus struct {
	ClusterName                        string                    `json:"clusterName,omitempty"`
	ObservedResourceIndex              string                    `json:"observedResourceIndex,omitempty"`
	ApplicableResourceOverrides        []NamespacedName          `json:"applicableResourceOverrides,omitempty"`
	ApplicableClusterResourceOverrides []string                  `json:"applicableClusterResourceOverrides,omitempty"`
	FailedPlacements                   []FailedResourcePlacement `json:"failedPlacements,omitempty"`
	Conditions                         []metav1.Condition        `json:"conditions"`
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
