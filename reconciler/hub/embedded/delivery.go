package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

// WorkCleanupFinalizer holds a delivered binding until its resources are off
// the member again (KubeFleet's work-cleanup finalizer). It is what makes a
// removal survive a restart: a deleted binding stays, terminating, until the
// removal has happened.
const WorkCleanupFinalizer = fleet.FleetPrefix + "work-cleanup"

// DriverSource chooses the delivery driver of a member cluster;
// *member.Drivers is the one every hub starts with.
type DriverSource interface {
	For(m *fleet.MemberCluster) member.Driver
}

var _ member.Reporter = (*Hub)(nil)

// deliveryState is the hub's side of delivery: what binding writes asked
// for and Commit has not done yet.
type deliveryState struct {
	drivers DriverSource
	members *member.Drivers
	log     *slog.Logger

	seq     uint64
	pending map[hub.Key]intent
	// configs remembers, per cluster delivered to, the annotations that
	// chose and shaped its driver, so a change re-delivers its bindings.
	configs map[string]string
	// checkedMembers is the members revision configs were last checked
	// against: without a member change there is nothing to re-deliver, and
	// a Commit stays O(pending) instead of O(fleet).
	checkedMembers uint64
}

type intentKind int

const (
	deliverIntent intentKind = iota + 1
	removeIntent
)

// intent is a side effect a binding write asked for: deliver the binding
// at its generation, or remove what it delivered.
type intent struct {
	kind    intentKind
	binding *fleet.Binding
	seq     uint64
}

func (h *Hub) initDelivery() {
	h.delivery = deliveryState{
		log:     slog.Default().With("component", "delivery"),
		pending: map[hub.Key]intent{},
		configs: map[string]string{},
	}
	h.delivery.members = member.NewDrivers(h.clock, h, h.delivery.log)
	h.delivery.drivers = h.delivery.members
	h.onBindingWritten = h.recordDelivery
}

// Members is the registry of member drivers the hub started with; it
// shows what each simulated member holds.
func (h *Hub) Members() *member.Drivers { return h.delivery.members }

// SetDrivers replaces how member drivers are chosen.
func (h *Hub) SetDrivers(d DriverSource) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.delivery.drivers = d
}

// PendingDeliveries is the number of deliveries and removals that wait for
// the next Commit.
func (h *Hub) PendingDeliveries() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.delivery.pending)
}

// recordDelivery is the onBindingWritten hook (called with the lock held):
// it turns binding writes into pending side effects. A binding that becomes
// Bound, or whose spec changes while Bound, is delivered at its new
// generation; one that starts terminating has its resources removed. The
// latest write wins: an intent replaces the pending one of the same binding.
func (h *Hub) recordDelivery(old, cur *fleet.Binding) {
	switch {
	case cur == nil:
		// Removed outright: it never carried the work-cleanup finalizer, so
		// nothing was delivered; a terminating one had its removal queued
		// when it started terminating.
		if old.DeletionTimestamp == nil {
			h.dropDeliveryLocked(keyOf(old))
		}
	case cur.DeletionTimestamp != nil:
		if old == nil || old.DeletionTimestamp == nil {
			h.queueLocked(removeIntent, cur)
		}
	case cur.Spec.State == fleet.BindingStateBound:
		if old == nil || old.Spec.State != fleet.BindingStateBound || old.Generation != cur.Generation {
			h.queueLocked(deliverIntent, cur)
		}
	default:
		// Scheduled or Unscheduled: nothing new goes out; what is on the
		// member stays until the binding is deleted.
		h.dropDeliveryLocked(keyOf(cur))
	}
}

func (h *Hub) queueLocked(kind intentKind, b *fleet.Binding) {
	h.delivery.seq++
	h.delivery.pending[keyOf(b)] = intent{kind: kind, binding: b.DeepCopy(), seq: h.delivery.seq}
}

func (h *Hub) dropDeliveryLocked(key hub.Key) {
	if p, ok := h.delivery.pending[key]; ok && p.kind == deliverIntent {
		delete(h.delivery.pending, key)
	}
}

// Commit ends a reconcile pass: it makes every change durable and then, and
// only then, performs the side effects the changes asked for — delivering
// bound snapshots to members and removing the resources of deleted
// bindings. The flush is urgent when side effects wait for it. If the flush
// fails nothing is delivered; the work stays pending for the next Commit.
// Delivery errors are returned after every pending item was tried.
func (h *Hub) Commit(ctx context.Context) error {
	h.mu.Lock()
	h.redeliverReconfiguredLocked()
	batch := h.guardPendingLocked()
	h.unlock()

	if err := h.store.Flush(ctx, len(batch) > 0); err != nil {
		return fmt.Errorf("flush the hub state: %w", err)
	}
	var errs []error
	for _, in := range batch {
		if err := h.dispatch(ctx, in); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// guardPendingLocked snapshots the pending intents (sorted, so delivery
// order is deterministic) and gives every binding about to be delivered the
// work-cleanup finalizer, in the same flush as the change that bound it.
func (h *Hub) guardPendingLocked() []intent {
	batch := make([]intent, 0, len(h.delivery.pending))
	for key, in := range h.delivery.pending {
		if in.kind == deliverIntent {
			cur, ok := h.bindings.peek(key)
			if !ok {
				delete(h.delivery.pending, key)
				continue
			}
			if !hasFinalizer(cur, WorkCleanupFinalizer) {
				next := cur.DeepCopy()
				next.Finalizers = append(next.Finalizers, WorkCleanupFinalizer)
				h.stamp(next, false)
				h.persist(h.bindings.put(next))
			}
		}
		batch = append(batch, in)
	}
	sort.Slice(batch, func(i, j int) bool { return batch[i].seq < batch[j].seq })
	return batch
}

// redeliverReconfiguredLocked queues a delivery of every Bound binding on a
// member whose driver annotations changed since it was last delivered to,
// so adding the driver annotation (or changing a simulation) takes effect
// without a new run.
func (h *Hub) redeliverReconfiguredLocked() {
	if h.delivery.checkedMembers == h.membersRevision {
		return
	}
	h.delivery.checkedMembers = h.membersRevision
	for cluster, seen := range h.delivery.configs {
		m, ok := h.members.peek(hub.Key{Name: cluster})
		if !ok || member.DriverConfig(m.Annotations) == seen {
			continue
		}
		h.delivery.configs[cluster] = member.DriverConfig(m.Annotations)
		bound := h.bindings.list(func(b *fleet.Binding) bool {
			return b.Spec.TargetCluster == cluster && b.Spec.State == fleet.BindingStateBound && b.DeletionTimestamp == nil
		})
		for _, b := range bound {
			if _, pending := h.delivery.pending[keyOf(b)]; !pending {
				h.queueLocked(deliverIntent, b)
			}
		}
	}
}

// Resync queues a delivery of every Bound binding and a removal for every
// terminating one. Call it after the hub was restored from its Store: the
// members' state is not persisted, so every decision is re-applied
// (idempotently) on the next Commit.
func (h *Hub) Resync() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, b := range h.bindings.list(nil) {
		switch {
		case b.DeletionTimestamp != nil:
			h.queueLocked(removeIntent, b)
		case b.Spec.State == fleet.BindingStateBound:
			h.queueLocked(deliverIntent, b)
		}
	}
}

// dispatch performs one flushed intent, unless a newer write replaced it
// (the newer one goes out with the next Commit, after its own flush).
func (h *Hub) dispatch(ctx context.Context, in intent) error {
	h.mu.Lock()
	key := keyOf(in.binding)
	if cur, ok := h.delivery.pending[key]; !ok || cur.seq != in.seq {
		h.mu.Unlock()
		return nil
	}
	delete(h.delivery.pending, key)
	d := member.Delivery{Binding: in.binding}
	if m, ok := h.members.get(hub.Key{Name: in.binding.Spec.TargetCluster}); ok {
		d.Member = m
		h.delivery.configs[m.Name] = member.DriverConfig(m.Annotations)
	}
	drivers := h.delivery.drivers
	var (
		snapshots  []*fleet.ResourceSnapshot
		cros       []*fleet.ClusterResourceOverrideSnapshot
		ros        []*fleet.ResourceOverrideSnapshot
		noOverride []string
	)
	if in.kind == deliverIntent {
		snapshots = h.snapshotGroupLocked(in.binding)
		cros, ros, noOverride = h.overrideSnapshotsLocked(in.binding)
	}
	h.mu.Unlock()

	log := h.delivery.log.With("binding", hub.KeyString(key), "cluster", d.Cluster(), "generation", d.Generation())
	switch in.kind {
	case deliverIntent:
		if d.Member == nil {
			log.Info("not delivering: the member cluster is not in the fleet")
			return nil
		}
		res, envs, failed := member.Prepare(in.binding, d.Member, snapshots, cros, ros, noOverride)
		if failed != nil {
			return h.reportNotDelivered(d, *failed)
		}
		d.Resources, d.Envelopes = res, envs
		if err := drivers.For(d.Member).Deliver(ctx, d); err != nil {
			h.requeue(in)
			return fmt.Errorf("deliver binding %s to member cluster %q: %w", key, d.Cluster(), err)
		}
		log.Debug("delivered", "snapshot", in.binding.Spec.ResourceSnapshotName)
	case removeIntent:
		if d.Member != nil {
			if err := drivers.For(d.Member).Remove(ctx, d); err != nil {
				h.requeue(in)
				return fmt.Errorf("remove binding %s from member cluster %q: %w", key, d.Cluster(), err)
			}
			log.Debug("removed")
		} else {
			log.Info("member cluster left the fleet; its resources stay on it")
		}
		h.release(key)
	}
	return nil
}

// requeue puts a failed intent back unless a newer one replaced it.
func (h *Hub) requeue(in intent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.delivery.pending[keyOf(in.binding)]; !ok {
		h.delivery.pending[keyOf(in.binding)] = in
	}
}

// release drops the work-cleanup finalizer of a terminating binding whose
// resources were removed; with no finalizer left the binding is gone.
func (h *Hub) release(key hub.Key) {
	h.mu.Lock()
	defer h.unlock()
	cur, ok := h.bindings.peek(key)
	if !ok || cur.DeletionTimestamp == nil || !hasFinalizer(cur, WorkCleanupFinalizer) {
		return
	}
	next := cur.DeepCopy()
	next.Finalizers = nil
	for _, f := range cur.Finalizers {
		if f != WorkCleanupFinalizer {
			next.Finalizers = append(next.Finalizers, f)
		}
	}
	if len(next.Finalizers) == 0 {
		h.removeBinding(cur)
		return
	}
	h.stamp(next, false)
	h.writeBinding(cur, next)
}

// snapshotGroupLocked returns copies of the binding's resource snapshot
// group: the master it names, then its sub-snapshots by subindex. Nil when
// the master does not exist.
func (h *Hub) snapshotGroupLocked(b *fleet.Binding) []*fleet.ResourceSnapshot {
	masterKey := hub.Key{Namespace: b.Namespace, Name: b.Spec.ResourceSnapshotName}
	master, ok := h.snapshots.get(masterKey)
	if !ok || b.Spec.ResourceSnapshotName == "" {
		return nil
	}
	placement, index := placementOf(master), master.Labels[fleet.ResourceIndexLabel]
	subs := h.snapshots.list(func(s *fleet.ResourceSnapshot) bool {
		_, isSub := s.Annotations[fleet.SubindexOfResourceSnapshotAnnotation]
		return isSub && placementOf(s) == placement && s.Labels[fleet.ResourceIndexLabel] == index
	})
	sort.SliceStable(subs, func(i, j int) bool {
		a, _ := strconv.Atoi(subs[i].Annotations[fleet.SubindexOfResourceSnapshotAnnotation])
		b, _ := strconv.Atoi(subs[j].Annotations[fleet.SubindexOfResourceSnapshotAnnotation])
		return a < b
	})
	return append([]*fleet.ResourceSnapshot{master}, subs...)
}

// reportNotDelivered reports why nothing of the binding was delivered
// (member.Prepare's condition) and leaves the member as it is.
func (h *Hub) reportNotDelivered(d member.Delivery, c metav1.Condition) error {
	h.delivery.log.Warn("not delivering", "binding", d.Key().String(), "condition", c.Type, "reason", c.Message)
	return h.ReportBindingStatus(d.Key(), d.Generation(), []metav1.Condition{c}, member.Placements{})
}

// ReportBindingStatus implements member.Reporter (see member.MergeReport):
// the report is ignored when the binding is gone or its generation is no
// longer generation; nothing is written when nothing changed.
func (h *Hub) ReportBindingStatus(key hub.Key, generation int64, conds []metav1.Condition, p member.Placements) error {
	h.mu.Lock()
	defer h.unlock()
	cur, ok := h.bindings.peek(key)
	if !ok {
		return nil
	}
	next := member.MergeReport(cur, generation, conds, p, h.clock.Now())
	if next == nil {
		return nil
	}
	h.stamp(next, false)
	h.writeBinding(cur, next)
	return nil
}

func hasFinalizer(o metav1.Object, f string) bool {
	for _, x := range o.GetFinalizers() {
		if x == f {
			return true
		}
	}
	return false
}
