package resourcesnapshot

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/snapshothistory"
)

// DefaultMaxBytes bounds the selected resources stored in one snapshot
// object; KubeFleet splits a group into sub-snapshots at 800 KB so each
// stays under the API server's object size limit (etcd's 1.5 MiB).
const DefaultMaxBytes = 800 * 1024

// SizeLimiter is a hub that stores smaller objects than DefaultMaxBytes
// allows for: a Kubernetes hub whose etcd runs with a lower
// --max-request-bytes, or a test that splits small selections. A limit of
// 0 or less means the default.
type SizeLimiter interface {
	MaxSnapshotBytes() int
}

// Hub is what Ensure reads and writes: the placement's snapshots, and the
// runs and bindings that keep old ones in use.
type Hub interface {
	hub.ResourceSnapshots
	snapshothistory.Hub
}

func maxBytes(h Hub) int {
	if l, ok := h.(SizeLimiter); ok && l.MaxSnapshotBytes() > 0 {
		return l.MaxSnapshotBytes()
	}
	return DefaultMaxBytes
}

// Hash is the resource hash of a snapshot group (annotation
// kubernetes-fleet.io/resource-hash): sha-256, in hex, over the JSON array
// of the selected resources in the given order (render.Select's order;
// encoding/json sorts object keys, so the encoding is deterministic).
func Hash(resources []*unstructured.Unstructured) (string, error) {
	hash, _, err := encode(resources)
	return hash, err
}

// encode is Hash, with each resource's JSON as the snapshots store it.
func encode(resources []*unstructured.Unstructured) (string, [][]byte, error) {
	raws := make([][]byte, len(resources))
	h := sha256.New()
	h.Write([]byte{'['})
	for i, r := range resources {
		b, err := json.Marshal(r.Object)
		if err != nil {
			return "", nil, fmt.Errorf("encoding selected resource %s %s/%s: %w", r.GetKind(), r.GetNamespace(), r.GetName(), err)
		}
		if i > 0 {
			h.Write([]byte{','})
		}
		h.Write(b)
		raws[i] = b
	}
	h.Write([]byte{']'})
	return fmt.Sprintf("%x", h.Sum(nil)), raws, nil
}

// Ensure makes the latest resource snapshot group of placement p hold
// resources (spec §5.2): when the latest group's hash matches and the
// group is complete it is reused; otherwise the old latest master is
// flipped to is-latest-snapshot=false, the oldest groups that no run or
// binding uses beyond revisionHistoryLimit (default 10) are deleted, and a
// new group is created at the next index (Groups.Next). A non-empty
// commit is recorded in the gitfleet.io/commit annotation of a new master,
// and the count of resources the highest index had and the new one has
// not in its gitfleet.io/removed-resources annotation. It returns the
// master and whether it was created. Unlike KubeFleet there is no minimum
// interval between snapshots (deliberate difference 4), and snapshots in
// use are kept (deliberate difference 17).
func Ensure(ctx context.Context, h Hub, p *fleet.Placement, resources []*unstructured.Unstructured, commit string) (*fleet.ResourceSnapshot, bool, error) {
	pk := hub.Key{Namespace: p.Namespace, Name: p.Name}
	hash, raws, err := encode(resources)
	if err != nil {
		return nil, false, err
	}
	all, err := h.ListResourceSnapshots(ctx, pk)
	if err != nil {
		return nil, false, fmt.Errorf("listing the resource snapshots of placement %s: %w", keyString(pk), err)
	}
	groups := Of(all)
	latest, hasLatest := groups.Latest()
	if hasLatest && latest.Hash() == hash && latest.Complete() {
		return latest.Master, false, nil
	}
	if hasLatest {
		latest.Master.Labels[fleet.IsLatestSnapshotLabel] = "false"
		if err := h.UpdateResourceSnapshot(ctx, latest.Master); err != nil {
			return nil, false, fmt.Errorf("marking resource snapshot %s as not latest: %w", latest.Master.Name, err)
		}
	}
	if err := prune(ctx, h, p, groups); err != nil {
		return nil, false, err
	}

	newIdx := groups.Next()
	parts := split(raws, maxBytes(h))
	master := &fleet.ResourceSnapshot{
		TypeMeta: metav1.TypeMeta{APIVersion: fleet.PlacementAPIVersion, Kind: fleet.ResourceSnapshotKind(p.Namespace)},
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf(fleet.ResourceSnapshotNameFmt, p.Name, newIdx),
			Namespace: p.Namespace,
			Labels: map[string]string{
				fleet.PlacementTrackingLabel: p.Name,
				fleet.ResourceIndexLabel:     strconv.Itoa(newIdx),
				fleet.IsLatestSnapshotLabel:  "true",
			},
			Annotations: map[string]string{
				fleet.ResourceGroupHashAnnotation:         hash,
				fleet.NumberOfResourceSnapshotsAnnotation: strconv.Itoa(len(parts)),
				fleet.NumberOfEnvelopedObjectsAnnotation:  strconv.Itoa(envelopes(resources)),
			},
		},
		Spec: fleet.ResourceSnapshotSpec{SelectedResources: parts[0]},
	}
	if last, ok := groups.Last(); ok {
		n, err := removed(last, resources)
		if err != nil {
			return nil, false, err
		}
		if n > 0 {
			master.Annotations[fleet.RemovedResourcesAnnotation] = strconv.Itoa(n)
		}
	}
	if commit != "" {
		master.Annotations[fleet.CommitAnnotation] = commit
		if len(validation.IsValidLabelValue(commit)) == 0 {
			master.Labels[fleet.CommitLabel] = commit
		}
	}
	// Sub-snapshots first: a master is only complete with all of them.
	for i := 1; i < len(parts); i++ {
		sub := &fleet.ResourceSnapshot{
			TypeMeta: master.TypeMeta,
			ObjectMeta: metav1.ObjectMeta{
				Name:      fmt.Sprintf(fleet.ResourceSnapshotSubNameFmt, p.Name, newIdx, i-1),
				Namespace: p.Namespace,
				Labels: map[string]string{
					fleet.PlacementTrackingLabel: p.Name,
					fleet.ResourceIndexLabel:     strconv.Itoa(newIdx),
				},
				Annotations: map[string]string{fleet.SubindexOfResourceSnapshotAnnotation: strconv.Itoa(i - 1)},
			},
			Spec: fleet.ResourceSnapshotSpec{SelectedResources: parts[i]},
		}
		if err := h.CreateResourceSnapshot(ctx, sub); err != nil {
			return nil, false, fmt.Errorf("creating resource snapshot %s: %w", sub.Name, err)
		}
	}
	if err := h.CreateResourceSnapshot(ctx, master); err != nil {
		return nil, false, fmt.Errorf("creating resource snapshot %s: %w", master.Name, err)
	}
	return master, true, nil
}

// removed counts the resources of the group prev that resources no longer
// has: what a run rolling out the new group deletes from its clusters.
func removed(prev Group, resources []*unstructured.Unstructured) (int, error) {
	had, err := prev.Resources()
	if err != nil {
		return 0, err
	}
	for _, r := range resources {
		delete(had, Resource{Kind: r.GetKind(), Namespace: r.GetNamespace(), Name: r.GetName()})
	}
	return len(had), nil
}

// prune deletes the oldest groups that no run or binding uses, so that,
// with the group about to be created, at most revisionHistoryLimit unused
// groups remain (snapshothistory's rule). Every snapshot of a pruned
// index goes, whatever its part in the group.
func prune(ctx context.Context, h Hub, p *fleet.Placement, groups Groups) error {
	limit := fleet.DefaultRevisionHistoryLimit
	if p.Spec.RevisionHistoryLimit != nil && *p.Spec.RevisionHistoryLimit > 0 {
		limit = int(*p.Spec.RevisionHistoryLimit)
	}
	pk := hub.Key{Namespace: p.Namespace, Name: p.Name}
	uses := snapshothistory.Of(ctx, h)
	expired, err := snapshothistory.Expired(groups, limit, func(g Group) (bool, error) {
		names := make([]string, len(g.All))
		for j, s := range g.All {
			names[j] = s.Name
		}
		return uses.ResourceGroup(pk, g.Index, names)
	})
	if err != nil {
		return fmt.Errorf("finding the resource snapshots of placement %s in use: %w", keyString(pk), err)
	}
	for _, g := range expired {
		for _, s := range g.All {
			if err := h.DeleteResourceSnapshot(ctx, hub.Key{Namespace: s.Namespace, Name: s.Name}); err != nil && !hub.IsNotFound(err) {
				return fmt.Errorf("deleting old resource snapshot %s: %w", s.Name, err)
			}
		}
	}
	return nil
}

// split packs encoded resources into parts of at most limit bytes (a
// larger single resource gets a part of its own), in order, as KubeFleet's
// SplitSelectedResources does. There is always at least one part,
// possibly empty.
func split(raws [][]byte, limit int) [][]runtime.RawExtension {
	parts := [][]runtime.RawExtension{{}}
	size := 0
	for _, b := range raws {
		cur := &parts[len(parts)-1]
		if size > 0 && size+len(b) > limit {
			parts = append(parts, nil)
			cur = &parts[len(parts)-1]
			size = 0
		}
		*cur = append(*cur, runtime.RawExtension{Raw: b})
		size += len(b)
	}
	return parts
}

// envelopes counts the envelopes among resources, as KubeFleet's
// number-of-enveloped-object annotation does.
func envelopes(resources []*unstructured.Unstructured) int {
	n := 0
	for _, r := range resources {
		if fleet.IsEnvelope(r) {
			n++
		}
	}
	return n
}

// keyString prints a placement key as the engine's messages do.
func keyString(k hub.Key) string { return k.Namespace + "/" + k.Name }
