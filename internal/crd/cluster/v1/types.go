// Package v1 declares the root type of MemberCluster in
// cluster.kubernetes-fleet.io/v1, which KubeFleet serves beside v1beta1:
// the same schema as v1beta1 (the storage version), so no conversion
// webhook; see internal/crd/placement/v1.
//
// +groupName=cluster.kubernetes-fleet.io
// +kubebuilder:object:generate=false
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// MemberCluster is a cluster of the fleet as the hub knows it. gitfleet
// reports its conditions, properties and resource usage; the column that
// reads KubeFleet's member agent heartbeat stays empty.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=cluster,categories={fleet,fleet-cluster}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="Joined")].status`,name="Joined",type=string
// +kubebuilder:printcolumn:JSONPath=`.metadata.creationTimestamp`,name="Age",type=date
// +kubebuilder:printcolumn:JSONPath=`.status.agentStatus[?(@.type=="MemberAgent")].lastReceivedHeartbeat`,name="Member-Agent-Last-Seen",type=date
// +kubebuilder:printcolumn:JSONPath=`.status.properties.kubernetes-fleet\.io/node-count.value`,name="Node-Count",type=string
// +kubebuilder:printcolumn:JSONPath=`.status.resourceUsage.available.cpu`,name="Available-CPU",type=string
// +kubebuilder:printcolumn:JSONPath=`.status.resourceUsage.available.memory`,name="Available-Memory",type=string
// +kubebuilder:printcolumn:JSONPath=`.status.resourceUsage.allocatable.cpu`,name="Allocatable-CPU",priority=1,type=string
// +kubebuilder:printcolumn:JSONPath=`.status.resourceUsage.allocatable.memory`,name="Allocatable-Memory",priority=1,type=string
// +kubebuilder:validation:XValidation:rule=`size(self.metadata.name) < 64`,message="metadata.name max length is 63"
type MemberCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   fleet.MemberClusterSpec   `json:"spec,omitempty"`
	Status fleet.MemberClusterStatus `json:"status,omitempty"`
}
