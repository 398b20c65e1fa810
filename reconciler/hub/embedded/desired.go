package embedded

import (
	"context"
	"fmt"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// The methods below are the Git loop's view of the inputs (hub.Desired):
// one call per kind of write, whatever the kind of object.

// Apply takes a person's object, as the Apply* method of its kind does.
func (h *Hub) Apply(_ context.Context, obj hub.Object) error {
	switch o := obj.(type) {
	case *fleet.MemberCluster:
		h.ApplyMemberCluster(o)
	case *fleet.Placement:
		h.ApplyPlacement(o)
	case *fleet.UpdateStrategy:
		h.ApplyUpdateStrategy(o)
	case *fleet.UpdateRun:
		h.ApplyUpdateRun(o)
	case *fleet.ClusterResourceOverride:
		applyOverride(h, o, &h.cros, fleet.KindClusterResourceOverride,
			func(o *fleet.ClusterResourceOverride) any { return &o.Spec })
	case *fleet.ResourceOverride:
		applyOverride(h, o, &h.ros, fleet.KindResourceOverride,
			func(o *fleet.ResourceOverride) any { return &o.Spec })
	case *fleet.ClusterResourcePlacementEviction:
		h.applyEviction(o)
	case *fleet.ClusterResourcePlacementDisruptionBudget:
		h.applyDisruptionBudget(o)
	case *fleet.RolloutWindow:
		h.applyRolloutWindow(o)
	default:
		return fmt.Errorf("the hub takes no %T from people", obj)
	}
	return nil
}

// Delete deletes a person's object of kind, as the Delete* method of its
// kind does.
func (h *Hub) Delete(_ context.Context, kind string, key hub.Key) error {
	switch kind {
	case fleet.KindMemberCluster:
		h.DeleteMemberCluster(key.Name)
	case fleet.KindClusterResourcePlacement, fleet.KindResourcePlacement:
		h.DeletePlacement(key)
	case fleet.KindClusterStagedUpdateStrategy, fleet.KindStagedUpdateStrategy:
		h.DeleteUpdateStrategy(key)
	case fleet.KindClusterStagedUpdateRun, fleet.KindStagedUpdateRun:
		h.DeleteUpdateRun(key)
	case fleet.KindClusterResourceOverride:
		deleteOverride(h, key, &h.cros)
	case fleet.KindResourceOverride:
		deleteOverride(h, key, &h.ros)
	case fleet.KindClusterResourcePlacementEviction:
		h.deleteEviction(key)
	case fleet.KindClusterResourcePlacementDisruptionBudget:
		deleteOverride(h, key, &h.budgets)
	case fleet.KindRolloutWindow:
		h.deleteRolloutWindow(key)
	default:
		return fmt.Errorf("the hub deletes no %s for people", kind)
	}
	return nil
}

// Annotate sets one annotation of a run, placement, approval request or eviction,
// as the Annotate* method of its kind does.
func (h *Hub) Annotate(_ context.Context, kind string, key hub.Key, name, value string) error {
	switch kind {
	case fleet.KindClusterStagedUpdateRun, fleet.KindStagedUpdateRun:
		h.AnnotateUpdateRun(key, name, value)
	case fleet.KindClusterResourcePlacement, fleet.KindResourcePlacement:
		h.AnnotatePlacement(key, name, value)
	case fleet.KindClusterApprovalRequest, fleet.KindApprovalRequest:
		h.AnnotateApprovalRequest(key, name, value)
	case fleet.KindClusterResourcePlacementEviction:
		h.mu.Lock()
		defer h.unlock()
		annotate(h, &h.evictions, key, name, value)
	default:
		return fmt.Errorf("gitfleet annotates no %s", kind)
	}
	return nil
}

// Start restores the hub from its Store and queues a delivery of every
// bound binding (the members' state is not persisted), so the first Commit
// re-applies every decision.
func (h *Hub) Start(ctx context.Context) (int, error) {
	n, err := h.Restore(ctx)
	if err != nil {
		return 0, err
	}
	h.Resync()
	return n, nil
}

// Pending is the number of deliveries waiting for a Commit plus the
// member changes still under way.
func (h *Hub) Pending() int { return h.PendingDeliveries() + h.Members().Pending() }
