package delivery

import (
	"context"
	"fmt"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
)

// Sources are what a binding's Works are made of, as the hub holds them.
type Sources struct {
	// Snapshots is the binding's resource snapshot group: the master it
	// names, then its sub-snapshots by subindex; empty when the master is
	// gone. They may be the hub's own (hub.ReadOnlyResourceSnapshots):
	// read them, never modify them.
	Snapshots []*fleet.ResourceSnapshot
	// ClusterResourceOverrides and ResourceOverrides are the override
	// snapshots the binding froze, in its order; Missing says, in
	// KubeFleet's words, which of them are gone.
	ClusterResourceOverrides []*fleet.ClusterResourceOverrideSnapshot
	ResourceOverrides        []*fleet.ResourceOverrideSnapshot
	Missing                  []string
}

// Lookup reads the Sources of b through the hub seam. A hub without
// override snapshots (hub.OverrideSnapshots) has none to apply.
func Lookup(ctx context.Context, h hub.ResourceSnapshots, b *fleet.Binding) (Sources, error) {
	var src Sources
	var err error
	if src.Snapshots, err = SnapshotGroup(ctx, h, b); err != nil {
		return Sources{}, err
	}
	oh, ok := h.(hub.OverrideSnapshots)
	if !ok {
		return src, nil
	}
	for _, name := range b.Spec.ClusterResourceOverrideSnapshots {
		s, err := oh.GetClusterResourceOverrideSnapshot(ctx, name)
		switch {
		case hub.IsNotFound(err):
			src.Missing = append(src.Missing, fmt.Sprintf("clusterResourceOverrideSnapshot %s is not found", name))
		case err != nil:
			return Sources{}, err
		default:
			src.ClusterResourceOverrides = append(src.ClusterResourceOverrides, s)
		}
	}
	for _, n := range b.Spec.ResourceOverrideSnapshots {
		s, err := oh.GetResourceOverrideSnapshot(ctx, hub.Key{Namespace: n.Namespace, Name: n.Name})
		switch {
		case hub.IsNotFound(err):
			src.Missing = append(src.Missing, fmt.Sprintf("resourceOverrideSnapshot %s is not found", n))
		case err != nil:
			return Sources{}, err
		default:
			src.ResourceOverrides = append(src.ResourceOverrides, s)
		}
	}
	return src, nil
}

// SnapshotGroup is b's resource snapshot group: the master it names, then
// its sub-snapshots by subindex; none when the master is gone.
func SnapshotGroup(ctx context.Context, h hub.ResourceSnapshots, b *fleet.Binding) ([]*fleet.ResourceSnapshot, error) {
	if b.Spec.ResourceSnapshotName == "" {
		return nil, nil
	}
	all, err := hub.ListResourceSnapshotsReadOnly(ctx, h, hub.Key{Namespace: b.Namespace, Name: b.Labels[fleet.PlacementTrackingLabel]})
	if err != nil {
		return nil, err
	}
	g, _ := resourcesnapshot.Of(all).Named(b.Spec.ResourceSnapshotName)
	return g.Snapshots(), nil
}
