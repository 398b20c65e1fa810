package overridesnapshot

import (
	"context"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/member/override"
)

// Matching returns the latest override snapshots that select one of the
// resources of a run's resource snapshot and are not limited to another
// placement (KubeFleet's FetchAllMatchingOverridesForResourceSnapshot).
// placementKey is the placement's name for a ClusterResourcePlacement and
// "<namespace>/<name>" for a ResourcePlacement. A namespaced resource makes
// ClusterResourceOverrides of its Namespace candidates, a cluster-scoped
// one those naming it; ResourceOverrides name namespaced resources.
func Matching(ctx context.Context, h hub.OverrideSnapshots, placementKey string, resources []*unstructured.Unstructured) ([]*fleet.ClusterResourceOverrideSnapshot, []*fleet.ResourceOverrideSnapshot, error) {
	allCRO, err := h.ListClusterResourceOverrideSnapshots(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("listing cluster resource override snapshots: %w", err)
	}
	allRO, err := h.ListResourceOverrideSnapshots(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("listing resource override snapshots: %w", err)
	}
	possibleCRO, possibleRO := map[fleet.ResourceIdentifier]bool{}, map[fleet.ResourceIdentifier]bool{}
	for _, r := range resources {
		gvk := r.GroupVersionKind()
		if ns := r.GetNamespace(); ns != "" {
			possibleCRO[fleet.ResourceIdentifier{Version: "v1", Kind: "Namespace", Name: ns}] = true
			possibleRO[fleet.ResourceIdentifier{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: ns, Name: r.GetName()}] = true
			continue
		}
		possibleCRO[fleet.ResourceIdentifier{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Name: r.GetName()}] = true
	}
	var cros []*fleet.ClusterResourceOverrideSnapshot
	for _, s := range allCRO {
		spec := s.Spec.OverrideSpec
		if s.Labels[fleet.IsLatestSnapshotLabel] != "true" || spec.Placement != nil && spec.Placement.Name != placementKey {
			continue
		}
		for _, sel := range spec.ClusterResourceSelectors {
			if possibleCRO[fleet.ResourceIdentifier{Group: sel.Group, Version: sel.Version, Kind: sel.Kind, Name: sel.Name}] {
				cros = append(cros, s)
				break
			}
		}
	}
	var ros []*fleet.ResourceOverrideSnapshot
	for _, s := range allRO {
		spec := s.Spec.OverrideSpec
		if s.Labels[fleet.IsLatestSnapshotLabel] != "true" {
			continue
		}
		if p := spec.Placement; p != nil {
			key := p.Name
			if p.Scope == fleet.NamespaceScoped {
				key = s.Namespace + "/" + p.Name
			}
			if key != placementKey {
				continue
			}
		}
		for _, sel := range spec.ResourceSelectors {
			if possibleRO[fleet.ResourceIdentifier{Group: sel.Group, Version: sel.Version, Kind: sel.Kind, Namespace: s.Namespace, Name: sel.Name}] {
				ros = append(ros, s)
				break
			}
		}
	}
	return cros, ros, nil
}

// ForCluster picks, of the snapshots Matching found, those with a rule that
// matches cluster, as the names a run records in the cluster's status: the
// ClusterResourceOverrideSnapshots sorted by name, the
// ResourceOverrideSnapshots by namespace, then name (KubeFleet's
// PickFromResourceMatchedOverridesForTargetCluster: there is no priority).
func ForCluster(cluster *fleet.MemberCluster, cros []*fleet.ClusterResourceOverrideSnapshot, ros []*fleet.ResourceOverrideSnapshot) ([]string, []fleet.NamespacedName, error) {
	var croNames []string
	for _, s := range cros {
		matched, err := override.PolicyMatches(s.Spec.OverrideSpec.Policy, cluster)
		if err != nil {
			return nil, nil, err
		}
		if matched {
			croNames = append(croNames, s.Name)
		}
	}
	sort.Strings(croNames)
	var roNames []fleet.NamespacedName
	for _, s := range ros {
		matched, err := override.PolicyMatches(s.Spec.OverrideSpec.Policy, cluster)
		if err != nil {
			return nil, nil, err
		}
		if matched {
			roNames = append(roNames, fleet.NamespacedName{Namespace: s.Namespace, Name: s.Name})
		}
	}
	sort.SliceStable(roNames, func(i, j int) bool {
		if roNames[i].Namespace != roNames[j].Namespace {
			return roNames[i].Namespace < roNames[j].Namespace
		}
		return roNames[i].Name < roNames[j].Name
	})
	return croNames, roNames, nil
}
