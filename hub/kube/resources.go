package kube

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// resources maps every kind the hub serves to its resource on the API
// server (the plural names of config/crd).
var resources = map[string]schema.GroupVersionResource{
	fleet.KindClusterResourcePlacement:        placementGVR("clusterresourceplacements"),
	fleet.KindResourcePlacement:               placementGVR("resourceplacements"),
	fleet.KindClusterSchedulingPolicySnapshot: placementGVR("clusterschedulingpolicysnapshots"),
	fleet.KindSchedulingPolicySnapshot:        placementGVR("schedulingpolicysnapshots"),
	fleet.KindClusterResourceSnapshot:         placementGVR("clusterresourcesnapshots"),
	fleet.KindResourceSnapshot:                placementGVR("resourcesnapshots"),
	fleet.KindClusterResourceBinding:          placementGVR("clusterresourcebindings"),
	fleet.KindResourceBinding:                 placementGVR("resourcebindings"),
	fleet.KindClusterStagedUpdateStrategy:     placementGVR("clusterstagedupdatestrategies"),
	fleet.KindStagedUpdateStrategy:            placementGVR("stagedupdatestrategies"),
	fleet.KindClusterStagedUpdateRun:          placementGVR("clusterstagedupdateruns"),
	fleet.KindStagedUpdateRun:                 placementGVR("stagedupdateruns"),
	fleet.KindClusterApprovalRequest:          placementGVR("clusterapprovalrequests"),
	fleet.KindApprovalRequest:                 placementGVR("approvalrequests"),
	fleet.KindMemberCluster:                   {Group: fleet.ClusterGroup, Version: fleet.Version, Resource: "memberclusters"},

	fleet.KindClusterResourceOverrideSnapshot: placementGVR("clusterresourceoverridesnapshots"),
	fleet.KindResourceOverrideSnapshot:        placementGVR("resourceoverridesnapshots"),
}

func placementGVR(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: fleet.PlacementGroup, Version: fleet.Version, Resource: resource}
}

// Resource is the API resource serving kind, for tests and tools that talk
// to the hub's API server directly.
func Resource(kind string) (schema.GroupVersionResource, bool) {
	gvr, ok := resources[kind]
	return gvr, ok
}

// Kinds lists every kind the hub serves.
func Kinds() []string {
	out := make([]string, 0, len(resources))
	for k := range resources {
		out = append(out, k)
	}
	return out
}

// apiVersionOf is the apiVersion of kind.
func apiVersionOf(kind string) string {
	return resources[kind].GroupVersion().String()
}
