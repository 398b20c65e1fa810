package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/gitfleet/gitfleet/reconciler/delivery"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

// The embedded hub stores; delivery (reconciler/delivery) decides what
// members receive. The hub tells it about binding writes (under the
// lock, see writeBinding) and member changes, and Commit runs it only
// once the changes that asked for a delivery are durable.

func (h *Hub) initDelivery() {
	h.delivery = delivery.New(delivery.Config{Hub: h, Clock: h.clock, Log: slog.Default().With("component", "delivery")})
	h.onBindingWritten = h.delivery.Observe
}

// Delivery implements hub.Loop: member drivers report to the hub's
// delivery controller.
func (h *Hub) Delivery() hub.Reporter { return h.delivery }

// Members is the registry of member drivers the hub started with; it
// shows what each simulated member holds.
func (h *Hub) Members() *member.Drivers { return h.delivery.Members() }

// SetDrivers replaces how member drivers are chosen.
func (h *Hub) SetDrivers(d delivery.DriverSource) { h.delivery.SetDrivers(d) }

// PendingDeliveries is the number of deliveries and removals that wait for
// the next Commit.
func (h *Hub) PendingDeliveries() int { return h.delivery.Pending() }

// Commit ends a reconcile pass: it makes every change durable and then, and
// only then, performs the side effects the changes asked for — delivering
// bound snapshots to members and removing the resources of deleted
// bindings. Every binding about to be delivered is guarded by the
// work-cleanup finalizer in the same flush. The flush is urgent when side
// effects wait for it. If the flush fails nothing is delivered; the work
// stays pending for the next Commit. Delivery errors are returned after
// every pending item was tried. It is Seal and its finish at once.
func (h *Hub) Commit(ctx context.Context) error {
	finish, err := h.Seal(ctx)
	if err != nil {
		return err
	}
	return finish(ctx)
}

var _ hub.Sealer = (*Hub)(nil)

// Seal implements hub.Sealer: the flush is fixed now, under the caller's
// hold on the hub, and travels in finish while passes write again; finish
// then delivers the bindings as they were sealed, so no side effect
// outruns its write. A store that cannot seal (memory, discard) flushes in
// finish.
func (h *Hub) Seal(ctx context.Context) (finish func(context.Context) error, err error) {
	h.noteMemberChanges()
	if err := h.delivery.Guard(ctx); err != nil {
		return nil, err
	}
	urgent := h.delivery.Pending() > 0
	flush := func(ctx context.Context) error { return h.store.Flush(ctx, urgent) }
	if store, ok := h.store.(hub.SealingStore); ok {
		flush = store.Seal(urgent)
	}
	sealed, serr := h.delivery.Seal(ctx)
	return func(ctx context.Context) error {
		if err := flush(ctx); err != nil {
			return fmt.Errorf("flush the hub state: %w", err)
		}
		return errors.Join(serr, h.delivery.DispatchSealed(ctx, sealed))
	}, nil
}

// noteMemberChanges tells delivery about the member clusters when any
// changed since the last Commit, so a member given a driver annotation
// receives what it is bound to; without a member change a Commit stays
// O(pending) instead of O(fleet).
func (h *Hub) noteMemberChanges() {
	h.mu.Lock()
	if h.deliveredMembers == h.membersRevision {
		h.mu.Unlock()
		return
	}
	h.deliveredMembers = h.membersRevision
	members := h.members.listShared(nil)
	h.mu.Unlock()
	for _, m := range members {
		h.delivery.MemberChanged(m)
	}
}

// Resync queues a delivery of every Bound binding and a removal for every
// terminating one. Call it after the hub was restored from its Store: the
// members' state is not persisted, so every decision is re-applied
// (idempotently) on the next Commit.
func (h *Hub) Resync() {
	h.mu.Lock()
	bindings := h.bindings.listShared(nil)
	h.mu.Unlock()
	h.delivery.Resync(bindings)
}
