package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// KindWork is KubeFleet's Work: what one member receives of one binding,
// written by the hub into the member's namespace fleet-member-<cluster>
// and applied by whatever reaches the member (a push transport, or an
// agent on the member that pulls it).
const KindWork = "Work"

// Names, labels and annotations of Works, as KubeFleet's work generator
// writes them, so a member agent (gitfleet's or KubeFleet's) finds them.
const (
	// MemberNamespacePrefix starts the hub namespace of each member
	// cluster, fleet-member-<cluster>, which holds its Works.
	MemberNamespacePrefix = "fleet-member-"

	// WorkFinalizer holds a binding until its Works are gone, and with
	// them what they applied on the member.
	WorkFinalizer = FleetPrefix + "work-cleanup"

	// FirstWorkNameFmt names the Work of a master resource snapshot
	// (<base>-work), WorkNameWithSubindexFmt that of a sub-snapshot
	// (<base>-<subindex>) and WorkNameWithEnvelopeCRFmt that of an
	// envelope (<prefix>-envelope-<hash of the envelope>). The base is
	// the placement's name, or <namespace>.<name> (WorkNameBaseFmt) for
	// a ResourcePlacement.
	FirstWorkNameFmt          = "%s-work"
	WorkNameWithSubindexFmt   = "%s-%d"
	WorkNameBaseFmt           = "%s.%s"
	WorkNameWithEnvelopeCRFmt = "%s-envelope-%s"

	// ParentBindingLabel and ParentNamespaceLabel name the binding a Work
	// belongs to (the namespace only for a ResourceBinding).
	ParentBindingLabel   = FleetPrefix + "parent-resource-binding"
	ParentNamespaceLabel = FleetPrefix + "parent-placement-namespace"
	// ParentResourceSnapshotIndexLabel is the index of the resource
	// snapshot group a Work was made from.
	ParentResourceSnapshotIndexLabel = FleetPrefix + "parent-resource-snapshot-index"
	// ParentResourceSnapshotNameAnnotation is the master snapshot a Work
	// was made from; the override snapshot hashes are of the lists of
	// override snapshots the binding froze.
	ParentResourceSnapshotNameAnnotation                = FleetPrefix + "parent-resource-snapshot-name"
	ParentResourceOverrideSnapshotHashAnnotation        = FleetPrefix + "parent-resource-override-snapshot-hash"
	ParentClusterResourceOverrideSnapshotHashAnnotation = FleetPrefix + "parent-cluster-resource-override-snapshot-hash"
)

// The conditions a Work's status carries (KubeFleet's WorkConditionType*).
const (
	WorkConditionTypeApplied       = "Applied"
	WorkConditionTypeAvailable     = "Available"
	WorkConditionTypeDiffReported  = "DiffReported"
	WorkConditionTypeStatusTrimmed = "StatusTrimmed"
	// WorkConditionTypePruneSkipped is gitfleet's own, as the binding's
	// PruneSkipped (ResourceBindingPruneSkipped) it becomes: True while
	// objects that left the Work stay on the member because they are
	// annotated prune: disabled; its message names them.
	WorkConditionTypePruneSkipped = "PruneSkipped"
)

// Work is the manifests of one binding (or one part of its resource
// snapshot, or one envelope) for one member cluster, and what the member
// made of them.
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type Work struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec   WorkSpec   `json:"spec,omitempty"`
	Status WorkStatus `json:"status,omitempty"`
}

// WorkSpec is what to apply and how.
type WorkSpec struct {
	Workload WorkloadTemplate `json:"workload,omitempty"`

	// +optional
	ApplyStrategy *ApplyStrategy `json:"applyStrategy,omitempty"`

	// +optional
	ReportBackStrategy *ReportBackStrategy `json:"reportBackStrategy,omitempty"`
}

// WorkloadTemplate holds the manifests, in the order they are applied.
type WorkloadTemplate struct {
	// +optional
	Manifests []Manifest `json:"manifests,omitempty"`
}

// Manifest is one object to apply, as JSON.
type Manifest struct {
	// +kubebuilder:validation:EmbeddedResource
	// +kubebuilder:pruning:PreserveUnknownFields
	runtime.RawExtension `json:",inline"`
}

// WorkStatus is what the member reported: the Work's conditions (Applied,
// Available, DiffReported) and one entry per manifest.
type WorkStatus struct {
	Conditions []metav1.Condition `json:"conditions"`

	// +optional
	ManifestConditions []ManifestCondition `json:"manifestConditions,omitempty"`
}

// WorkResourceIdentifier names one manifest of a Work: its place in
// spec.workload.manifests (so a manifest that cannot be decoded is still
// named) and, when known, its object.
type WorkResourceIdentifier struct {
	Ordinal   int    `json:"ordinal"`
	Group     string `json:"group,omitempty"`
	Version   string `json:"version,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Resource  string `json:"resource,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
}

// ManifestCondition is what the member made of one manifest.
type ManifestCondition struct {
	// +required
	Identifier WorkResourceIdentifier `json:"identifier,omitempty"`

	// +required
	Conditions []metav1.Condition `json:"conditions"`

	// +kubebuilder:validation:Optional
	DriftDetails *DriftDetails `json:"driftDetails,omitempty"`

	// +kubebuilder:validation:Optional
	DiffDetails *DiffDetails `json:"diffDetails,omitempty"`

	// +kubebuilder:validation:Optional
	BackReportedStatus *BackReportedStatus `json:"backReportedStatus,omitempty"`
}

// DriftDetails is how an applied object changed on the member since it was
// applied (the binding's driftedPlacements are made from it).
type DriftDetails struct {
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	ObservationTime metav1.Time `json:"observationTime"`

	// +kubebuilder:validation:Required
	ObservedInMemberClusterGeneration int64 `json:"observedInMemberClusterGeneration"`

	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	FirstDriftedObservedTime metav1.Time `json:"firstDriftedObservedTime"`

	// +kubebuilder:validation:Optional
	ObservedDrifts []PatchDetail `json:"observedDrifts,omitempty"`
}

// DiffDetails is how an object on the member differs from its manifest
// (the binding's diffedPlacements are made from it). The generation is
// nil when the member does not have the object.
type DiffDetails struct {
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	ObservationTime metav1.Time `json:"observationTime"`

	// +kubebuilder:validation:Optional
	ObservedInMemberClusterGeneration *int64 `json:"observedInMemberClusterGeneration"`

	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	FirstDiffedObservedTime metav1.Time `json:"firstDiffedObservedTime"`

	// +kubebuilder:validation:Optional
	ObservedDiffs []PatchDetail `json:"observedDiffs,omitempty"`
}

// BackReportedStatus is an object's status as the member reported it
// (reportBackStrategy Mirror, which gitfleet refuses: never written).
type BackReportedStatus struct {
	// +kubebuilder:validation:EmbeddedResource
	// +kubebuilder:pruning:PreserveUnknownFields
	ObservedStatus runtime.RawExtension `json:"observedStatus,omitempty"`

	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	ObservationTime metav1.Time `json:"observationTime"`
}
