package v1beta1

// The helpers below pick the kind of a family from its scope: an empty
// namespace is the cluster-scoped kind, any other the namespaced kind.

func scoped(namespace, cluster, namespaced string) string {
	if namespace == "" {
		return cluster
	}
	return namespaced
}

// PlacementKind is ClusterResourcePlacement or ResourcePlacement.
func PlacementKind(namespace string) string {
	return scoped(namespace, KindClusterResourcePlacement, KindResourcePlacement)
}

// UpdateStrategyKind is ClusterStagedUpdateStrategy or StagedUpdateStrategy.
func UpdateStrategyKind(namespace string) string {
	return scoped(namespace, KindClusterStagedUpdateStrategy, KindStagedUpdateStrategy)
}

// UpdateRunKind is ClusterStagedUpdateRun or StagedUpdateRun.
func UpdateRunKind(namespace string) string {
	return scoped(namespace, KindClusterStagedUpdateRun, KindStagedUpdateRun)
}

// ApprovalRequestKind is ClusterApprovalRequest or ApprovalRequest.
func ApprovalRequestKind(namespace string) string {
	return scoped(namespace, KindClusterApprovalRequest, KindApprovalRequest)
}

// ResourceSnapshotKind is ClusterResourceSnapshot or ResourceSnapshot.
func ResourceSnapshotKind(namespace string) string {
	return scoped(namespace, KindClusterResourceSnapshot, KindResourceSnapshot)
}

// PolicySnapshotKind is ClusterSchedulingPolicySnapshot or SchedulingPolicySnapshot.
func PolicySnapshotKind(namespace string) string {
	return scoped(namespace, KindClusterSchedulingPolicySnapshot, KindSchedulingPolicySnapshot)
}

// BindingKind is ClusterResourceBinding or ResourceBinding.
func BindingKind(namespace string) string {
	return scoped(namespace, KindClusterResourceBinding, KindResourceBinding)
}
