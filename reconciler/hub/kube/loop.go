package kube

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

// The methods below are the rest of the Git loop's view of the hub
// (hub.Loop): the status tree mirrors the hub's objects, bound bindings
// are delivered to members by gitfleet's drivers, and members' reports
// land on the bindings' status.

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
// only an API server assigns (uid; the cache keeps no managedFields,
// stripManagedFields), so the status tree holds the same bytes whichever
// hub wrote it.
func mirrored(kind string, u *unstructured.Unstructured) (runtime.Object, error) {
	o := newTyped(kind)
	if o == nil {
		return nil, fmt.Errorf("no typed object for %s", kind)
	}
	if err := fromUnstructured(u, o); err != nil {
		return nil, err
	}
	return mirroredTyped(kind, o), nil
}

// mirroredTyped is o, typed, as mirrored returns it.
func mirroredTyped(kind string, o hub.Object) runtime.Object {
	o.SetUID("")
	o.GetObjectKind().SetGroupVersionKind(resources[kind].GroupVersion().WithKind(kind))
	return o
}

// mirrorLocked writes one change to the store; h.mirrorMu is held. A run
// the cache keeps as a husk is read whole from the API server (husk.go):
// the status tree never shows a run without its clusters.
func (h *Hub) mirrorLocked(ctx context.Context, kind string, u *unstructured.Unstructured, deleted bool) {
	if unmirrored[kind] {
		return
	}
	ref := hub.ObjectRef{Kind: kind, Key: hub.Key{Namespace: u.GetNamespace(), Name: u.GetName()}}
	if deleted {
		h.cfg.Store.Delete(ref)
		return
	}
	var o runtime.Object
	var err error
	if isRunKind(kind) && isHusk(u) {
		var r *fleet.UpdateRun
		if r, err = h.wholeRun(ctx, kind, ref.Key, u.GetResourceVersion()); hub.IsNotFound(err) {
			return // deleted since: its deletion comes next
		}
		if err == nil {
			o = mirroredTyped(kind, r)
		}
	} else {
		o, err = mirrored(kind, u)
	}
	if err != nil {
		if ctx.Err() == nil { // not the hub shutting down
			h.log.Error("mirroring a hub object into the status tree failed", "kind", kind, "name", u.GetName(), "err", err.Error())
		}
		return
	}
	h.cfg.Store.Put(ref, o)
}

// mirrorEvent mirrors an informer event once Start has loaded the store,
// and reports whether it handed the store a change.
func (h *Hub) mirrorEvent(kind string, u *unstructured.Unstructured, deleted bool) bool {
	if h.cfg.Store == nil || unmirrored[kind] {
		return false
	}
	h.mirrorMu.Lock()
	defer h.mirrorMu.Unlock()
	if h.mirroring {
		h.mirrorLocked(h.ctx, kind, u, deleted)
	}
	return h.mirroring
}

// Start implements hub.Loop. The state is on the API server; the store
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
				h.mirrorLocked(ctx, kind, u, false)
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

// Commit implements hub.Loop: the hub's changes are durable on the API
// server already, so it asks flushLoop to hand the status tree what changed
// (batched, not urgent: no side effect waits for Git) and then performs the
// deliveries and removals binding changes asked for.
func (h *Hub) Commit(ctx context.Context) error {
	h.askFlush()
	var errs []error
	if h.delivery != nil {
		if err := h.delivery.Dispatch(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// askFlush asks flushLoop for a flush of the status tree: a flush asked
// for already, and not begun, takes these changes too.
func (h *Hub) askFlush() {
	if h.cfg.Store == nil {
		return
	}
	select {
	case h.flushes <- struct{}{}:
	default:
	}
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

// Pending implements hub.Loop: deliveries waiting for a Commit, the
// member changes still under way and the runs' status writes the store
// does not hold yet (runstatus.go), which the status tree in Git waits for.
func (h *Hub) Pending() int {
	n := h.statusWritesPending()
	if h.delivery != nil {
		n += h.delivery.Pending() + h.delivery.Members().Pending()
	}
	return n
}

// Delivery implements hub.Loop: member drivers report to the hub's
// delivery controller (nil unless Config.Deliver).
func (h *Hub) Delivery() hub.Reporter {
	if h.delivery == nil {
		return nil // not a nil *delivery.Controller inside an interface
	}
	return h.delivery
}

// Members is the registry of member drivers deliveries go through (nil
// unless Config.Deliver).
func (h *Hub) Members() *member.Drivers {
	if h.delivery == nil {
		return nil
	}
	return h.delivery.Members()
}

// ---- delivery ----

// The hub stores; delivery (reconciler/delivery) decides what members
// receive. The informers tell it about binding and member changes, and
// Commit runs it: the changes are durable on the API server already.

// noteBinding tells delivery about a binding change the informer saw.
func (h *Hub) noteBinding(old, cur *unstructured.Unstructured, deleted bool) {
	if h.delivery == nil {
		return
	}
	switch {
	case deleted:
		h.delivery.Observe(bindingState(cur), nil)
	case old == nil:
		h.delivery.Observe(nil, bindingState(cur))
	default:
		h.delivery.Observe(bindingState(old), bindingState(cur))
	}
}

// bindingState is the part of a binding delivery's Observe looks at
// (its state and its RolloutStarted condition), read without converting
// the whole object.
func bindingState(u *unstructured.Unstructured) *fleet.Binding {
	b := &fleet.Binding{}
	b.Namespace, b.Name, b.Generation = u.GetNamespace(), u.GetName(), u.GetGeneration()
	b.DeletionTimestamp = u.GetDeletionTimestamp()
	state, _, _ := unstructured.NestedString(u.Object, "spec", "state")
	b.Spec.State = fleet.BindingState(state)
	conds, _, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "conditions")
	list, _ := conds.([]any)
	for _, c := range list {
		c, _ := c.(map[string]any)
		if c["type"] != fleet.ResourceBindingRolloutStarted {
			continue
		}
		status, _, _ := unstructured.NestedString(c, "status")
		gen, _, _ := unstructured.NestedInt64(c, "observedGeneration")
		b.Status.Conditions = []metav1.Condition{{Type: fleet.ResourceBindingRolloutStarted,
			Status: metav1.ConditionStatus(status), ObservedGeneration: gen}}
	}
	return b
}

// noteMember tells delivery about a member cluster whose annotations
// changed (delivery delivers its bindings again when its driver did).
func (h *Hub) noteMember(old, cur *unstructured.Unstructured, deleted bool) {
	if h.delivery == nil || old == nil || deleted || equality.Semantic.DeepEqual(old.GetAnnotations(), cur.GetAnnotations()) {
		return
	}
	m := &fleet.MemberCluster{}
	m.Name, m.Annotations = cur.GetName(), cur.GetAnnotations()
	h.delivery.MemberChanged(m)
}

// resyncDeliveries queues every bound binding for delivery and every
// terminating one for removal.
func (h *Hub) resyncDeliveries() {
	if h.delivery == nil {
		return
	}
	var bindings []*fleet.Binding
	for _, kind := range []string{fleet.KindClusterResourceBinding, fleet.KindResourceBinding} {
		for _, obj := range h.informers[kind].inf.GetStore().List() {
			bindings = append(bindings, bindingState(obj.(*unstructured.Unstructured)))
		}
	}
	h.delivery.Resync(bindings)
}
