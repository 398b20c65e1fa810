package embedded

import (
	"context"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// Restore loads the hub's state from its Store: every persisted object
// replaces the in-memory one, without writing anything back. It runs once,
// before the controller starts, so a restarted gitfleet (even on another
// machine with only the Git remote) resumes every run where it stood.
func (h *Hub) Restore(ctx context.Context) (int, error) {
	objs, err := h.store.Load(ctx)
	if err != nil {
		return 0, fmt.Errorf("loading hub state: %w", err)
	}
	h.mu.Lock()
	defer h.unlock()
	for _, o := range objs {
		if err := h.restoreLocked(o); err != nil {
			return 0, err
		}
	}
	h.planRevision++
	h.membersRevision++
	return len(objs), nil
}

func (h *Hub) restoreLocked(o runtime.Object) error {
	switch t := o.(type) {
	case *fleet.Placement:
		h.placements.put(t)
	case *fleet.PolicySnapshot:
		h.policies.put(t)
	case *fleet.ResourceSnapshot:
		h.snapshots.put(t)
	case *fleet.Binding:
		h.bindings.put(t)
	case *fleet.MemberCluster:
		h.members.put(t)
	case *fleet.UpdateStrategy:
		h.strategies.put(t)
	case *fleet.UpdateRun:
		h.runs.put(t)
	case *fleet.ApprovalRequest:
		h.approvals.put(t)
	case *fleet.ClusterResourceOverrideSnapshot:
		h.croSnapshots.put(t)
	case *fleet.ResourceOverrideSnapshot:
		h.roSnapshots.put(t)
	default:
		return fmt.Errorf("cannot restore object of type %T", o)
	}
	// Keep resourceVersions monotonic across restarts.
	if m, ok := o.(object); ok {
		if rv, err := strconv.ParseUint(m.GetResourceVersion(), 10, 64); err == nil && rv > h.resourceVersion {
			h.resourceVersion = rv
		}
	}
	return nil
}
