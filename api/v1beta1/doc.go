// Package v1beta1 holds the Go types of the KubeFleet-compatible objects that
// gitfleet reads from and writes to Git: member clusters, placements, staged
// update strategies and runs, approval requests, and the hub's bookkeeping
// objects (resource and scheduling-policy snapshots, bindings).
//
// JSON field names are identical to KubeFleet's v1beta1 API, so a manifest
// written for KubeFleet decodes unchanged and status YAML reads like
// `kubectl get -o yaml` of the KubeFleet object.
//
// Unlike upstream, each cluster-scoped/namespaced pair shares one Go type
// (for example UpdateRun serves both ClusterStagedUpdateRun and
// StagedUpdateRun); TypeMeta.Kind names the family and an empty namespace
// marks the cluster-scoped one. The engine treats both families identically,
// so a single type keeps it free of duplicate code paths.
//
// +k8s:deepcopy-gen=package
package v1beta1

const (
	// PlacementGroup is the API group of placements, strategies, runs,
	// approval requests, snapshots and bindings.
	PlacementGroup = "placement.kubernetes-fleet.io"
	// ClusterGroup is the API group of MemberCluster.
	ClusterGroup = "cluster.kubernetes-fleet.io"
	// Version is the only API version gitfleet reads and writes.
	Version = "v1beta1"

	// PlacementAPIVersion is the apiVersion of placement-group objects.
	PlacementAPIVersion = PlacementGroup + "/" + Version
	// ClusterAPIVersion is the apiVersion of MemberCluster.
	ClusterAPIVersion = ClusterGroup + "/" + Version
)

// Kinds of the fleet API groups.
const (
	KindMemberCluster                   = "MemberCluster"
	KindClusterResourcePlacement        = "ClusterResourcePlacement"
	KindResourcePlacement               = "ResourcePlacement"
	KindClusterStagedUpdateStrategy     = "ClusterStagedUpdateStrategy"
	KindStagedUpdateStrategy            = "StagedUpdateStrategy"
	KindClusterStagedUpdateRun          = "ClusterStagedUpdateRun"
	KindStagedUpdateRun                 = "StagedUpdateRun"
	KindClusterApprovalRequest          = "ClusterApprovalRequest"
	KindApprovalRequest                 = "ApprovalRequest"
	KindClusterResourceSnapshot         = "ClusterResourceSnapshot"
	KindResourceSnapshot                = "ResourceSnapshot"
	KindClusterSchedulingPolicySnapshot = "ClusterSchedulingPolicySnapshot"
	KindSchedulingPolicySnapshot        = "SchedulingPolicySnapshot"
	KindClusterResourceBinding          = "ClusterResourceBinding"
	KindResourceBinding                 = "ResourceBinding"
)
