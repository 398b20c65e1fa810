package embedded

import (
	"context"
	"fmt"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/hub"
)

var _ hub.OverrideSnapshots = (*Hub)(nil)

// ListClusterResourceOverrideSnapshots implements hub.OverrideSnapshots.
func (h *Hub) ListClusterResourceOverrideSnapshots(context.Context) ([]*fleet.ClusterResourceOverrideSnapshot, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.croSnapshots.list(nil), nil
}

// ListResourceOverrideSnapshots implements hub.OverrideSnapshots.
func (h *Hub) ListResourceOverrideSnapshots(context.Context) ([]*fleet.ResourceOverrideSnapshot, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.roSnapshots.list(nil), nil
}

// PutClusterResourceOverrideSnapshot implements hub.OverrideSnapshots.
func (h *Hub) PutClusterResourceOverrideSnapshot(_ context.Context, s *fleet.ClusterResourceOverrideSnapshot) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, exists := h.croSnapshots.peek(keyOf(s))
	setKind(s, fleet.KindClusterResourceOverrideSnapshot)
	h.stamp(s, !exists)
	h.croSnapshots.put(s)
	h.persist(s)
	return nil
}

// PutResourceOverrideSnapshot implements hub.OverrideSnapshots.
func (h *Hub) PutResourceOverrideSnapshot(_ context.Context, s *fleet.ResourceOverrideSnapshot) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, exists := h.roSnapshots.peek(keyOf(s))
	setKind(s, fleet.KindResourceOverrideSnapshot)
	h.stamp(s, !exists)
	h.roSnapshots.put(s)
	h.persist(s)
	return nil
}

// DeleteClusterResourceOverrideSnapshot implements hub.OverrideSnapshots.
func (h *Hub) DeleteClusterResourceOverrideSnapshot(_ context.Context, key hub.Key) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.croSnapshots.peek(key); !ok {
		return hub.NotFound(fleet.KindClusterResourceOverrideSnapshot, key)
	}
	h.croSnapshots.delete(key)
	h.forget(fleet.KindClusterResourceOverrideSnapshot, key)
	return nil
}

// DeleteResourceOverrideSnapshot implements hub.OverrideSnapshots.
func (h *Hub) DeleteResourceOverrideSnapshot(_ context.Context, key hub.Key) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.roSnapshots.peek(key); !ok {
		return hub.NotFound(fleet.KindResourceOverrideSnapshot, key)
	}
	h.roSnapshots.delete(key)
	h.forget(fleet.KindResourceOverrideSnapshot, key)
	return nil
}

// overrideSnapshotsLocked returns copies of the override snapshots a binding
// names, in its order; the names of the ones that no longer exist are in
// missing, as KubeFleet's work generator words them.
func (h *Hub) overrideSnapshotsLocked(b *fleet.Binding) (cros []*fleet.ClusterResourceOverrideSnapshot, ros []*fleet.ResourceOverrideSnapshot, missing []string) {
	for _, name := range b.Spec.ClusterResourceOverrideSnapshots {
		s, ok := h.croSnapshots.get(hub.Key{Name: name})
		if !ok {
			missing = append(missing, fmt.Sprintf("clusterResourceOverrideSnapshot %s is not found", name))
			continue
		}
		cros = append(cros, s)
	}
	for _, n := range b.Spec.ResourceOverrideSnapshots {
		s, ok := h.roSnapshots.get(hub.Key{Namespace: n.Namespace, Name: n.Name})
		if !ok {
			missing = append(missing, fmt.Sprintf("resourceOverrideSnapshot %s is not found", n))
			continue
		}
		ros = append(ros, s)
	}
	return cros, ros, missing
}
