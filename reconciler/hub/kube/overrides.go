package kube

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

var _ hub.OverrideSnapshots = (*Hub)(nil)

func newCROSnapshot() *fleet.ClusterResourceOverrideSnapshot {
	return &fleet.ClusterResourceOverrideSnapshot{}
}
func newROSnapshot() *fleet.ResourceOverrideSnapshot { return &fleet.ResourceOverrideSnapshot{} }

// ListClusterResourceOverrideSnapshots implements hub.OverrideSnapshots.
func (h *Hub) ListClusterResourceOverrideSnapshots(context.Context) ([]*fleet.ClusterResourceOverrideSnapshot, error) {
	return list(h, fleet.KindClusterResourceOverrideSnapshot, "", true, labels.Everything(), newCROSnapshot)
}

// ListResourceOverrideSnapshots implements hub.OverrideSnapshots.
func (h *Hub) ListResourceOverrideSnapshots(context.Context) ([]*fleet.ResourceOverrideSnapshot, error) {
	return list(h, fleet.KindResourceOverrideSnapshot, "", true, labels.Everything(), newROSnapshot)
}

// GetClusterResourceOverrideSnapshot implements hub.OverrideSnapshots.
func (h *Hub) GetClusterResourceOverrideSnapshot(_ context.Context, name string) (*fleet.ClusterResourceOverrideSnapshot, error) {
	s := newCROSnapshot()
	return s, h.get(fleet.KindClusterResourceOverrideSnapshot, hub.Key{Name: name}, s)
}

// GetResourceOverrideSnapshot implements hub.OverrideSnapshots.
func (h *Hub) GetResourceOverrideSnapshot(_ context.Context, key hub.Key) (*fleet.ResourceOverrideSnapshot, error) {
	s := newROSnapshot()
	return s, h.get(fleet.KindResourceOverrideSnapshot, key, s)
}

// PutClusterResourceOverrideSnapshot implements hub.OverrideSnapshots.
func (h *Hub) PutClusterResourceOverrideSnapshot(ctx context.Context, s *fleet.ClusterResourceOverrideSnapshot) error {
	return h.put(ctx, fleet.KindClusterResourceOverrideSnapshot, s, func() object { return newCROSnapshot() })
}

// PutResourceOverrideSnapshot implements hub.OverrideSnapshots.
func (h *Hub) PutResourceOverrideSnapshot(ctx context.Context, s *fleet.ResourceOverrideSnapshot) error {
	return h.put(ctx, fleet.KindResourceOverrideSnapshot, s, func() object { return newROSnapshot() })
}

// DeleteClusterResourceOverrideSnapshot implements hub.OverrideSnapshots.
func (h *Hub) DeleteClusterResourceOverrideSnapshot(ctx context.Context, key hub.Key) error {
	return h.remove(ctx, fleet.KindClusterResourceOverrideSnapshot, key)
}

// DeleteResourceOverrideSnapshot implements hub.OverrideSnapshots.
func (h *Hub) DeleteResourceOverrideSnapshot(ctx context.Context, key hub.Key) error {
	return h.remove(ctx, fleet.KindResourceOverrideSnapshot, key)
}

// put creates o, or replaces the object of its key (the commit recorder is
// the only writer of override snapshots).
func (h *Hub) put(ctx context.Context, kind string, o object, newT func() object) error {
	if h.cached(kind, keyOf(o)) == nil {
		return h.create(ctx, kind, o)
	}
	o.SetResourceVersion("")
	return h.update(ctx, kind, o, newT)
}
