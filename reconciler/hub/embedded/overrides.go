package embedded

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

var _ hub.OverrideSnapshots = (*Hub)(nil)

// applyOverride stores a person's ClusterResourceOverride or
// ResourceOverride as `kubectl apply` would: a spec change raises the
// generation, an unchanged one writes nothing. Nothing reacts to it: runs
// read overrides through their snapshots, which the commit recorder makes.
func applyOverride[T object](h *Hub, o T, t *table[T], kind string, spec func(T) any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	setKind(o, kind)
	next := o.DeepCopyObject().(T)
	if cur, ok := t.peek(keyOf(o)); ok {
		specChanged := !equality.Semantic.DeepEqual(spec(cur), spec(o))
		if !specChanged && equality.Semantic.DeepEqual(cur.GetLabels(), o.GetLabels()) &&
			equality.Semantic.DeepEqual(cur.GetAnnotations(), o.GetAnnotations()) {
			return
		}
		keepMeta(next, cur, specChanged)
		h.stamp(next, false)
	} else {
		h.stamp(next, true)
	}
	t.putOwned(next)
}

// deleteOverride deletes a person's override; a missing one is no error.
func deleteOverride[T object](h *Hub, key hub.Key, t *table[T]) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t.delete(key)
}

// ListClusterResourceOverrides implements hub.Desired.
func (h *Hub) ListClusterResourceOverrides(context.Context) ([]*fleet.ClusterResourceOverride, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cros.list(nil), nil
}

// ListResourceOverrides implements hub.Desired.
func (h *Hub) ListResourceOverrides(context.Context) ([]*fleet.ResourceOverride, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ros.list(nil), nil
}

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
	h.persist(h.croSnapshots.put(s))
	return nil
}

// PutResourceOverrideSnapshot implements hub.OverrideSnapshots.
func (h *Hub) PutResourceOverrideSnapshot(_ context.Context, s *fleet.ResourceOverrideSnapshot) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, exists := h.roSnapshots.peek(keyOf(s))
	setKind(s, fleet.KindResourceOverrideSnapshot)
	h.stamp(s, !exists)
	h.persist(h.roSnapshots.put(s))
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

// GetClusterResourceOverrideSnapshot implements hub.OverrideSnapshots.
func (h *Hub) GetClusterResourceOverrideSnapshot(_ context.Context, name string) (*fleet.ClusterResourceOverrideSnapshot, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.croSnapshots.get(hub.Key{Name: name})
	if !ok {
		return nil, hub.NotFound(fleet.KindClusterResourceOverrideSnapshot, hub.Key{Name: name})
	}
	return s, nil
}

// GetResourceOverrideSnapshot implements hub.OverrideSnapshots.
func (h *Hub) GetResourceOverrideSnapshot(_ context.Context, key hub.Key) (*fleet.ResourceOverrideSnapshot, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.roSnapshots.get(key)
	if !ok {
		return nil, hub.NotFound(fleet.KindResourceOverrideSnapshot, key)
	}
	return s, nil
}
