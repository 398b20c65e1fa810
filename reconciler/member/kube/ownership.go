package kube

import (
	"context"
	"fmt"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

// An object on the member belongs to one placement: the one whose owner
// labels it carries (PlacementLabel) and whose record on the member holds
// it, as KubeFleet's belongs to the AppliedWork its owner reference names.
// Another placement selecting it does not take it over, whatever its
// apply strategy (KubeFleet's work applier: "Fleet does not support the
// case where one resource is being placed multiple times by different
// CRPs on the same member cluster", AllowCoOwnership included); its
// manifest fails instead (takenVerdict). An object carrying the labels of
// a placement no record holds it for (it let go of it, or its record is
// gone) is anyone's to take over, as KubeFleet first drops owner
// references to AppliedWorks that are gone.

// scope is one kind in one namespace (none for cluster-scoped kinds).
type scope struct {
	gvk       schema.GroupVersionKind
	namespace string
}

// ownerKey names a placement by its labels: namespace/name, namespace
// empty for a cluster-scoped placement.
func ownerKey(name, namespace string) string { return namespace + "/" + name }

// takenByOthers is the part of objs that another placement holds on the
// member: the objects the member has (not in live, which are d's) that
// carry another placement's owner labels and that its record holds. It
// costs nothing when every object is d's already; else one metadata LIST
// per kind and namespace of the others (none in a namespace the member
// does not have yet: a first apply into new namespaces costs one LIST),
// and the records only when one of them carries another placement's
// labels.
func (cl *cluster) takenByOthers(ctx context.Context, d member.Delivery, objs []*unstructured.Unstructured, live map[string]*unstructured.Unstructured) (inventory, error) {
	wanted := map[string]fleet.ResourceIdentifier{}
	scopes := map[scope]bool{}
	for _, o := range objs {
		id := member.Identify(o)
		if _, ours := live[idKey(id)]; ours {
			continue
		}
		wanted[idKey(id)] = id
		scopes[scope{o.GroupVersionKind(), o.GetNamespace()}] = true
	}
	if len(wanted) == 0 {
		return nil, nil
	}
	if err := cl.dropAbsentNamespaces(ctx, scopes); err != nil {
		return nil, err
	}
	labels := ownerLabels(d)
	owners := map[fleet.ResourceIdentifier]string{} // by the owner labels it carries
	err := cl.listScopes(ctx, scopes, func() client.ObjectList { return &metav1.PartialObjectMetadataList{} }, client.HasLabels{PlacementLabel},
		func(sc scope, l client.ObjectList) {
			for _, item := range l.(*metav1.PartialObjectMetadataList).Items {
				k := idKey(fleet.ResourceIdentifier{Group: sc.gvk.Group, Kind: sc.gvk.Kind, Namespace: item.Namespace, Name: item.Name})
				id, ok := wanted[k]
				if !ok || labelsCarry(item.Labels, labels) {
					continue
				}
				owners[id] = ownerKey(item.Labels[PlacementLabel], item.Labels[PlacementNamespaceLabel])
			}
		})
	if err != nil {
		return nil, err
	}
	if len(owners) == 0 {
		return nil, nil
	}
	records, err := cl.otherRecords(ctx, d)
	if err != nil {
		return nil, err
	}
	taken := inventory{}
	for id, owner := range owners {
		if records[owner][idKey(id)] {
			taken[id] = true
		}
	}
	return taken, nil
}

// dropAbsentNamespaces removes from scopes the namespaces the member
// does not have: nothing of them is there to be another's.
func (cl *cluster) dropAbsentNamespaces(ctx context.Context, scopes map[scope]bool) error {
	namespaced := false
	for sc := range scopes {
		namespaced = namespaced || sc.namespace != ""
	}
	if !namespaced {
		return nil
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "NamespaceList"})
	if err := cl.client.List(ctx, list); err != nil {
		return fmt.Errorf("list namespaces: %w", err)
	}
	present := map[string]bool{}
	for _, n := range list.Items {
		present[n.Name] = true
	}
	for sc := range scopes {
		if sc.namespace != "" && !present[sc.namespace] {
			delete(scopes, sc)
		}
	}
	return nil
}

// takenVerdict is gate's decision on an object another placement holds:
// KubeFleet's takeover failure, or, when the strategy never takes over,
// the failure of an object not taken over.
func takenVerdict(strategy *fleet.ApplyStrategy) verdict {
	if strategy.WhenToTakeOver == fleet.WhenToTakeOverTypeNever {
		return verdict{reason: member.NotTakenOverReason, err: member.NotTakenOverError}
	}
	return verdict{reason: member.FailedToTakeOverReason, err: member.OwnedByAnotherPlacementError}
}

// otherRecords are what the member's records of placements other than
// d's hold (by idKey: whatever version each applied), by the placement
// (ownerKey of its labels). A record written
// before records carried their placement is under "": whose it is is not
// known, so what it holds is another's (prune spares it) unless it is d's
// own record.
func (cl *cluster) otherRecords(ctx context.Context, d member.Delivery) (map[string]map[string]bool, error) {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("v1")
	list.SetKind("ConfigMapList")
	if err := cl.client.List(ctx, list, client.InNamespace(InventoryNamespace), client.MatchingLabels{"app.kubernetes.io/managed-by": "gitfleet"}); err != nil {
		return nil, fmt.Errorf("list the inventories of %s: %w", InventoryNamespace, err)
	}
	mine := recordLabels(d)
	out := map[string]map[string]bool{}
	for i := range list.Items {
		cm := &list.Items[i]
		l := recordLabelsOf(cm)
		owner := ""
		switch {
		case len(l) > 0 && maps.Equal(l, mine):
			continue // d's placement's: its other Works are heldByOthers
		case len(l) > 0:
			owner = ownerKey(l[RecordPlacementLabel], l[RecordPlacementNamespaceLabel])
		case cm.GetName() == d.RecordName():
			continue
		}
		rec, err := parseRecord(cm)
		if err != nil {
			return nil, err
		}
		if out[owner] == nil {
			out[owner] = map[string]bool{}
		}
		for id := range rec.ids {
			out[owner][idKey(id)] = true
		}
	}
	return out, nil
}

// heldByOtherPlacements is everything the member's records of other
// placements hold, by idKey: prune deletes none of it.
func (cl *cluster) heldByOtherPlacements(ctx context.Context, d member.Delivery) (map[string]bool, error) {
	records, err := cl.otherRecords(ctx, d)
	if err != nil {
		return nil, err
	}
	held := map[string]bool{}
	for _, ids := range records {
		for k := range ids {
			held[k] = true
		}
	}
	return held, nil
}
