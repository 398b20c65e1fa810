package kube

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

// The methods below are the rest of the Git loop's view of the hub
// (gitops.Hub): the status tree mirrors the hub's objects, bound bindings
// are delivered to members by gitfleet's drivers, and members' reports
// land on the bindings' status.

// WorkCleanupFinalizer holds a delivered binding until its resources are
// off the member again (KubeFleet's work-cleanup finalizer, as the
// embedded hub sets it).
const WorkCleanupFinalizer = fleet.FleetPrefix + "work-cleanup"

// newTyped returns an empty typed object of kind (the registry's Go type).
func newTyped(kind string) hub.Object {
	k, ok := fleet.LookupKind(kind)
	if !ok {
		return nil
	}
	o, _ := k.New().(hub.Object)
	return o
}

// mirrored is u as the embedded hub would persist it: typed, without what
// only an API server assigns (uid, managedFields), so the status tree holds
// the same bytes whichever hub wrote it.
func mirrored(kind string, u *unstructured.Unstructured) (runtime.Object, error) {
	o := newTyped(kind)
	if o == nil {
		return nil, fmt.Errorf("no typed object for %s", kind)
	}
	if err := fromUnstructured(u, o); err != nil {
		return nil, err
	}
	o.SetUID("")
	o.SetManagedFields(nil)
	o.GetObjectKind().SetGroupVersionKind(resources[kind].GroupVersion().WithKind(kind))
	return o, nil
}

// mirrorLocked writes one change to the store; h.mirrorMu is held.
func (h *Hub) mirrorLocked(kind string, u *unstructured.Unstructured, deleted bool) {
	if unmirrored[kind] {
		return
	}
	ref := hub.ObjectRef{Kind: kind, Key: hub.Key{Namespace: u.GetNamespace(), Name: u.GetName()}}
	if deleted {
		h.cfg.Store.Delete(ref)
		return
	}
	o, err := mirrored(kind, u)
	if err != nil {
		h.log.Error("mirroring a hub object into the status tree failed", "kind", kind, "name", u.GetName(), "err", err.Error())
		return
	}
	h.cfg.Store.Put(ref, o)
}

// mirrorEvent mirrors an informer event once Start has loaded the store.
func (h *Hub) mirrorEvent(kind string, u *unstructured.Unstructured, deleted bool) {
	if h.cfg.Store == nil {
		return
	}
	h.mirrorMu.Lock()
	defer h.mirrorMu.Unlock()
	if h.mirroring {
		h.mirrorLocked(kind, u, deleted)
	}
}

// Start implements gitops.Hub. The state is on the API server; the store
// (the status tree) is loaded, then made to mirror the hub: every object
// the hub holds is put, every stored one it does not hold is deleted.
// Every bound binding is queued for delivery and every terminating one for
// removal, as the members' state is not known after a start. It returns
// the number of objects on the hub.
func (h *Hub) Start(ctx context.Context) (int, error) {
	var loaded []runtime.Object
	if h.cfg.Store != nil {
		var err error
		if loaded, err = h.cfg.Store.Load(ctx); err != nil {
			return 0, fmt.Errorf("loading the status tree: %w", err)
		}
	}
	h.mirrorMu.Lock()
	h.mirroring = h.cfg.Store != nil
	held := map[hub.ObjectRef]bool{}
	n := 0
	for kind, in := range h.informers {
		for _, obj := range in.inf.GetStore().List() {
			u := obj.(*unstructured.Unstructured)
			n++
			if h.cfg.Store != nil {
				held[hub.ObjectRef{Kind: kind, Key: hub.Key{Namespace: u.GetNamespace(), Name: u.GetName()}}] = true
				h.mirrorLocked(kind, u, false)
			}
		}
	}
	for _, o := range loaded {
		m, ok := o.(hub.Object)
		if !ok {
			continue
		}
		ref := hub.ObjectRef{Kind: o.GetObjectKind().GroupVersionKind().Kind, Key: keyOf(m)}
		if _, served := resources[ref.Kind]; served && !held[ref] {
			h.cfg.Store.Delete(ref)
		}
	}
	h.mirrorMu.Unlock()
	h.resyncDeliveries()
	return n, nil
}

// Commit implements gitops.Hub: the hub's changes are durable on the API
// server already, so it asks flushLoop to hand the status tree what changed
// (batched, not urgent: no side effect waits for Git) and then performs the
// deliveries and removals binding changes asked for.
func (h *Hub) Commit(ctx context.Context) error {
	if h.cfg.Store != nil {
		select {
		case h.flushes <- struct{}{}:
		default: // a flush is asked for already; it takes this pass's changes too
		}
	}
	var errs []error
	for _, in := range h.takeIntents() {
		if err := h.dispatch(ctx, in); err != nil {
			h.requeue(in)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// flushLoop flushes the status tree whenever Commit asks, until New's
// context ends. A flush waits for the status commit in flight, which takes
// seconds when thousands of bindings changed: made in Commit, it held up
// every pass of the engine, and so the members' next deliveries, behind a
// push to Git that guards nothing on this hub (100 concurrent runs of 100
// clusters, BenchmarkPullFleet). A failed flush is logged; the daemon's
// next sync flushes again.
func (h *Hub) flushLoop() {
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-h.flushes:
		}
		if err := h.cfg.Store.Flush(h.ctx, false); err != nil && h.ctx.Err() == nil {
			h.log.Error("flushing the status tree failed", "err", err.Error())
		}
	}
}

// Pending implements gitops.Hub: deliveries waiting for a Commit, the
// member changes still under way and the runs' status writes not made yet
// (runstatus.go), which the status tree in Git waits for.
func (h *Hub) Pending() int {
	h.mu.Lock()
	n := len(h.intents)
	h.mu.Unlock()
	if h.members != nil {
		n += h.members.Pending()
	}
	return n + h.statusWritesPending()
}

// Members is the registry of member drivers deliveries go through (nil
// unless Config.Deliver).
func (h *Hub) Members() *member.Drivers { return h.members }

// ReportBindingStatus implements member.Reporter (member.MergeReport) with
// a status write, retried on a Conflict with another writer.
func (h *Hub) ReportBindingStatus(key hub.Key, generation int64, conds []metav1.Condition, p member.Placements) error {
	ctx := h.ctx
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := h.GetBinding(ctx, key)
		if hub.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		next := member.MergeReport(cur, generation, conds, p, h.clock.Now())
		if next == nil {
			return nil
		}
		return h.UpdateBindingStatus(ctx, next)
	})
}

// ---- delivery ----

type intentKind int

const (
	deliverIntent intentKind = iota + 1
	removeIntent
)

// intent is a side effect a binding change asked for.
type intent struct {
	kind intentKind
	key  hub.Key
	seq  uint64
}

// noteBinding turns a binding change the informer saw into an intent, as
// the embedded hub does for its writes: a binding that becomes Bound, or
// whose generation moves while Bound, is delivered; one that starts
// terminating has its resources removed.
func (h *Hub) noteBinding(old, cur *unstructured.Unstructured, deleted bool) {
	if h.members == nil {
		return
	}
	key := hub.Key{Namespace: cur.GetNamespace(), Name: cur.GetName()}
	state := func(u *unstructured.Unstructured) string {
		s, _, _ := unstructured.NestedString(u.Object, "spec", "state")
		return s
	}
	switch {
	case deleted:
		h.mu.Lock()
		if in, ok := h.intents[key]; ok && in.kind == deliverIntent {
			delete(h.intents, key)
		}
		h.mu.Unlock()
	case cur.GetDeletionTimestamp() != nil:
		if old == nil || old.GetDeletionTimestamp() == nil {
			h.queue(removeIntent, key)
		}
	case state(cur) == string(fleet.BindingStateBound):
		if old == nil || state(old) != string(fleet.BindingStateBound) || old.GetGeneration() != cur.GetGeneration() {
			h.queue(deliverIntent, key)
		}
	}
}

// noteMember delivers again every Bound binding of a member cluster whose
// driver annotations changed (member.DriverConfig), as the embedded hub
// does: a member given its driver, or moved from simulated to a real
// cluster, receives what it is bound to without a new run.
func (h *Hub) noteMember(old, cur *unstructured.Unstructured, deleted bool) {
	if h.members == nil || old == nil || deleted || member.DriverConfig(old.GetAnnotations()) == member.DriverConfig(cur.GetAnnotations()) {
		return
	}
	for _, kind := range []string{fleet.KindClusterResourceBinding, fleet.KindResourceBinding} {
		for _, obj := range h.informers[kind].inf.GetStore().List() {
			b := obj.(*unstructured.Unstructured)
			target, _, _ := unstructured.NestedString(b.Object, "spec", "targetCluster")
			state, _, _ := unstructured.NestedString(b.Object, "spec", "state")
			if target == cur.GetName() && state == string(fleet.BindingStateBound) && b.GetDeletionTimestamp() == nil {
				h.queue(deliverIntent, hub.Key{Namespace: b.GetNamespace(), Name: b.GetName()})
			}
		}
	}
}

func (h *Hub) queue(kind intentKind, key hub.Key) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	h.intents[key] = intent{kind: kind, key: key, seq: h.seq}
}

// takeIntents empties the queue, oldest first.
func (h *Hub) takeIntents() []intent {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]intent, 0, len(h.intents))
	for _, in := range h.intents {
		out = append(out, in)
	}
	clear(h.intents)
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

// requeue puts a failed intent back unless a newer one replaced it.
func (h *Hub) requeue(in intent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.intents[in.key]; !ok {
		h.intents[in.key] = in
	}
}

// resyncDeliveries queues every bound binding for delivery and every
// terminating one for removal.
func (h *Hub) resyncDeliveries() {
	if h.members == nil {
		return
	}
	for _, kind := range []string{fleet.KindClusterResourceBinding, fleet.KindResourceBinding} {
		for _, obj := range h.informers[kind].inf.GetStore().List() {
			h.noteBinding(nil, obj.(*unstructured.Unstructured), false)
		}
	}
}

// dispatch performs one intent on the binding as the cache holds it now.
func (h *Hub) dispatch(ctx context.Context, in intent) error {
	b, err := h.GetBinding(ctx, in.key)
	if hub.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var m *fleet.MemberCluster
	if mc := h.cached(fleet.KindMemberCluster, hub.Key{Name: b.Spec.TargetCluster}); mc != nil {
		m = &fleet.MemberCluster{}
		if err := fromUnstructured(mc, m); err != nil {
			return err
		}
	}
	d := member.Delivery{Binding: b, Member: m}
	log := h.log.With("binding", hub.KeyString(in.key), "cluster", d.Cluster(), "generation", d.Generation())
	switch in.kind {
	case deliverIntent:
		if b.DeletionTimestamp != nil || b.Spec.State != fleet.BindingStateBound {
			return nil
		}
		if m == nil {
			log.Info("not delivering: the member cluster is not in the fleet")
			return nil
		}
		if !hasFinalizer(b, WorkCleanupFinalizer) {
			b.Finalizers = append(b.Finalizers, WorkCleanupFinalizer)
			if err := h.UpdateBinding(ctx, b); err != nil {
				return fmt.Errorf("guarding binding %s with the work-cleanup finalizer: %w", hub.KeyString(in.key), err)
			}
		}
		snapshots, err := h.snapshotGroup(ctx, b)
		if err != nil {
			return err
		}
		cros, ros, missing := h.overrideSnapshots(b)
		res, envs, failed := member.Prepare(b, m, snapshots, cros, ros, missing)
		if failed != nil {
			return h.reportNotDelivered(d, *failed)
		}
		d.Resources, d.Envelopes = res, envs
		if err := h.members.For(m).Deliver(ctx, d); err != nil {
			return fmt.Errorf("deliver binding %s to member cluster %q: %w", hub.KeyString(in.key), d.Cluster(), err)
		}
		log.Debug("delivered", "snapshot", b.Spec.ResourceSnapshotName)
	case removeIntent:
		if m != nil {
			if err := h.members.For(m).Remove(ctx, d); err != nil {
				return fmt.Errorf("remove binding %s from member cluster %q: %w", hub.KeyString(in.key), d.Cluster(), err)
			}
		} else {
			log.Info("member cluster left the fleet; its resources stay on it")
		}
		if hasFinalizer(b, WorkCleanupFinalizer) {
			var keep []string
			for _, f := range b.Finalizers {
				if f != WorkCleanupFinalizer {
					keep = append(keep, f)
				}
			}
			b.Finalizers = keep
			if err := h.UpdateBinding(ctx, b); err != nil && !hub.IsNotFound(err) {
				return fmt.Errorf("releasing binding %s: %w", hub.KeyString(in.key), err)
			}
		}
	}
	return nil
}

// snapshotGroup is the binding's resource snapshot group: the master it
// names, then its sub-snapshots by subindex; none when the master is gone.
func (h *Hub) snapshotGroup(ctx context.Context, b *fleet.Binding) ([]*fleet.ResourceSnapshot, error) {
	if b.Spec.ResourceSnapshotName == "" {
		return nil, nil
	}
	all, err := h.ListResourceSnapshots(ctx, hub.Key{Namespace: b.Namespace, Name: b.Labels[fleet.PlacementTrackingLabel]})
	if err != nil {
		return nil, err
	}
	var master *fleet.ResourceSnapshot
	for _, s := range all {
		if s.Name == b.Spec.ResourceSnapshotName {
			master = s
		}
	}
	if master == nil {
		return nil, nil
	}
	index := master.Labels[fleet.ResourceIndexLabel]
	var subs []*fleet.ResourceSnapshot
	for _, s := range all {
		if _, isSub := s.Annotations[fleet.SubindexOfResourceSnapshotAnnotation]; isSub && s.Labels[fleet.ResourceIndexLabel] == index {
			subs = append(subs, s)
		}
	}
	sort.SliceStable(subs, func(i, j int) bool {
		a, _ := strconv.Atoi(subs[i].Annotations[fleet.SubindexOfResourceSnapshotAnnotation])
		b, _ := strconv.Atoi(subs[j].Annotations[fleet.SubindexOfResourceSnapshotAnnotation])
		return a < b
	})
	return append([]*fleet.ResourceSnapshot{master}, subs...), nil
}

// reportNotDelivered reports why nothing of the binding was delivered
// (member.Prepare's condition) and leaves the member as it is.
func (h *Hub) reportNotDelivered(d member.Delivery, c metav1.Condition) error {
	h.log.Warn("not delivering", "binding", hub.KeyString(d.Key()), "condition", c.Type, "reason", c.Message)
	return h.ReportBindingStatus(d.Key(), d.Generation(), []metav1.Condition{c}, member.Placements{})
}

// overrideSnapshots are the override snapshots the binding froze, as the
// embedded hub finds them; missing says which are gone.
func (h *Hub) overrideSnapshots(b *fleet.Binding) (cros []*fleet.ClusterResourceOverrideSnapshot, ros []*fleet.ResourceOverrideSnapshot, missing []string) {
	for _, name := range b.Spec.ClusterResourceOverrideSnapshots {
		s := &fleet.ClusterResourceOverrideSnapshot{}
		if err := h.get(fleet.KindClusterResourceOverrideSnapshot, hub.Key{Name: name}, s); err != nil {
			missing = append(missing, fmt.Sprintf("clusterResourceOverrideSnapshot %s is not found", name))
			continue
		}
		cros = append(cros, s)
	}
	for _, n := range b.Spec.ResourceOverrideSnapshots {
		s := &fleet.ResourceOverrideSnapshot{}
		if err := h.get(fleet.KindResourceOverrideSnapshot, hub.Key{Namespace: n.Namespace, Name: n.Name}, s); err != nil {
			missing = append(missing, fmt.Sprintf("resourceOverrideSnapshot %s is not found", n))
			continue
		}
		ros = append(ros, s)
	}
	return cros, ros, missing
}

func hasFinalizer(o metav1.Object, f string) bool {
	for _, x := range o.GetFinalizers() {
		if x == f {
			return true
		}
	}
	return false
}
