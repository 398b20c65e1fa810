package kube

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

func newEviction() *fleet.ClusterResourcePlacementEviction {
	return &fleet.ClusterResourcePlacementEviction{}
}

func newDisruptionBudget() *fleet.ClusterResourcePlacementDisruptionBudget {
	return &fleet.ClusterResourcePlacementDisruptionBudget{}
}

// GetEviction implements hub.Evictions.
func (h *Hub) GetEviction(_ context.Context, key hub.Key) (*fleet.ClusterResourcePlacementEviction, error) {
	e := newEviction()
	return e, h.get(fleet.KindClusterResourcePlacementEviction, key, e)
}

// ListEvictions implements hub.Evictions.
func (h *Hub) ListEvictions(context.Context) ([]*fleet.ClusterResourcePlacementEviction, error) {
	return list(h, fleet.KindClusterResourcePlacementEviction, "", true, labels.Everything(), newEviction)
}

// UpdateEvictionStatus implements hub.Evictions.
func (h *Hub) UpdateEvictionStatus(ctx context.Context, e *fleet.ClusterResourcePlacementEviction) error {
	return h.updateStatus(ctx, fleet.KindClusterResourcePlacementEviction, e)
}

// GetDisruptionBudget implements hub.Evictions. Upstream reads the budget
// past its cache, so an eviction never misses a budget created just
// before; this hub's informer has caught up with every write gitfleet
// made, and a budget a person creates with kubectl races an eviction
// there as it does upstream with any cache.
func (h *Hub) GetDisruptionBudget(_ context.Context, key hub.Key) (*fleet.ClusterResourcePlacementDisruptionBudget, error) {
	b := newDisruptionBudget()
	return b, h.get(fleet.KindClusterResourcePlacementDisruptionBudget, key, b)
}

// ListDisruptionBudgets implements hub.Desired.
func (h *Hub) ListDisruptionBudgets(context.Context) ([]*fleet.ClusterResourcePlacementDisruptionBudget, error) {
	return list(h, fleet.KindClusterResourcePlacementDisruptionBudget, "", true, labels.Everything(), newDisruptionBudget)
}
