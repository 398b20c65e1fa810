package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ResourceSnapshot is a ClusterResourceSnapshot or ResourceSnapshot: an
// immutable copy of the resources a placement selected at one point in
// history (in gitfleet: at one commit).
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type ResourceSnapshot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ResourceSnapshotSpec `json:"spec"`
}

// ResourceSnapshotSpec holds the selected manifests.
type ResourceSnapshotSpec struct {
	SelectedResources []runtime.RawExtension `json:"selectedResources"`
}

// ResourceSnapshotStatus is the status KubeFleet's resource snapshots
// have. Nothing in gitfleet writes it and ResourceSnapshot does not carry
// it; internal/crd's root types give the CRDs its schema, as KubeFleet's.
type ResourceSnapshotStatus struct {
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions"`
}

// PolicySnapshot is a ClusterSchedulingPolicySnapshot or
// SchedulingPolicySnapshot: an immutable copy of a placement's policy with
// the scheduler's decisions.
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type PolicySnapshot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SchedulingPolicySnapshotSpec   `json:"spec"`
	Status SchedulingPolicySnapshotStatus `json:"status,omitempty"`
}

// SchedulingPolicySnapshotSpec is the frozen policy.
type SchedulingPolicySnapshotSpec struct {
	Policy     *PlacementPolicy `json:"policy,omitempty"`
	PolicyHash []byte           `json:"policyHash"`
}

// SchedulingPolicySnapshotStatus is the scheduler's result.
type SchedulingPolicySnapshotStatus struct {
	ObservedCRPGeneration int64 `json:"observedCRPGeneration"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// +kubebuilder:validation:MaxItems=1000
	// +optional
	ClusterDecisions []ClusterDecision `json:"targetClusters,omitempty"`
}

// ClusterDecision is the scheduler's verdict on one cluster.
type ClusterDecision struct {
	ClusterName  string        `json:"clusterName"`
	Selected     bool          `json:"selected"`
	ClusterScore *ClusterScore `json:"clusterScore,omitempty"`
	Reason       string        `json:"reason"`
}

// ClusterScore ranks clusters for PickN.
type ClusterScore struct {
	AffinityScore       *int32 `json:"affinityScore,omitempty"`
	TopologySpreadScore *int32 `json:"priorityScore,omitempty"`
}
