package v1beta1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Overrides change the selected resources per member cluster before they are
// delivered: a JSON patch (a replica count per region, a registry per cloud)
// or the removal of a resource from some clusters.
//
// Unlike the other families, ClusterResourceOverride and ResourceOverride
// keep upstream's two Go types: their selectors differ in shape (a
// ResourceSelectorTerm of a cluster-scoped object or Namespace, against a
// name in the override's own namespace), and both kinds apply to one
// resource together, the ResourceOverride last.

// Kinds of the override family.
const (
	KindClusterResourceOverride         = "ClusterResourceOverride"
	KindResourceOverride                = "ResourceOverride"
	KindClusterResourceOverrideSnapshot = "ClusterResourceOverrideSnapshot"
	KindResourceOverrideSnapshot        = "ResourceOverrideSnapshot"
)

// Labels, name format and variables of overrides (upstream's
// overridesnapshot_types.go and commons.go).
const (
	// OverrideIndexLabel is the index of an override snapshot.
	OverrideIndexLabel = FleetPrefix + "override-index"
	// OverrideTrackingLabel names the override a snapshot was taken of.
	// Snapshots also carry IsLatestSnapshotLabel.
	OverrideTrackingLabel = FleetPrefix + "parent-resource-override"
	// OverrideSnapshotNameFmt is <override>-<index>.
	OverrideSnapshotNameFmt = "%s-%d"

	// OverrideClusterNameVariable in a JSON patch value is replaced by the
	// member cluster's name.
	OverrideClusterNameVariable = "${MEMBER-CLUSTER-NAME}"
	// OverrideClusterLabelKeyVariablePrefix starts a variable replaced by
	// the value of one of the member cluster's labels: the key follows the
	// prefix up to the closing "}", as in
	// ${MEMBER-CLUSTER-LABEL-KEY-kube-fleet.io/region}.
	OverrideClusterLabelKeyVariablePrefix = "${MEMBER-CLUSTER-LABEL-KEY-"
)

// Limits of the override CRD schemas and webhooks.
const (
	MaxOverrideSelectors        = 20
	MaxOverrideRules            = 20
	MaxJSONPatchOverrides       = 20
	MaxOverrideSelectorTerms    = 10
	MaxClusterResourceOverrides = 100 // in the fleet
	MaxResourceOverrides        = 100 // per namespace
)

// ClusterResourceOverride overrides cluster-scoped resources, and through a
// selected Namespace everything in it, on the member clusters its rules
// select.
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type ClusterResourceOverride struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ClusterResourceOverrideSpec `json:"spec"`
}

// The markers of this file are KubeFleet's
// (apis/placement/v1beta1/override_types.go) but for the rule that the
// placement is immutable, which gitfleet leaves out (README, deliberate
// difference 11).

// ClusterResourceOverrideSpec selects resources by name and says how to
// override them.
type ClusterResourceOverrideSpec struct {
	// Placement, when set, limits the override to one placement.
	// +optional
	Placement *PlacementRef `json:"placement,omitempty"`
	// ClusterResourceSelectors select by group, version, kind and name
	// (label selectors are refused), ORed.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=20
	ClusterResourceSelectors []ResourceSelectorTerm `json:"clusterResourceSelectors"`
	// +required
	Policy *OverridePolicy `json:"policy"`
}

// ResourceOverride overrides namespaced resources of its own namespace.
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type ResourceOverride struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ResourceOverrideSpec `json:"spec"`
}

// ResourceOverrideSpec selects resources of the override's namespace by name
// and says how to override them.
type ResourceOverrideSpec struct {
	// +optional
	Placement *PlacementRef `json:"placement,omitempty"`
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=20
	ResourceSelectors []ResourceSelector `json:"resourceSelectors"`
	// +required
	Policy *OverridePolicy `json:"policy"`
}

// ResourceSelector names one namespaced resource; the namespace is the
// override's.
type ResourceSelector struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	Name    string `json:"name"`
}

// ResourceScope is the scope of the placement an override refers to.
type ResourceScope string

const (
	// ClusterScoped refers to a ClusterResourcePlacement (the default).
	ClusterScoped ResourceScope = "Cluster"
	// NamespaceScoped refers to a ResourcePlacement in the override's
	// namespace (ResourceOverride only).
	NamespaceScoped ResourceScope = "Namespaced"
)

// PlacementRef names the placement an override is limited to.
type PlacementRef struct {
	// +required
	Name string `json:"name"`
	// +kubebuilder:validation:Enum=Cluster;Namespaced
	// +kubebuilder:default=Cluster
	// +optional
	Scope ResourceScope `json:"scope,omitempty"`
}

// OverridePolicy is the ordered list of rules; when two rules set one field
// on a cluster, the later wins.
type OverridePolicy struct {
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=20
	OverrideRules []OverrideRule `json:"overrideRules"`
}

// OverrideType is what a rule does to the selected resources.
type OverrideType string

const (
	// JSONPatchOverrideType applies RFC 6902 patches (the default).
	JSONPatchOverrideType OverrideType = "JSONPatch"
	// DeleteOverrideType keeps the resources off the selected clusters.
	DeleteOverrideType OverrideType = "Delete"
)

// OverrideRule applies to the clusters its selector matches: an empty
// clusterSelector matches every cluster, a missing one none.
type OverrideRule struct {
	// +optional
	ClusterSelector *ClusterSelector `json:"clusterSelector,omitempty"`
	// +kubebuilder:validation:Enum=JSONPatch;Delete
	// +kubebuilder:default=JSONPatch
	// +optional
	OverrideType OverrideType `json:"overrideType,omitempty"`
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=20
	// +optional
	JSONPatchOverrides []JSONPatchOverride `json:"jsonPatchOverrides,omitempty"`
}

// JSONPatchOverrideOperator is the operation of one patch.
type JSONPatchOverrideOperator string

const (
	JSONPatchOverrideOpAdd     JSONPatchOverrideOperator = "add"
	JSONPatchOverrideOpRemove  JSONPatchOverrideOperator = "remove"
	JSONPatchOverrideOpReplace JSONPatchOverrideOperator = "replace"
)

// JSONPatchOverride is one RFC 6902 operation. The patch fails when path
// does not exist (except where add creates it). Value may contain the
// variables OverrideClusterNameVariable and
// OverrideClusterLabelKeyVariablePrefix…}; it must be empty for remove.
type JSONPatchOverride struct {
	// +kubebuilder:validation:Enum=add;remove;replace
	// +required
	Operator JSONPatchOverrideOperator `json:"op"`
	// +required
	Path string `json:"path"`
	// +optional
	Value apiextensionsv1.JSON `json:"value,omitempty"`
}

// ClusterResourceOverrideSnapshot is an immutable copy of a
// ClusterResourceOverride, named <override>-<index> and labelled with
// OverrideIndexLabel, OverrideTrackingLabel and IsLatestSnapshotLabel. A run
// freezes, per cluster, the snapshots it delivers with.
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type ClusterResourceOverrideSnapshot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ClusterResourceOverrideSnapshotSpec `json:"spec"`
}

// ClusterResourceOverrideSnapshotSpec holds the frozen spec and its sha-256.
type ClusterResourceOverrideSnapshotSpec struct {
	OverrideSpec ClusterResourceOverrideSpec `json:"overrideSpec"`
	// +required
	OverrideHash []byte `json:"overrideHash"`
}

// ResourceOverrideSnapshot is ClusterResourceOverrideSnapshot's namespaced
// twin for ResourceOverrides.
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type ResourceOverrideSnapshot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ResourceOverrideSnapshotSpec `json:"spec"`
}

// ResourceOverrideSnapshotSpec holds the frozen spec and its sha-256.
type ResourceOverrideSnapshotSpec struct {
	OverrideSpec ResourceOverrideSpec `json:"overrideSpec"`
	// +required
	OverrideHash []byte `json:"overrideHash"`
}
