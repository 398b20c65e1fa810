package kube

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// resources maps every kind the hub serves, KubeFleet's kinds of the
// registry (api/v1beta1), to its resource on the API server (the plural
// names of config/crd). gitfleet's own records (commits, sources) live in
// Git only, and so do envelopes: like every hub resource a placement
// selects, they reach the hub inside its resource snapshots. Works are
// delivery's, kept in the members' namespaces, not fleet objects the
// engine or the status tree reads; the agent kinds are
// reconciler/membercluster's and the agents'.
var resources = func() map[string]schema.GroupVersionResource {
	out := map[string]schema.GroupVersionResource{}
	for _, k := range fleet.Kinds() {
		fleetKind := (k.Group == fleet.PlacementGroup || k.Group == fleet.ClusterGroup) && !k.Workload && !k.Agent && k.Kind != fleet.KindWork
		// Of gitfleet's own group, people's kinds have a CRD; gitfleet's
		// records (Commit, GitSource) live in Git only.
		if fleetKind || (k.Group == fleet.GitfleetGroup && !k.HubOwned) {
			out[k.Kind] = k.GroupVersionResource()
		}
	}
	return out
}()

// unmirrored are the kinds the hub serves that the status tree does not
// hold: people's overrides and disruption budgets are in Git as they wrote
// them (override snapshots and evictions, whose status the engine writes,
// are mirrored), and so are their RolloutWindows.
var unmirrored = map[string]bool{
	fleet.KindRolloutWindow:                            true,
	fleet.KindClusterResourceOverride:                  true,
	fleet.KindResourceOverride:                         true,
	fleet.KindClusterResourcePlacementDisruptionBudget: true,
}

// statusless are the kinds whose CRD has no status subresource: people's
// overrides and their snapshots, disruption budgets, RolloutWindows.
var statusless = map[string]bool{
	fleet.KindRolloutWindow:                            true,
	fleet.KindClusterResourcePlacementDisruptionBudget: true,
	fleet.KindClusterResourceOverride:                  true,
	fleet.KindResourceOverride:                         true,
	fleet.KindClusterResourceOverrideSnapshot:          true,
	fleet.KindResourceOverrideSnapshot:                 true,
}

// apiVersionOf is the apiVersion of kind.
func apiVersionOf(kind string) string {
	return resources[kind].GroupVersion().String()
}
