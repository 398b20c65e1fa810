// Package resourcesnapshot is a placement's resource snapshots as one
// concept (KubeFleet's ClusterResourceSnapshot and ResourceSnapshot): how
// they form groups by index, which group is the latest, how a group is
// made from selected resources (Ensure, Hash, the split into
// sub-snapshots), what a group holds (Manifests) and what one group
// changes against another (Diff). Every other package reads snapshots
// through it, so they all agree on what a group is.
package resourcesnapshot

import (
	"slices"
	"strconv"
	"strings"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// Group is the snapshots of one index of a placement: the master, which
// carries the group's hash, count, commit and is-latest label, and the
// sub-snapshots that hold what did not fit into it.
type Group struct {
	Index int
	// Master is the snapshot with the resource-hash annotation and no
	// subindex (KubeFleet: "only master has this annotation"); nil when
	// the group has none. When several claim it, the first by name.
	Master *fleet.ResourceSnapshot
	// Subs are the sub-snapshots by subindex; of two with the same
	// subindex the first by name.
	Subs []*fleet.ResourceSnapshot
	// All is every snapshot labelled with the index, sorted by name: the
	// master and subs, and those that are neither (a second master, a
	// snapshot with neither annotation or a subindex that is no number),
	// which hold nothing of the group but go with it when it is pruned.
	All []*fleet.ResourceSnapshot
}

// Snapshots are the snapshots that hold the group's resources, in their
// order: the master, then the sub-snapshots by subindex. None without a
// master.
func (g Group) Snapshots() []*fleet.ResourceSnapshot {
	if g.Master == nil {
		return nil
	}
	return append([]*fleet.ResourceSnapshot{g.Master}, g.Subs...)
}

// Complete reports whether every snapshot of the group exists: the master
// and the sub-snapshots 0 to n-2 of the n its
// number-of-resource-snapshots annotation counts. A master without a
// count needs its sub-snapshots numbered from 0 without a gap.
func (g Group) Complete() bool {
	if g.Master == nil {
		return false
	}
	want := len(g.Subs)
	if n, err := strconv.Atoi(g.Master.Annotations[fleet.NumberOfResourceSnapshotsAnnotation]); err == nil {
		want = n - 1
	}
	if len(g.Subs) < want {
		return false
	}
	for i := 0; i < want; i++ {
		if n, _ := subindex(g.Subs[i]); n != i {
			return false
		}
	}
	return true
}

// Hash is the group's resource hash, from its master ("" without one).
func (g Group) Hash() string { return g.masterAnnotation(fleet.ResourceGroupHashAnnotation) }

// Commit is the commit the group was recorded from, from its master (""
// without one, or when the hub made it).
func (g Group) Commit() string { return g.masterAnnotation(fleet.CommitAnnotation) }

func (g Group) masterAnnotation(key string) string {
	if g.Master == nil {
		return ""
	}
	return g.Master.Annotations[key]
}

// Groups are a placement's snapshot groups by index, lowest first.
type Groups []Group

// Of groups the snapshots of one placement (hub.ListResourceSnapshots)
// by index. A snapshot whose resource-index label is missing, not a
// number or negative is in no group (KubeFleet's
// ExtractResourceIndexFromResourceSnapshot refuses it). A snapshot being
// deleted still counts until it is gone, as in KubeFleet's lists.
func Of(snapshots []*fleet.ResourceSnapshot) Groups {
	byIndex := map[int][]*fleet.ResourceSnapshot{}
	for _, s := range snapshots {
		if i, ok := Index(s); ok {
			byIndex[i] = append(byIndex[i], s)
		}
	}
	gs := make(Groups, 0, len(byIndex))
	for i, all := range byIndex {
		slices.SortFunc(all, func(a, b *fleet.ResourceSnapshot) int { return strings.Compare(a.Name, b.Name) })
		g := Group{Index: i, All: all}
		for _, s := range all {
			switch n, isSub := subindex(s); {
			case isSub && n >= 0:
				g.Subs = append(g.Subs, s)
			case !isSub && IsMaster(s) && g.Master == nil:
				g.Master = s
			}
		}
		// Stable: of two with one subindex, the first by name comes first
		// and is kept.
		slices.SortStableFunc(g.Subs, func(a, b *fleet.ResourceSnapshot) int {
			x, _ := subindex(a)
			y, _ := subindex(b)
			return x - y
		})
		g.Subs = slices.CompactFunc(g.Subs, func(a, b *fleet.ResourceSnapshot) bool {
			x, _ := subindex(a)
			y, _ := subindex(b)
			return x == y
		})
		gs = append(gs, g)
	}
	slices.SortFunc(gs, func(a, b Group) int { return a.Index - b.Index })
	return gs
}

// ByPlacement groups the snapshots of many placements (status/ holds
// every placement's) by the placement that tracks them, Of each.
func ByPlacement(snapshots []*fleet.ResourceSnapshot) map[hub.Key]Groups {
	byKey := map[hub.Key][]*fleet.ResourceSnapshot{}
	for _, s := range snapshots {
		k := hub.Key{Namespace: s.Namespace, Name: s.Labels[fleet.PlacementTrackingLabel]}
		byKey[k] = append(byKey[k], s)
	}
	out := make(map[hub.Key]Groups, len(byKey))
	for k, snaps := range byKey {
		out[k] = Of(snaps)
	}
	return out
}

// At is the group with the index.
func (gs Groups) At(index int) (Group, bool) {
	i, ok := slices.BinarySearchFunc(gs, index, func(g Group, index int) int { return g.Index - index })
	if !ok {
		return Group{}, false
	}
	return gs[i], true
}

// Find is the group whose index a label or a run's
// resourceSnapshotIndex(Used) writes as index; none when index is not an
// index.
func (gs Groups) Find(index string) (Group, bool) {
	i, ok := parseIndex(index)
	if !ok {
		return Group{}, false
	}
	return gs.At(i)
}

// Named is the group whose master is named name, as a binding names its
// snapshot; none when that snapshot is gone (pruned) or is no master.
func (gs Groups) Named(name string) (Group, bool) {
	if name == "" {
		return Group{}, false
	}
	for _, g := range gs {
		if g.Master != nil && g.Master.Name == name {
			return g, true
		}
	}
	return Group{}, false
}

// Latest is the group whose master is labelled is-latest-snapshot=true
// (KubeFleet's FetchLatestMasterResourceSnapshot), the highest index when
// several are; none when no master is labelled, e.g. between Ensure
// unmarking the old latest and creating the new one.
func (gs Groups) Latest() (Group, bool) {
	for i := len(gs) - 1; i >= 0; i-- {
		if m := gs[i].Master; m != nil && m.Labels[fleet.IsLatestSnapshotLabel] == "true" {
			return gs[i], true
		}
	}
	return Group{}, false
}

// Last is the group with the highest index, latest or not, master or not.
func (gs Groups) Last() (Group, bool) {
	if len(gs) == 0 {
		return Group{}, false
	}
	return gs[len(gs)-1], true
}

// Before is the group with the highest index below index.
func (gs Groups) Before(index int) (Group, bool) {
	i, _ := slices.BinarySearchFunc(gs, index, func(g Group, index int) int { return g.Index - index })
	if i == 0 {
		return Group{}, false
	}
	return gs[i-1], true
}

// Next is the index the next group gets: one above the highest index in
// use, 0 for the first.
func (gs Groups) Next() int {
	if last, ok := gs.Last(); ok {
		return last.Index + 1
	}
	return 0
}

// Index is the group index of s, its resource-index label; false when the
// label is missing, not a number or negative.
func Index(s *fleet.ResourceSnapshot) (int, bool) {
	v, ok := s.Labels[fleet.ResourceIndexLabel]
	if !ok {
		return 0, false
	}
	return parseIndex(v)
}

// IsMaster reports whether s is the master of its group: it carries the
// group's resource hash and no subindex.
func IsMaster(s *fleet.ResourceSnapshot) bool {
	_, isSub := subindex(s)
	return !isSub && s.Annotations[fleet.ResourceGroupHashAnnotation] != ""
}

// subindex is the place of a sub-snapshot in its group (-1 when its
// annotation is not a number >= 0); isSub is false for a snapshot without
// the annotation or with an empty one.
func subindex(s *fleet.ResourceSnapshot) (int, bool) {
	v := s.Annotations[fleet.SubindexOfResourceSnapshotAnnotation]
	if v == "" { // absent or empty, as KubeFleet's ExtractSubindexFromResourceSnapshot reads it
		return 0, false
	}
	n, ok := parseIndex(v)
	if !ok {
		return -1, true
	}
	return n, true
}

func parseIndex(v string) (int, bool) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}
