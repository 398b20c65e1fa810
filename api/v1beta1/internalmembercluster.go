package v1beta1

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// InternalMemberCluster is the hub's side of one member's agent
// (cluster.kubernetes-fleet.io, in the member's namespace
// fleet-member-<cluster>): the hub tells the agent to join or leave in its
// spec, the agent reports its heartbeat, conditions and properties in its
// status, and the hub copies them into the MemberCluster's. Only members
// that pull (gitfleet.io/driver: work) have one.
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type InternalMemberCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// The desired state of InternalMemberCluster.
	// +required
	Spec InternalMemberClusterSpec `json:"spec"`

	// The observed status of InternalMemberCluster.
	// +optional
	Status InternalMemberClusterStatus `json:"status,omitempty"`
}

// KindInternalMemberCluster is the InternalMemberCluster kind.
const KindInternalMemberCluster = "InternalMemberCluster"

// InternalMemberClusterList contains a list of InternalMemberCluster.
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type InternalMemberClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []InternalMemberCluster `json:"items"`
}

// ClusterState is the state the hub asks a member's agent to be in.
type ClusterState string

// The states of InternalMemberClusterSpec.State, KubeFleet's.
const (
	ClusterStateJoin  ClusterState = "Join"
	ClusterStateLeave ClusterState = "Leave"
)

// InternalMemberClusterSpec defines the desired state of InternalMemberCluster. Set by the hub agent.
type InternalMemberClusterSpec struct {
	// +kubebuilder:validation:Required,Enum=Join;Leave

	// The desired state of the member cluster. Possible values: Join, Leave.
	// +required
	State ClusterState `json:"state"`

	// +kubebuilder:default=60
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=600

	// How often (in seconds) for the member cluster to send a heartbeat to the hub cluster. Default: 60 seconds. Min: 1 second. Max: 10 minutes.
	// +optional
	HeartbeatPeriodSeconds int32 `json:"heartbeatPeriodSeconds,omitempty"`
}

// InternalMemberClusterStatus defines the observed state of InternalMemberCluster.
type InternalMemberClusterStatus struct {
	// Conditions is an array of current observed conditions for the member cluster.
	// +optional
	Conditions []metav1.Condition `json:"conditions"`

	// Properties is an array of properties observed for the member cluster.
	//
	// This field is beta-level; it is for the property-based scheduling feature and is only
	// populated when a property provider is enabled in the deployment.
	// +optional
	Properties map[PropertyName]PropertyValue `json:"properties,omitempty"`

	// The current observed resource usage of the member cluster. It is populated by the member agent.
	// +optional
	ResourceUsage ResourceUsage `json:"resourceUsage,omitempty"`

	// Namespaces is a map of namespace names to their associated work names for namespaces
	// that are managed by Fleet (i.e., have AppliedWork owner references when created).
	// The key is the namespace name and the value is the work name from the AppliedWork owner reference.
	// If the namespace does not have an AppliedWork owner reference, the value will be an empty string.
	// This field is populated by the property provider when namespace collection is enabled.
	// +optional
	Namespaces map[string]string `json:"namespaces,omitempty"`

	// AgentStatus is an array of current observed status, each corresponding to one member agent running in the member cluster.
	// +optional
	AgentStatus []AgentStatus `json:"agentStatus,omitempty"`
}

// The agent KubeFleet's hub expects on every member, and the conditions
// each agent reports in its AgentStatus.
const (
	// MemberAgent is the agent type of the member agent (KubeFleet's, or
	// gitfleet agent standing in for it).
	MemberAgent = "MemberAgent"
	// AgentJoined: the agent has joined (True) or left (False) the fleet.
	AgentJoined = "Joined"
	// AgentHealthy: the agent can reach its member's API server.
	AgentHealthy = "Healthy"
)

// AgentStatusOf returns the status agentType reported, nil when it has
// reported none.
func (s *InternalMemberClusterStatus) AgentStatusOf(agentType string) *AgentStatus {
	for i := range s.AgentStatus {
		if s.AgentStatus[i].Type == agentType {
			return &s.AgentStatus[i]
		}
	}
	return nil
}

// SetAgentConditions sets conditions in the status of agentType, adding
// that status when the agent has none yet, and returns it.
func (s *InternalMemberClusterStatus) SetAgentConditions(agentType string, conditions ...metav1.Condition) *AgentStatus {
	a := s.AgentStatusOf(agentType)
	if a == nil {
		s.AgentStatus = append(s.AgentStatus, AgentStatus{Type: agentType, Conditions: []metav1.Condition{}})
		a = &s.AgentStatus[len(s.AgentStatus)-1]
	}
	for _, c := range conditions {
		meta.SetStatusCondition(&a.Conditions, c)
	}
	return a
}
