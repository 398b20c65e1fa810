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
	Identity               *Subject `json:"identity,omitempty"`
	HeartbeatPeriodSeconds int32    `json:"heartbeatPeriodSeconds,omitempty"`
	Taints                 []Taint  `json:"taints,omitempty"`
}

// Subject is the RBAC subject the member agent authenticates as.
type Subject struct {
	Kind      string `json:"kind"`
	APIGroup  string `json:"apiGroup,omitempty"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// Taint keeps placements without a matching toleration off a cluster.
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// MemberClusterStatus is reported by gitfleet for the member.
type MemberClusterStatus struct {
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
