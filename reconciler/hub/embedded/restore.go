package embedded

import (
	"context"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime"
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
	restored := false
	for _, t := range h.tables() {
		if restored = t.restore(o); restored {
			break
		}
	}
	if !restored {
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

// restorer is a table as Restore sees it: one that takes the objects of
// its Go type.
type restorer interface {
	restore(runtime.Object) bool
}

// tables are the hub's tables of fleet objects, one per Go type (both
// kinds of a family share one); Restore puts an object in the table of its
// type, so a new table is restored once it is listed here.
func (h *Hub) tables() []restorer {
	return []restorer{&h.placements, &h.policies, &h.snapshots, &h.bindings,
		&h.members, &h.strategies, &h.runs, &h.approvals, &h.croSnapshots, &h.roSnapshots, &h.evictions}
}

// restore puts o in the table if it is of the table's type.
func (t *table[T]) restore(o runtime.Object) bool {
	x, ok := o.(T)
	if ok {
		t.put(x)
	}
	return ok
}
