package embedded

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// Evictions and disruption budgets are people's objects from Git. An
// eviction's status is persisted (status/evictions/<name>.yaml), so one
// executed before a restart is not executed again; budgets, like overrides,
// live in Git only and the admitter applies them again after a restart.

// applyEviction stores a person's eviction as `kubectl apply` would: its
// status is kept, a spec change (which admission refuses: the spec is
// immutable) raises the generation.
func (h *Hub) applyEviction(e *fleet.ClusterResourcePlacementEviction) {
	h.mu.Lock()
	defer h.unlock()
	setKind(e, fleet.KindClusterResourcePlacementEviction)
	next := e.DeepCopy()
	cur, exists := h.evictions.peek(keyOf(e))
	if exists {
		specChanged := !equality.Semantic.DeepEqual(cur.Spec, e.Spec)
		if !specChanged && equality.Semantic.DeepEqual(cur.Labels, e.Labels) &&
			equality.Semantic.DeepEqual(cur.Annotations, e.Annotations) {
			return
		}
		keepMeta(&next.ObjectMeta, &cur.ObjectMeta, specChanged)
		next.Status = *cur.Status.DeepCopy()
		h.stamp(next, false)
	} else {
		next.Status = fleet.PlacementEvictionStatus{}
		h.stamp(next, true)
	}
	h.persist(h.evictions.put(next))
	h.emit(hub.Event{Kind: hub.EventEviction, Key: keyOf(next), Placement: hub.Key{Name: next.Spec.PlacementName}})
}

func (h *Hub) deleteEviction(key hub.Key) {
	h.mu.Lock()
	defer h.unlock()
	if _, ok := h.evictions.peek(key); !ok {
		return
	}
	h.evictions.delete(key)
	h.forget(fleet.KindClusterResourcePlacementEviction, key)
}

// applyDisruptionBudget stores a person's budget. Nothing reacts to it: an
// eviction reads its placement's budget when it is executed.
func (h *Hub) applyDisruptionBudget(b *fleet.ClusterResourcePlacementDisruptionBudget) {
	applyOverride(h, b, &h.budgets, fleet.KindClusterResourcePlacementDisruptionBudget,
		func(b *fleet.ClusterResourcePlacementDisruptionBudget) any { return &b.Spec })
}

// GetEviction implements hub.Evictions.
func (h *Hub) GetEviction(_ context.Context, key hub.Key) (*fleet.ClusterResourcePlacementEviction, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.evictions.get(key)
	if !ok {
		return nil, hub.NotFound(fleet.KindClusterResourcePlacementEviction, key)
	}
	return e, nil
}

// ListEvictions implements hub.Evictions.
func (h *Hub) ListEvictions(context.Context) ([]*fleet.ClusterResourcePlacementEviction, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.evictions.list(nil), nil
}

// UpdateEvictionStatus implements hub.Evictions.
func (h *Hub) UpdateEvictionStatus(_ context.Context, e *fleet.ClusterResourcePlacementEviction) error {
	h.mu.Lock()
	defer h.unlock()
	cur, ok := h.evictions.peek(keyOf(e))
	if !ok {
		return hub.NotFound(fleet.KindClusterResourcePlacementEviction, keyOf(e))
	}
	if err := checkVersion(cur, e); err != nil {
		return err
	}
	next := cur.DeepCopy()
	next.Status = *e.Status.DeepCopy()
	h.stamp(next, false)
	e.ResourceVersion = next.ResourceVersion
	h.evictions.putOwned(next)
	h.persist(next)
	return nil
}

// ListDisruptionBudgets lists every budget, so that those removed from Git
// are deleted (hub.Desired).
func (h *Hub) ListDisruptionBudgets(context.Context) ([]*fleet.ClusterResourcePlacementDisruptionBudget, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.budgets.list(nil), nil
}

// GetDisruptionBudget implements hub.Evictions.
func (h *Hub) GetDisruptionBudget(_ context.Context, key hub.Key) (*fleet.ClusterResourcePlacementDisruptionBudget, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b, ok := h.budgets.get(key)
	if !ok {
		return nil, hub.NotFound(fleet.KindClusterResourcePlacementDisruptionBudget, key)
	}
	return b, nil
}
