// Package overridesnapshot keeps the override snapshots of a fleet and
// finds the ones a run freezes for each cluster, as KubeFleet's override
// controllers (pkg/controllers/overrider) and update-run initialization
// (pkg/utils/overrider) do.
//
// A ClusterResourceOverride or ResourceOverride in Git gets a new snapshot,
// <override>-<index>, for every commit that changes its spec; the newest
// carries is-latest-snapshot=true. Runs record, per cluster, the names of the
// latest snapshots that select the run's resources and match the cluster,
// and delivery applies exactly those, so an override changed after a run
// initialized does not change what that run delivers.
package overridesnapshot

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/snapshothistory"
)

// RevisionHistoryLimit is how many snapshots of one override are kept (the
// override controllers' limit).
const RevisionHistoryLimit = 10

// Withheld reports whether an override missing from a rendered commit is
// missing because it did not render (then its latest snapshot stays latest)
// rather than because it was deleted.
type Withheld func(kind, namespace, name string) bool

// Record brings the override snapshots in line with the overrides of one
// rendered commit and returns how many snapshots it created. An override
// whose spec hash differs from its latest snapshot's gets a new snapshot at
// the next index, annotated with commit; the previous latest is flipped to
// is-latest-snapshot=false, and the oldest that no run or binding uses
// (uses) beyond RevisionHistoryLimit are deleted: snapshothistory's rule,
// the one resource snapshots follow. An override deleted from Git has its
// latest snapshot flipped to not latest, so no new run picks it up, but its
// snapshots stay for the runs that froze them (KubeFleet deletes them with
// the override; a run there would then fail to deliver).
func Record(ctx context.Context, h hub.OverrideSnapshots, uses *snapshothistory.Uses, cros []*fleet.ClusterResourceOverride, ros []*fleet.ResourceOverride, withheld Withheld, commit string) (int, error) {
	croSnaps, err := h.ListClusterResourceOverrideSnapshots(ctx)
	if err != nil {
		return 0, fmt.Errorf("listing cluster resource override snapshots: %w", err)
	}
	roSnaps, err := h.ListResourceOverrideSnapshots(ctx)
	if err != nil {
		return 0, fmt.Errorf("listing resource override snapshots: %w", err)
	}
	created := 0
	croFam := family[*fleet.ClusterResourceOverrideSnapshot]{
		kind: fleet.KindClusterResourceOverrideSnapshot,
		hash: func(s *fleet.ClusterResourceOverrideSnapshot) string { return string(s.Spec.OverrideHash) },
		put: func(s *fleet.ClusterResourceOverrideSnapshot) error {
			return h.PutClusterResourceOverrideSnapshot(ctx, s)
		},
		del: func(k hub.Key) error { return h.DeleteClusterResourceOverrideSnapshot(ctx, k) },
		used: func(s *fleet.ClusterResourceOverrideSnapshot) (bool, error) {
			return uses.ClusterResourceOverride(s.Name)
		},
	}
	live := map[hub.Key]bool{}
	for _, o := range cros {
		live[hub.Key{Name: o.Name}] = true
		n, err := croFam.ensure(croSnaps, o.ObjectMeta, o.Spec, func(meta metav1.ObjectMeta, hash string) *fleet.ClusterResourceOverrideSnapshot {
			return &fleet.ClusterResourceOverrideSnapshot{ObjectMeta: meta,
				Spec: fleet.ClusterResourceOverrideSnapshotSpec{OverrideSpec: *o.Spec.DeepCopy(), OverrideHash: []byte(hash)}}
		}, commit)
		if err != nil {
			return created, err
		}
		created += n
	}
	if err := croFam.retire(croSnaps, live, withheld); err != nil {
		return created, err
	}

	roFam := family[*fleet.ResourceOverrideSnapshot]{
		kind: fleet.KindResourceOverrideSnapshot,
		hash: func(s *fleet.ResourceOverrideSnapshot) string { return string(s.Spec.OverrideHash) },
		put:  func(s *fleet.ResourceOverrideSnapshot) error { return h.PutResourceOverrideSnapshot(ctx, s) },
		del:  func(k hub.Key) error { return h.DeleteResourceOverrideSnapshot(ctx, k) },
		used: func(s *fleet.ResourceOverrideSnapshot) (bool, error) {
			return uses.ResourceOverride(hub.Key{Namespace: s.Namespace, Name: s.Name})
		},
	}
	live = map[hub.Key]bool{}
	for _, o := range ros {
		live[hub.Key{Namespace: o.Namespace, Name: o.Name}] = true
		n, err := roFam.ensure(roSnaps, o.ObjectMeta, o.Spec, func(meta metav1.ObjectMeta, hash string) *fleet.ResourceOverrideSnapshot {
			return &fleet.ResourceOverrideSnapshot{ObjectMeta: meta,
				Spec: fleet.ResourceOverrideSnapshotSpec{OverrideSpec: *o.Spec.DeepCopy(), OverrideHash: []byte(hash)}}
		}, commit)
		if err != nil {
			return created, err
		}
		created += n
	}
	return created, roFam.retire(roSnaps, live, withheld)
}

// snapshot is what both override snapshot kinds have in common.
type snapshot interface {
	metav1.Object
	comparable
}

// family is one override snapshot kind's operations.
type family[S snapshot] struct {
	kind string
	hash func(S) string
	put  func(S) error
	del  func(hub.Key) error
	// used reports whether a run or a binding uses the snapshot.
	used func(S) (bool, error)
}

// ensure makes the latest snapshot of the override hold spec.
func (f family[S]) ensure(all []S, override metav1.ObjectMeta, spec any, build func(metav1.ObjectMeta, string) S, commit string) (int, error) {
	hash, err := hashOf(spec)
	if err != nil {
		return 0, fmt.Errorf("hashing %s %s: %w", f.kind, override.Name, err)
	}
	mine := f.of(all, override.Namespace, override.Name)
	latestIdx := -1
	if len(mine) > 0 {
		latest := mine[len(mine)-1]
		latestIdx = index(latest)
		if f.hash(latest) == hash {
			return 0, f.setLatest(latest, true)
		}
		if err := f.setLatest(latest, false); err != nil {
			return 0, err
		}
	}
	// Keep RevisionHistoryLimit unused snapshots with the new one.
	expired, err := snapshothistory.Expired(mine, RevisionHistoryLimit, f.used)
	if err != nil {
		return 0, fmt.Errorf("finding the %ss of %s in use: %w", f.kind, override.Name, err)
	}
	for _, s := range expired {
		if err := f.del(hub.Key{Namespace: s.GetNamespace(), Name: s.GetName()}); err != nil && !hub.IsNotFound(err) {
			return 0, fmt.Errorf("deleting old %s %s: %w", f.kind, s.GetName(), err)
		}
	}
	idx := latestIdx + 1
	meta := metav1.ObjectMeta{
		Name:      fmt.Sprintf(fleet.OverrideSnapshotNameFmt, override.Name, idx),
		Namespace: override.Namespace,
		Labels: map[string]string{
			fleet.OverrideTrackingLabel: override.Name,
			fleet.IsLatestSnapshotLabel: "true",
			fleet.OverrideIndexLabel:    strconv.Itoa(idx),
		},
	}
	if commit != "" {
		meta.Annotations = map[string]string{fleet.CommitAnnotation: commit}
	}
	s := build(meta, hash)
	if err := f.put(s); err != nil {
		return 0, fmt.Errorf("creating %s %s: %w", f.kind, meta.Name, err)
	}
	return 1, nil
}

// retire flips the latest snapshot of every override that is gone from Git
// (not live and not withheld) to not latest.
func (f family[S]) retire(all []S, live map[hub.Key]bool, withheld Withheld) error {
	for _, s := range all {
		parent := hub.Key{Namespace: s.GetNamespace(), Name: s.GetLabels()[fleet.OverrideTrackingLabel]}
		if live[parent] || s.GetLabels()[fleet.IsLatestSnapshotLabel] != "true" {
			continue
		}
		parentKind := fleet.KindClusterResourceOverride
		if f.kind == fleet.KindResourceOverrideSnapshot {
			parentKind = fleet.KindResourceOverride
		}
		if withheld != nil && withheld(parentKind, parent.Namespace, parent.Name) {
			continue
		}
		if err := f.setLatest(s, false); err != nil {
			return err
		}
	}
	return nil
}

func (f family[S]) setLatest(s S, latest bool) error {
	want := strconv.FormatBool(latest)
	if s.GetLabels()[fleet.IsLatestSnapshotLabel] == want {
		return nil
	}
	labels := s.GetLabels()
	labels[fleet.IsLatestSnapshotLabel] = want
	s.SetLabels(labels)
	if err := f.put(s); err != nil {
		return fmt.Errorf("setting %s=%s on %s %s: %w", fleet.IsLatestSnapshotLabel, want, f.kind, s.GetName(), err)
	}
	return nil
}

// of returns the snapshots of one override, oldest index first.
func (f family[S]) of(all []S, namespace, name string) []S {
	var out []S
	for _, s := range all {
		if s.GetNamespace() == namespace && s.GetLabels()[fleet.OverrideTrackingLabel] == name && index(s) >= 0 {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return index(out[i]) < index(out[j]) })
	return out
}

func index(s metav1.Object) int {
	i, err := strconv.Atoi(s.GetLabels()[fleet.OverrideIndexLabel])
	if err != nil {
		return -1
	}
	return i
}

// hashOf is the override spec hash: sha-256, in hex, of its JSON encoding
// (KubeFleet's resource.HashOf).
func hashOf(spec any) (string, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%x", sha256.Sum256(b)), nil
}
