// Package snapshothistory is the one rule by which old snapshots go: a
// snapshot that a run or a binding uses is never deleted, and a history
// limit (a placement's revisionHistoryLimit for resource snapshots, the
// override controllers' 10 for override snapshots) counts only the
// snapshots nothing uses. KubeFleet counts every snapshot, so a run that
// soaks while more commits than the limit arrive loses the snapshot it
// rolls out and can deliver nothing more. Policy snapshots are never
// deleted at all.
//
// A run uses a snapshot until it has finished (succeeded or failed): a
// stopped run may resume. It uses the resource snapshot index of its spec
// and the one it recorded (resourceSnapshotIndexUsed), and the override
// snapshots it froze per cluster. A binding uses the resource snapshot and
// the override snapshots of its spec.
package snapshothistory

import (
	"context"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// Hub is what the uses are read from.
type Hub interface {
	hub.Placements
	hub.Bindings
	hub.UpdateRuns
}

// Expired returns the snapshots of a history, given oldest first, that go
// when a new latest one is added: the oldest of those nothing uses, so that
// with the new one at most limit unused snapshots remain. used is asked
// only when the history is full, so a history below its limit costs no
// reads.
func Expired[S any](history []S, limit int, used func(S) (bool, error)) ([]S, error) {
	if limit < 1 {
		limit = 1
	}
	if len(history) < limit {
		return nil, nil
	}
	var expired []S
	unused := 1 // the new latest
	for i := len(history) - 1; i >= 0; i-- {
		u, err := used(history[i])
		if err != nil {
			return nil, err
		}
		if u {
			continue
		}
		if unused < limit {
			unused++
			continue
		}
		expired = append(expired, history[i])
	}
	// Oldest first, as given.
	for i, j := 0, len(expired)-1; i < j; i, j = i+1, j-1 {
		expired[i], expired[j] = expired[j], expired[i]
	}
	return expired, nil
}

// Uses answers which snapshots runs and bindings use. It reads the hub on
// the first question and keeps what it read, so one Uses serves one
// recording of a commit; it must not outlive it.
type Uses struct {
	ctx context.Context
	h   Hub

	runs     []*fleet.UpdateRun
	runsRead bool
	// bindings holds, per placement read, its bindings.
	bindings    map[hub.Key][]*fleet.Binding
	allBindings bool
	// The override snapshots used, by name and by key.
	clusterOverrides map[string]bool
	overrides        map[hub.Key]bool
}

// Of returns the uses of the snapshots of h, read when first asked.
func Of(ctx context.Context, h Hub) *Uses {
	return &Uses{ctx: ctx, h: h, bindings: map[hub.Key][]*fleet.Binding{}}
}

// unfinishedRunsReadOnly is implemented by hubs that list the runs that
// have not finished without copying them, and without reading the
// finished ones (the embedded hub, which keeps those packed); a run's
// status at 10,000 clusters is large.
type unfinishedRunsReadOnly interface {
	ListUnfinishedUpdateRunsReadOnly(ctx context.Context) ([]*fleet.UpdateRun, error)
}

// activeRuns are the runs that have not finished.
func (u *Uses) activeRuns() ([]*fleet.UpdateRun, error) {
	if u.runsRead {
		return u.runs, nil
	}
	var all []*fleet.UpdateRun
	var err error
	if ro, ok := u.h.(unfinishedRunsReadOnly); ok {
		all, err = ro.ListUnfinishedUpdateRunsReadOnly(u.ctx)
	} else {
		all, err = u.h.ListUpdateRuns(u.ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("listing the runs that may use a snapshot: %w", err)
	}
	for _, r := range all {
		if !Finished(r) {
			u.runs = append(u.runs, r)
		}
	}
	u.runsRead = true
	return u.runs, nil
}

// Finished reports whether a run has succeeded or failed: neither a
// stopped run nor one still initializing has.
func Finished(r *fleet.UpdateRun) bool {
	for _, c := range r.Status.Conditions {
		if c.Type == fleet.StagedUpdateRunConditionSucceeded {
			return c.Status == metav1.ConditionTrue || c.Status == metav1.ConditionFalse
		}
	}
	return false
}

func (u *Uses) bindingsOf(placement hub.Key) ([]*fleet.Binding, error) {
	if b, ok := u.bindings[placement]; ok {
		return b, nil
	}
	b, err := hub.ListBindingsReadOnly(u.ctx, u.h, placement)
	if err != nil {
		return nil, fmt.Errorf("listing the bindings of placement %s: %w", hub.KeyString(placement), err)
	}
	u.bindings[placement] = b
	return b, nil
}

// everyBinding returns the bindings of every placement.
func (u *Uses) everyBinding() ([]*fleet.Binding, error) {
	if !u.allBindings {
		ps, err := u.h.ListPlacements(u.ctx)
		if err != nil {
			return nil, fmt.Errorf("listing the placements whose bindings may use a snapshot: %w", err)
		}
		for _, p := range ps {
			if _, err := u.bindingsOf(hub.Key{Namespace: p.Namespace, Name: p.Name}); err != nil {
				return nil, err
			}
		}
		u.allBindings = true
	}
	var out []*fleet.Binding
	for _, b := range u.bindings {
		out = append(out, b...)
	}
	return out, nil
}

// ResourceGroup reports whether the resource snapshot group at index of
// placement is used; names are the group's snapshots (a binding names
// the master).
func (u *Uses) ResourceGroup(placement hub.Key, index int, names []string) (bool, error) {
	runs, err := u.activeRuns()
	if err != nil {
		return false, err
	}
	idx := strconv.Itoa(index)
	for _, r := range runs {
		if r.Namespace != placement.Namespace || r.Spec.PlacementName != placement.Name {
			continue
		}
		if r.Spec.ResourceSnapshotIndex == idx || r.Status.ResourceSnapshotIndexUsed == idx {
			return true, nil
		}
	}
	bindings, err := u.bindingsOf(placement)
	if err != nil {
		return false, err
	}
	for _, b := range bindings {
		for _, n := range names {
			if b.Spec.ResourceSnapshotName == n {
				return true, nil
			}
		}
	}
	return false, nil
}

// ClusterResourceOverride reports whether the ClusterResourceOverrideSnapshot
// name is used.
func (u *Uses) ClusterResourceOverride(name string) (bool, error) {
	if err := u.readOverrides(); err != nil {
		return false, err
	}
	return u.clusterOverrides[name], nil
}

// ResourceOverride reports whether the ResourceOverrideSnapshot key is used.
func (u *Uses) ResourceOverride(key hub.Key) (bool, error) {
	if err := u.readOverrides(); err != nil {
		return false, err
	}
	return u.overrides[key], nil
}

// readOverrides gathers the override snapshots runs froze per cluster and
// bindings carry.
func (u *Uses) readOverrides() error {
	if u.overrides != nil {
		return nil
	}
	runs, err := u.activeRuns()
	if err != nil {
		return err
	}
	bindings, err := u.everyBinding()
	if err != nil {
		return err
	}
	crs, rs := map[string]bool{}, map[hub.Key]bool{}
	add := func(c []string, r []fleet.NamespacedName) {
		for _, n := range c {
			crs[n] = true
		}
		for _, n := range r {
			rs[hub.Key{Namespace: n.Namespace, Name: n.Name}] = true
		}
	}
	for _, r := range runs {
		for _, st := range r.Status.StagesStatus {
			for _, c := range st.Clusters {
				add(c.ClusterResourceOverrideSnapshots, c.ResourceOverrideSnapshots)
			}
		}
	}
	for _, b := range bindings {
		add(b.Spec.ClusterResourceOverrideSnapshots, b.Spec.ResourceOverrideSnapshots)
	}
	u.clusterOverrides, u.overrides = crs, rs
	return nil
}
