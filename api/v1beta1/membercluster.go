package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MemberCluster is a cluster of the fleet (cluster.kubernetes-fleet.io). Its
// labels drive stage selection and ordering; the gitfleet.io/driver
// annotation says how gitfleet delivers resources to it.
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type MemberCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   MemberClusterSpec   `json:"spec,omitempty"`
	Status MemberClusterStatus `json:"status,omitempty"`
}

// MemberClusterSpec mirrors KubeFleet's; gitfleet does not act on identity or
// heartbeats, but keeps them so manifests round-trip.
type MemberClusterSpec struct {
	Identity *Subject `json:"identity,omitempty"`
	// +kubebuilder:default=60
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=600
	// +optional
	HeartbeatPeriodSeconds int32 `json:"heartbeatPeriodSeconds,omitempty"`
	// +kubebuilder:validation:MaxItems=100
	// +optional
	Taints []Taint `json:"taints,omitempty"`
	// DeleteOptions is kept, like the identity: gitfleet has no member
	// agent to check before a member leaves.
	// +optional
	DeleteOptions *DeleteOptions `json:"deleteOptions,omitempty"`
}

// DeleteOptions says how KubeFleet validates a member's deletion.
type DeleteOptions struct {
	// +kubebuilder:validation:Enum=Skip;Strict
	// +kubebuilder:default=Strict
	// +kubebuilder:validation:Optional
	ValidationMode string `json:"validationMode,omitempty"`
}

// Subject is the RBAC subject the member agent authenticates as.
// +structType=atomic
type Subject struct {
	Kind      string `json:"kind"`
	APIGroup  string `json:"apiGroup,omitempty"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// Taint keeps placements without a matching toleration off a cluster.
type Taint struct {
	Key   string `json:"key"`
	Value string `json:"value,omitempty"`
	// +kubebuilder:validation:Enum=NoSchedule
	Effect string `json:"effect"`
}

// MemberClusterStatus is reported by gitfleet for the member.
type MemberClusterStatus struct {
	// Namespaces and AgentStatus are KubeFleet's member agent's reports;
	// gitfleet has no agent and writes neither.
	// +optional
	Namespaces map[string]string `json:"namespaces,omitempty"`
	// +optional
	AgentStatus []AgentStatus `json:"agentStatus,omitempty"`

	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Properties is an array of properties observed for the member cluster.
	//
	// This field is beta-level; it is for the property-based scheduling feature and is only
	// populated when a property provider is enabled in the deployment.
	// +optional
	Properties map[PropertyName]PropertyValue `json:"properties,omitempty"`

	// The current observed resource usage of the member cluster. It is copied from the corresponding InternalMemberCluster object.
	// +optional
	ResourceUsage ResourceUsage `json:"resourceUsage,omitempty,omitzero"`
}

// AgentStatus is what one of KubeFleet's agents on a member reports.
type AgentStatus struct {
	// +required
	Type string `json:"type"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// +optional
	LastReceivedHeartbeat metav1.Time `json:"lastReceivedHeartbeat,omitempty"`
}
