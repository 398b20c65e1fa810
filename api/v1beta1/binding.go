package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BindingState is where a binding is in its life.
type BindingState string

const (
	// BindingStateScheduled: picked by the scheduler, not rolled out yet.
	BindingStateScheduled BindingState = "Scheduled"
	// BindingStateBound: roll the bound snapshot out to the cluster.
	BindingStateBound BindingState = "Bound"
	// BindingStateUnscheduled: no longer picked; resources stay until the
	// binding is deleted.
	BindingStateUnscheduled BindingState = "Unscheduled"
)

// Binding is a ClusterResourceBinding or ResourceBinding: one placement on
// one cluster, and what should be (and is) delivered there.
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type Binding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ResourceBindingSpec   `json:"spec"`
	Status ResourceBindingStatus `json:"status,omitempty"`
}

// ResourceBindingSpec is written by the scheduler (state, decision) and by
// runs (snapshot, overrides, apply strategy).
type ResourceBindingSpec struct {
	State BindingState `json:"state"`
	// ResourceSnapshotName is required but may be empty (a binding not
	// rolled out yet), so it is always written, as KubeFleet's.
	ResourceSnapshotName             string           `json:"resourceSnapshotName"`
	ResourceOverrideSnapshots        []NamespacedName `json:"resourceOverrideSnapshots,omitempty"`
	ClusterResourceOverrideSnapshots []string         `json:"clusterResourceOverrideSnapshots,omitempty"`
	SchedulingPolicySnapshotName     string           `json:"schedulingPolicySnapshotName"`
	TargetCluster                    string           `json:"targetCluster"`
	ClusterDecision                  ClusterDecision  `json:"clusterDecision"`
	ApplyStrategy                    *ApplyStrategy   `json:"applyStrategy,omitempty"`
}

// ResourceBindingStatus is reported by the delivery layer.
type ResourceBindingStatus struct {
	// +kubebuilder:validation:MaxItems=100
	// +optional
	FailedPlacements []FailedResourcePlacement `json:"failedPlacements,omitempty"`
	// DriftedPlacements and DiffedPlacements hold at most 100 entries each,
	// as KubeFleet's.
	// +kubebuilder:validation:MaxItems=100
	// +optional
	DriftedPlacements []DriftedResourcePlacement `json:"driftedPlacements,omitempty"`
	// +kubebuilder:validation:MaxItems=100
	// +optional
	DiffedPlacements []DiffedResourcePlacement `json:"diffedPlacements,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
