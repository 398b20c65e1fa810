// Package embedded is the hub gitfleet runs itself: fleet state in memory,
// written through to a Store (the Git status tree in `serve`, memory in
// `simulate` and tests), with member drivers delivering bound snapshots.
package embedded

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/delivery"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// Hub is the embedded hub. It implements hub.Hub, hub.Revisioner and
// hub.Notifier. All methods are safe for concurrent use.
type Hub struct {
	clock clock.Clock
	store Store

	mu         sync.Mutex
	placements table[*fleet.Placement]
	policies   table[*fleet.PolicySnapshot]
	snapshots  table[*fleet.ResourceSnapshot]
	bindings   table[*fleet.Binding]
	members    table[*fleet.MemberCluster]
	strategies table[*fleet.UpdateStrategy]
	// runs keeps a finished run as a husk, its clusters packed (husk.go).
	runs      runTable
	approvals table[*fleet.ApprovalRequest]
	// cros and ros are the overrides as people wrote them, kept as an API
	// server keeps them (the status tree has no files for them: they are
	// in Git, and the admitter applies them again after a restart).
	cros table[*fleet.ClusterResourceOverride]
	ros  table[*fleet.ResourceOverride]
	// croSnapshots and roSnapshots are the override snapshots (overrides.go).
	croSnapshots table[*fleet.ClusterResourceOverrideSnapshot]
	roSnapshots  table[*fleet.ResourceOverrideSnapshot]
	// evictions and budgets are people's evictions and disruption budgets
	// (evictions.go).
	evictions table[*fleet.ClusterResourcePlacementEviction]
	budgets   table[*fleet.ClusterResourcePlacementDisruptionBudget]
	// windows are people's RolloutWindows (windows.go).
	windows table[*fleet.RolloutWindow]
	// resources are the hub's workload resources (the rendered commit).
	resources []*unstructured.Unstructured
	// selector picks a placement's resources out of resources.
	selector Selector

	resourceVersion uint64
	planRevision    uint64
	// membersRevision counts member cluster changes (delivery re-checks
	// driver annotations only when it moves).
	membersRevision uint64
	subscribers     []func(hub.Event)
	events          []hub.Event
	// onBindingWritten is called (with the lock held) after every binding
	// write; the member delivery layer hooks in here.
	onBindingWritten func(old, cur *fleet.Binding)
	// delivery decides what members receive; Commit runs it after a
	// flush (delivery.go). deliveredMembers is the membersRevision it was
	// last told about.
	delivery         *delivery.Controller
	deliveredMembers uint64
}

// Selector returns, sorted, the resources a placement selects.
type Selector func(p *fleet.Placement, resources []*unstructured.Unstructured) ([]*unstructured.Unstructured, error)

var _ hub.Hub = (*Hub)(nil)
var _ hub.Revisioner = (*Hub)(nil)
var _ hub.Notifier = (*Hub)(nil)
var _ hub.ReadOnlyBindings = (*Hub)(nil)
var _ hub.ReadOnlyResourceSnapshots = (*Hub)(nil)
var _ hub.ReadOnlyGetter = (*Hub)(nil)
var _ hub.ReadOnlyMemberClusters = (*Hub)(nil)
var _ hub.BindingFinalizers = (*Hub)(nil)
var _ hub.BindingStatusHandover = (*Hub)(nil)

// New returns an empty hub writing through to store (a MemoryStore if nil).
func New(c clock.Clock, store Store) *Hub {
	if store == nil {
		store = NewMemoryStore()
	}
	h := &Hub{
		clock:      c,
		store:      store,
		placements: newTable[*fleet.Placement](),
		policies:   newGroupedTable(placementOf[*fleet.PolicySnapshot]),
		snapshots:  newGroupedTable(placementOf[*fleet.ResourceSnapshot]),
		bindings:   newGroupedTable(placementOf[*fleet.Binding]),
		members:    newTable[*fleet.MemberCluster](),
		strategies: newTable[*fleet.UpdateStrategy](),
		runs:       newRunTable(),
		approvals:  newTable[*fleet.ApprovalRequest](),

		cros:         newTable[*fleet.ClusterResourceOverride](),
		ros:          newTable[*fleet.ResourceOverride](),
		croSnapshots: newTable[*fleet.ClusterResourceOverrideSnapshot](),
		roSnapshots:  newTable[*fleet.ResourceOverrideSnapshot](),
		evictions:    newTable[*fleet.ClusterResourcePlacementEviction](),
		budgets:      newTable[*fleet.ClusterResourcePlacementDisruptionBudget](),
		windows:      newTable[*fleet.RolloutWindow](),
	}
	h.initDelivery()
	return h
}

// Clock is the hub's clock.
func (h *Hub) Clock() clock.Clock { return h.clock }

// Store is the hub's persistence boundary.
func (h *Hub) Store() Store { return h.store }

// SetSelector installs the placement resource selection (render's).
func (h *Hub) SetSelector(s Selector) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.selector = s
}

// Subscribe registers f for change events. f runs after the change, without
// the hub's lock held, on the goroutine that made the change.
func (h *Hub) Subscribe(f func(hub.Event)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.subscribers = append(h.subscribers, f)
}

// PlanRevision implements hub.Revisioner.
func (h *Hub) PlanRevision() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.planRevision
}

// unlock releases the lock and delivers the events queued while it was held.
func (h *Hub) unlock() {
	events, subs := h.events, h.subscribers
	h.events = nil
	h.mu.Unlock()
	for _, e := range events {
		for _, s := range subs {
			s(e)
		}
	}
}

func (h *Hub) emit(e hub.Event) { h.events = append(h.events, e) }

// stamp gives a written object a new resourceVersion, its kind, and
// creation metadata on first write.
func (h *Hub) stamp(o metav1.Object, create bool) {
	h.resourceVersion++
	o.SetResourceVersion(fmt.Sprint(h.resourceVersion))
	if create {
		if o.GetGeneration() == 0 {
			o.SetGeneration(1)
		}
		if ct := o.GetCreationTimestamp(); ct.IsZero() {
			o.SetCreationTimestamp(metav1.NewTime(h.clock.Now().UTC().Truncate(1e9)))
		}
	}
}

// checkVersion refuses a write based on a stale resourceVersion with the
// API server's Conflict.
func checkVersion(stored, incoming object) error {
	if incoming.GetResourceVersion() != "" && incoming.GetResourceVersion() != stored.GetResourceVersion() {
		kind, _ := fleet.KindFor(incoming)
		return hub.Conflict(kind.Kind, keyOf(incoming))
	}
	return nil
}

// persist writes a stored object through to the store. obj must be the
// table's own object (put's result, or what putOwned stored): it is never
// modified, so a hub.SharingStore keeps it without a copy.
func (h *Hub) persist(obj object) {
	ref := ObjectRef{Kind: obj.GetObjectKind().GroupVersionKind().Kind, Key: keyOf(obj)}
	if s, ok := h.store.(hub.SharingStore); ok {
		s.PutShared(ref, obj)
		return
	}
	h.store.Put(ref, obj)
}

func (h *Hub) forget(kind string, key hub.Key) {
	h.store.Delete(ObjectRef{Kind: kind, Key: key})
}

// placementOf is the placement an object belongs to (its tracking label):
// the group the hub files bindings and snapshots under.
func placementOf[T metav1.Object](o T) hub.Key {
	return hub.Key{Namespace: o.GetNamespace(), Name: o.GetLabels()[fleet.PlacementTrackingLabel]}
}

// ---- placements ----

// GetPlacement implements hub.Placements.
func (h *Hub) GetPlacement(_ context.Context, key hub.Key) (*fleet.Placement, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, ok := h.placements.get(key)
	if !ok {
		return nil, hub.NotFound(fleet.PlacementKind(key.Namespace), key)
	}
	return p, nil
}

// ListPlacements implements hub.Placements.
func (h *Hub) ListPlacements(context.Context) ([]*fleet.Placement, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.placements.list(nil), nil
}

// ListPlacementsReadOnly is ListPlacements without the copies: the stored
// placements, which the hub replaces on every write and never modifies,
// and which the caller must not modify either. Printing a placement of
// 10,000 clusters needs no 12 MB copy of its status.
func (h *Hub) ListPlacementsReadOnly(context.Context) ([]*fleet.Placement, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.placements.listShared(nil), nil
}

// UpdatePlacementStatus implements hub.Placements.
func (h *Hub) UpdatePlacementStatus(_ context.Context, p *fleet.Placement) error {
	h.mu.Lock()
	defer h.unlock()
	cur, ok := h.placements.peek(keyOf(p))
	if !ok {
		return hub.NotFound(fleet.PlacementKind(p.Namespace), keyOf(p))
	}
	if err := checkVersion(cur, p); err != nil {
		return err
	}
	// One copy, of the caller's status: the stored spec and metadata are
	// copied field by field rather than with the old status (10,000
	// per-cluster entries) only to be thrown away.
	next := &fleet.Placement{TypeMeta: cur.TypeMeta, Spec: *cur.Spec.DeepCopy(), Status: *p.Status.DeepCopy()}
	cur.ObjectMeta.DeepCopyInto(&next.ObjectMeta)
	h.stamp(next, false)
	p.ResourceVersion = next.ResourceVersion
	h.placements.putOwned(next)
	h.persist(next)
	return nil
}

// ---- policy snapshots ----

// ListPolicySnapshots implements hub.PolicySnapshots.
func (h *Hub) ListPolicySnapshots(_ context.Context, placement hub.Key) ([]*fleet.PolicySnapshot, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.policies.listGroup(placement), nil
}

// CreatePolicySnapshot implements hub.PolicySnapshots.
func (h *Hub) CreatePolicySnapshot(_ context.Context, s *fleet.PolicySnapshot) error {
	h.mu.Lock()
	defer h.unlock()
	if _, ok := h.policies.peek(keyOf(s)); ok {
		return hub.AlreadyExists(fleet.PolicySnapshotKind(s.Namespace), keyOf(s))
	}
	setKind(s, fleet.PolicySnapshotKind(s.Namespace))
	h.stamp(s, true)
	h.persist(h.policies.put(s))
	h.planRevision++
	h.emit(hub.Event{Kind: hub.EventPolicySnapshot, Key: keyOf(s), Placement: placementOf(s)})
	return nil
}

// UpdatePolicySnapshot implements hub.PolicySnapshots.
func (h *Hub) UpdatePolicySnapshot(_ context.Context, s *fleet.PolicySnapshot) error {
	h.mu.Lock()
	defer h.unlock()
	cur, ok := h.policies.peek(keyOf(s))
	if !ok {
		return hub.NotFound(fleet.PolicySnapshotKind(s.Namespace), keyOf(s))
	}
	if err := checkVersion(cur, s); err != nil {
		return err
	}
	setKind(s, cur.Kind)
	if !equality.Semantic.DeepEqual(cur.Spec, s.Spec) {
		s.Generation = cur.Generation + 1
	}
	h.stamp(s, false)
	h.persist(h.policies.put(s))
	h.planRevision++
	h.emit(hub.Event{Kind: hub.EventPolicySnapshot, Key: keyOf(s), Placement: placementOf(s)})
	return nil
}

// ---- resource snapshots ----

// ListResourceSnapshots implements hub.ResourceSnapshots.
func (h *Hub) ListResourceSnapshots(_ context.Context, placement hub.Key) ([]*fleet.ResourceSnapshot, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.snapshots.listGroup(placement), nil
}

// ListResourceSnapshotsReadOnly implements hub.ReadOnlyResourceSnapshots:
// the stored snapshots themselves, which the caller must not modify.
func (h *Hub) ListResourceSnapshotsReadOnly(_ context.Context, placement hub.Key) ([]*fleet.ResourceSnapshot, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.snapshots.listGroupShared(placement), nil
}

// CreateResourceSnapshot implements hub.ResourceSnapshots.
func (h *Hub) CreateResourceSnapshot(_ context.Context, s *fleet.ResourceSnapshot) error {
	h.mu.Lock()
	defer h.unlock()
	if _, ok := h.snapshots.peek(keyOf(s)); ok {
		return hub.AlreadyExists(fleet.ResourceSnapshotKind(s.Namespace), keyOf(s))
	}
	setKind(s, fleet.ResourceSnapshotKind(s.Namespace))
	h.stamp(s, true)
	h.persist(h.snapshots.put(s))
	h.emit(hub.Event{Kind: hub.EventResourceSnapshot, Key: keyOf(s), Placement: placementOf(s)})
	return nil
}

// UpdateResourceSnapshot implements hub.ResourceSnapshots.
func (h *Hub) UpdateResourceSnapshot(_ context.Context, s *fleet.ResourceSnapshot) error {
	h.mu.Lock()
	defer h.unlock()
	cur, ok := h.snapshots.peek(keyOf(s))
	if !ok {
		return hub.NotFound(fleet.ResourceSnapshotKind(s.Namespace), keyOf(s))
	}
	if err := checkVersion(cur, s); err != nil {
		return err
	}
	setKind(s, cur.Kind)
	h.stamp(s, false)
	h.persist(h.snapshots.put(s))
	h.emit(hub.Event{Kind: hub.EventResourceSnapshot, Key: keyOf(s), Placement: placementOf(s)})
	return nil
}

// DeleteResourceSnapshot implements hub.ResourceSnapshots.
func (h *Hub) DeleteResourceSnapshot(_ context.Context, key hub.Key) error {
	h.mu.Lock()
	defer h.unlock()
	cur, ok := h.snapshots.peek(key)
	if !ok {
		return hub.NotFound(fleet.ResourceSnapshotKind(key.Namespace), key)
	}
	h.snapshots.delete(key)
	h.forget(cur.Kind, key)
	h.emit(hub.Event{Kind: hub.EventResourceSnapshot, Key: key, Placement: placementOf(cur)})
	return nil
}

// SelectResources implements hub.ResourceSnapshots.
func (h *Hub) SelectResources(_ context.Context, p *fleet.Placement) ([]*unstructured.Unstructured, error) {
	h.mu.Lock()
	sel, res := h.selector, h.resources
	h.mu.Unlock()
	if sel == nil {
		return nil, fmt.Errorf("the hub has no resource selector configured")
	}
	return sel(p, res)
}

// SetResources replaces the hub's workload resources (a rendered commit).
func (h *Hub) SetResources(res []*unstructured.Unstructured) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.resources = res
}

// ---- bindings ----

// ListBindings implements hub.Bindings.
func (h *Hub) ListBindings(_ context.Context, placement hub.Key) ([]*fleet.Binding, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.bindings.listGroup(placement), nil
}

// ListBindingsReadOnly implements hub.ReadOnlyBindings: the stored
// bindings themselves, which the hub replaces on every write and never
// modifies, so a caller that does not modify them either reads a
// consistent version of each without copying it.
func (h *Hub) ListBindingsReadOnly(_ context.Context, placement hub.Key) ([]*fleet.Binding, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.bindings.listGroupShared(placement), nil
}

// GetBinding implements hub.Bindings.
func (h *Hub) GetBinding(_ context.Context, key hub.Key) (*fleet.Binding, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b, ok := h.bindings.get(key)
	if !ok {
		return nil, hub.NotFound(fleet.BindingKind(key.Namespace), key)
	}
	return b, nil
}

// GetBindingReadOnly implements hub.ReadOnlyGetter: the stored binding
// itself, on ListBindingsReadOnly's terms.
func (h *Hub) GetBindingReadOnly(_ context.Context, key hub.Key) (*fleet.Binding, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b, ok := h.bindings.peek(key)
	if !ok {
		return nil, hub.NotFound(fleet.BindingKind(key.Namespace), key)
	}
	return b, nil
}

// GetMemberClusterReadOnly implements hub.ReadOnlyGetter: the stored
// member cluster itself, on ListBindingsReadOnly's terms.
func (h *Hub) GetMemberClusterReadOnly(_ context.Context, name string) (*fleet.MemberCluster, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m, ok := h.members.peek(hub.Key{Name: name})
	if !ok {
		return nil, hub.NotFound(fleet.KindMemberCluster, hub.Key{Name: name})
	}
	return m, nil
}

// CreateBinding implements hub.Bindings.
func (h *Hub) CreateBinding(_ context.Context, b *fleet.Binding) error {
	h.mu.Lock()
	defer h.unlock()
	if _, ok := h.bindings.peek(keyOf(b)); ok {
		return hub.AlreadyExists(fleet.BindingKind(b.Namespace), keyOf(b))
	}
	setKind(b, fleet.BindingKind(b.Namespace))
	h.stamp(b, true)
	h.writeBinding(nil, b.DeepCopy())
	return nil
}

// UpdateBinding implements hub.Bindings: the object, not the status.
func (h *Hub) UpdateBinding(_ context.Context, b *fleet.Binding) error {
	h.mu.Lock()
	defer h.unlock()
	cur, err := h.currentBinding(b)
	if err != nil {
		return err
	}
	// The stored status goes on as it is (stored objects are never
	// modified, so versions share it); b's, which this write ignores, is
	// not copied.
	next := &fleet.Binding{TypeMeta: b.TypeMeta, ObjectMeta: *b.ObjectMeta.DeepCopy(), Spec: *b.Spec.DeepCopy(), Status: cur.Status}
	setKind(next, cur.Kind)
	next.DeletionTimestamp = cur.DeletionTimestamp
	next.CreationTimestamp = cur.CreationTimestamp
	next.Generation = cur.Generation
	if !equality.Semantic.DeepEqual(cur.Spec, b.Spec) {
		next.Generation++
	}
	h.stamp(next, false)
	b.ResourceVersion, b.Generation = next.ResourceVersion, next.Generation
	if next.DeletionTimestamp != nil && len(next.Finalizers) == 0 {
		h.removeBinding(cur)
		return nil
	}
	h.writeBinding(cur, next)
	return nil
}

// UpdateBindingStatus implements hub.Bindings.
func (h *Hub) UpdateBindingStatus(_ context.Context, b *fleet.Binding) error {
	return h.updateBindingStatus(b, *b.Status.DeepCopy())
}

// HandOverBindingStatus implements hub.BindingStatusHandover: b's status
// is stored as it is, without UpdateBindingStatus's copy.
func (h *Hub) HandOverBindingStatus(_ context.Context, b *fleet.Binding) error {
	return h.updateBindingStatus(b, b.Status)
}

// updateBindingStatus stores a new version of the binding b updates with
// status, which the caller built for the table.
func (h *Hub) updateBindingStatus(b *fleet.Binding, status fleet.ResourceBindingStatus) error {
	h.mu.Lock()
	defer h.unlock()
	cur, err := h.currentBinding(b)
	if err != nil {
		return err
	}
	next := nextVersion(cur)
	next.Status = status
	h.stamp(next, false)
	b.ResourceVersion, b.Generation = next.ResourceVersion, next.Generation
	h.writeBinding(cur, next)
	return nil
}

// AddBindingFinalizer implements hub.BindingFinalizers: the new version
// shares everything but its finalizers with the stored one.
func (h *Hub) AddBindingFinalizer(_ context.Context, key hub.Key, f string) (*fleet.Binding, error) {
	h.mu.Lock()
	defer h.unlock()
	cur, ok := h.bindings.peek(key)
	if !ok {
		return nil, hub.NotFound(fleet.BindingKind(key.Namespace), key)
	}
	if cur.DeletionTimestamp != nil || slices.Contains(cur.Finalizers, f) {
		return cur, nil
	}
	next := nextVersion(cur)
	next.Finalizers = append(slices.Clip(cur.Finalizers), f)
	h.stamp(next, false)
	h.writeBinding(cur, next)
	return next, nil
}

// nextVersion is a new version of the stored binding cur to store in its
// place, sharing cur's labels, annotations, finalizers, spec and status:
// stored bindings are never modified, only replaced, so versions may
// share what a write leaves as it is. The caller replaces, never
// modifies, what it changes.
func nextVersion(cur *fleet.Binding) *fleet.Binding {
	next := *cur
	return &next
}

// currentBinding is the stored binding b updates: NotFound when there is
// none, Conflict when b's resourceVersion is stale. The lock is held.
func (h *Hub) currentBinding(b *fleet.Binding) (*fleet.Binding, error) {
	cur, ok := h.bindings.peek(keyOf(b))
	if !ok {
		return nil, hub.NotFound(fleet.BindingKind(b.Namespace), keyOf(b))
	}
	if err := checkVersion(cur, b); err != nil {
		return nil, err
	}
	return cur, nil
}

// DeleteBinding implements hub.Bindings: the binding gets a
// deletionTimestamp and goes away when no finalizer holds it.
func (h *Hub) DeleteBinding(_ context.Context, key hub.Key) error {
	h.mu.Lock()
	defer h.unlock()
	cur, ok := h.bindings.peek(key)
	if !ok {
		return hub.NotFound(fleet.BindingKind(key.Namespace), key)
	}
	if cur.DeletionTimestamp != nil {
		return nil
	}
	if len(cur.Finalizers) == 0 {
		h.removeBinding(cur)
		return nil
	}
	next := cur.DeepCopy()
	now := metav1.NewTime(h.clock.Now().UTC().Truncate(1e9))
	next.DeletionTimestamp = &now
	h.stamp(next, false)
	h.writeBinding(cur, next)
	return nil
}

// writeBinding stores cur, which the caller built for the table and does
// not touch again, in place of old.
func (h *Hub) writeBinding(old, cur *fleet.Binding) {
	if old == nil || old.Spec.State != cur.Spec.State ||
		old.Spec.SchedulingPolicySnapshotName != cur.Spec.SchedulingPolicySnapshotName ||
		(old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil) {
		h.planRevision++
	}
	h.bindings.putOwned(cur)
	h.persist(cur)
	if h.onBindingWritten != nil {
		h.onBindingWritten(old, cur)
	}
	h.emit(hub.Event{Kind: hub.EventBinding, Key: keyOf(cur), Placement: placementOf(cur)})
}

func (h *Hub) removeBinding(cur *fleet.Binding) {
	h.bindings.delete(keyOf(cur))
	h.forget(cur.Kind, keyOf(cur))
	h.planRevision++
	if h.onBindingWritten != nil {
		h.onBindingWritten(cur, nil)
	}
	h.emit(hub.Event{Kind: hub.EventBinding, Key: keyOf(cur), Placement: placementOf(cur)})
}

// ---- member clusters ----

// ListMemberClusters implements hub.MemberClusters.
func (h *Hub) ListMemberClusters(context.Context) ([]*fleet.MemberCluster, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.members.list(nil), nil
}

// ListMemberClustersReadOnly implements hub.ReadOnlyMemberClusters: the
// stored member clusters, on ListBindingsReadOnly's terms.
func (h *Hub) ListMemberClustersReadOnly(context.Context) ([]*fleet.MemberCluster, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.members.listShared(nil), nil
}

// UpdateMemberClusterStatus replaces the status of a member cluster (the
// property collector's write); spec and metadata are kept as stored. A
// stale resourceVersion is a Conflict. The scheduler reads properties, so
// the write wakes it as a member change does.
func (h *Hub) UpdateMemberClusterStatus(_ context.Context, m *fleet.MemberCluster) error {
	h.mu.Lock()
	defer h.unlock()
	cur, ok := h.members.peek(keyOf(m))
	if !ok {
		return hub.NotFound(fleet.KindMemberCluster, keyOf(m))
	}
	if err := checkVersion(cur, m); err != nil {
		return err
	}
	next := cur.DeepCopy()
	next.Status = *m.Status.DeepCopy()
	h.stamp(next, false)
	m.ResourceVersion = next.ResourceVersion
	h.persist(h.members.put(next))
	h.planRevision++
	h.emit(hub.Event{Kind: hub.EventMemberCluster, Key: keyOf(next)})
	return nil
}

// GetMemberCluster reads one member cluster (delivery.MemberClusterGetter).
func (h *Hub) GetMemberCluster(_ context.Context, name string) (*fleet.MemberCluster, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m, ok := h.members.get(hub.Key{Name: name})
	if !ok {
		return nil, hub.NotFound(fleet.KindMemberCluster, hub.Key{Name: name})
	}
	return m, nil
}

// ---- strategies ----

// GetUpdateStrategy implements hub.Strategies.
func (h *Hub) GetUpdateStrategy(_ context.Context, key hub.Key) (*fleet.UpdateStrategy, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.strategies.get(key)
	if !ok {
		return nil, hub.NotFound(fleet.UpdateStrategyKind(key.Namespace), key)
	}
	return s, nil
}

// ---- runs ----

// GetUpdateRun implements hub.UpdateRuns.
func (h *Hub) GetUpdateRun(_ context.Context, key hub.Key) (*fleet.UpdateRun, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.runs.get(key)
	if !ok {
		return nil, hub.NotFound(fleet.UpdateRunKind(key.Namespace), key)
	}
	return r, nil
}

// ListUpdateRuns implements hub.UpdateRuns.
func (h *Hub) ListUpdateRuns(context.Context) ([]*fleet.UpdateRun, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.runs.list(), nil
}

// GetUpdateRunWithoutClusters is GetUpdateRun for a reader of the run's
// metadata and spec only, such as the Git loop's admission, which reads
// every run at every sync: a finished run comes as kept, without its
// stages' clusters, which are not unpacked.
func (h *Hub) GetUpdateRunWithoutClusters(_ context.Context, key hub.Key) (*fleet.UpdateRun, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.runs.head(key)
	if !ok {
		return nil, hub.NotFound(fleet.UpdateRunKind(key.Namespace), key)
	}
	return r.DeepCopy(), nil
}

// ListUpdateRunsWithoutClusters is ListUpdateRuns on the terms of
// GetUpdateRunWithoutClusters.
func (h *Hub) ListUpdateRunsWithoutClusters(context.Context) ([]*fleet.UpdateRun, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.runs.heads(), nil
}

// ListUpdateRunsReadOnly is ListUpdateRuns without the copies, on the
// terms of ListPlacementsReadOnly; a finished run, kept as a husk, is
// unpacked into a new object all the same.
func (h *Hub) ListUpdateRunsReadOnly(context.Context) ([]*fleet.UpdateRun, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.runs.listShared(), nil
}

// ListUnfinishedUpdateRunsReadOnly is ListUpdateRunsReadOnly of the runs
// that have not finished (snapshothistory.Finished): the finished ones,
// kept as husks, are not even unpacked.
func (h *Hub) ListUnfinishedUpdateRunsReadOnly(context.Context) ([]*fleet.UpdateRun, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.runs.listUnfinishedShared(), nil
}

// UpdateUpdateRunStatus implements hub.UpdateRuns.
func (h *Hub) UpdateUpdateRunStatus(_ context.Context, r *fleet.UpdateRun) error {
	return h.updateRun(r, func(cur *fleet.UpdateRun) bool { return sameRunStatus(&cur.Status, &r.Status) },
		func(next, _ *fleet.UpdateRun) { next.Status = *r.Status.DeepCopy() })
}

// sameRunStatus is reflect.DeepEqual(*a, *b) with the clusters of each
// stage, nearly all of a large run and walked on every pass, compared by
// fleet.SameClusterUpdatingStatuses, a tenth of the cost of reflection.
// The rest (stage times, tasks, conditions, the strategy) is compared by
// reflection, without the clusters.
func sameRunStatus(a, b *fleet.UpdateRunStatus) bool {
	if len(a.StagesStatus) != len(b.StagesStatus) || (a.DeletionStageStatus == nil) != (b.DeletionStageStatus == nil) {
		return false
	}
	withoutClusters := func(s *fleet.UpdateRunStatus) fleet.UpdateRunStatus {
		c := *s
		c.StagesStatus = slices.Clone(s.StagesStatus)
		for i := range c.StagesStatus {
			c.StagesStatus[i].Clusters = nil
		}
		if d := s.DeletionStageStatus; d != nil {
			dc := *d
			dc.Clusters = nil
			c.DeletionStageStatus = &dc
		}
		return c
	}
	if !reflect.DeepEqual(withoutClusters(a), withoutClusters(b)) {
		return false
	}
	for i := range a.StagesStatus {
		if !fleet.SameClusterUpdatingStatuses(a.StagesStatus[i].Clusters, b.StagesStatus[i].Clusters) {
			return false
		}
	}
	return a.DeletionStageStatus == nil || fleet.SameClusterUpdatingStatuses(a.DeletionStageStatus.Clusters, b.DeletionStageStatus.Clusters)
}

// UpdateUpdateRunFinalizers implements hub.UpdateRuns.
func (h *Hub) UpdateUpdateRunFinalizers(_ context.Context, r *fleet.UpdateRun) error {
	return h.updateRun(r, func(cur *fleet.UpdateRun) bool { return slices.Equal(cur.Finalizers, r.Finalizers) },
		func(next, cur *fleet.UpdateRun) {
			next.Status = *cur.Status.DeepCopy()
			next.Finalizers = slices.Clone(r.Finalizers)
		})
}

// updateRun writes one part of a stored run: set copies it from the
// caller's run and the status from the caller's or the stored run, unless same says it is unchanged (then nothing is written:
// no new resourceVersion, nothing to persist). A terminating run left
// without finalizers is removed.
func (h *Hub) updateRun(r *fleet.UpdateRun, same func(cur *fleet.UpdateRun) bool, set func(next, cur *fleet.UpdateRun)) error {
	h.mu.Lock()
	defer h.unlock()
	cur, ok := h.runs.peek(keyOf(r))
	if !ok {
		return hub.NotFound(fleet.UpdateRunKind(r.Namespace), keyOf(r))
	}
	if err := checkVersion(cur, r); err != nil {
		return err
	}
	if same(cur) {
		r.ResourceVersion = cur.ResourceVersion
		return nil
	}
	// Share nothing with the caller: copy the stored spec once and hand
	// the table the fresh object.
	next := &fleet.UpdateRun{TypeMeta: cur.TypeMeta, Spec: *cur.Spec.DeepCopy()}
	cur.ObjectMeta.DeepCopyInto(&next.ObjectMeta)
	set(next, cur)
	h.stamp(next, false)
	r.ResourceVersion = next.ResourceVersion
	if next.DeletionTimestamp != nil && len(next.Finalizers) == 0 {
		h.runs.delete(keyOf(next))
		h.forget(next.Kind, keyOf(next))
		h.emit(hub.Event{Kind: hub.EventUpdateRun, Key: keyOf(next), Run: keyOf(next)})
		return nil
	}
	h.runs.putOwned(next)
	h.persist(next)
	return nil
}

// RemoveUpdateRun implements hub.UpdateRuns.
func (h *Hub) RemoveUpdateRun(_ context.Context, key hub.Key) error {
	h.mu.Lock()
	defer h.unlock()
	cur, ok := h.runs.head(key)
	if !ok {
		return nil
	}
	h.runs.delete(key)
	h.forget(cur.Kind, key)
	h.emit(hub.Event{Kind: hub.EventUpdateRun, Key: key, Run: key})
	return nil
}

// ---- approval requests ----

// GetApprovalRequest implements hub.ApprovalRequests.
func (h *Hub) GetApprovalRequest(_ context.Context, key hub.Key) (*fleet.ApprovalRequest, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	a, ok := h.approvals.get(key)
	if !ok {
		return nil, hub.NotFound(fleet.ApprovalRequestKind(key.Namespace), key)
	}
	return a, nil
}

// ListApprovalRequests implements hub.ApprovalRequests.
func (h *Hub) ListApprovalRequests(_ context.Context, namespace string, labels map[string]string) ([]*fleet.ApprovalRequest, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.approvals.list(func(a *fleet.ApprovalRequest) bool {
		if a.Namespace != namespace {
			return false
		}
		for k, v := range labels {
			if a.Labels[k] != v {
				return false
			}
		}
		return true
	}), nil
}

// CreateApprovalRequest implements hub.ApprovalRequests.
func (h *Hub) CreateApprovalRequest(_ context.Context, a *fleet.ApprovalRequest) error {
	h.mu.Lock()
	defer h.unlock()
	if _, ok := h.approvals.peek(keyOf(a)); ok {
		return hub.AlreadyExists(fleet.ApprovalRequestKind(a.Namespace), keyOf(a))
	}
	setKind(a, fleet.ApprovalRequestKind(a.Namespace))
	h.stamp(a, true)
	h.persist(h.approvals.put(a))
	h.emit(approvalEvent(a))
	return nil
}

// UpdateApprovalRequestStatus implements hub.ApprovalRequests.
func (h *Hub) UpdateApprovalRequestStatus(_ context.Context, a *fleet.ApprovalRequest) error {
	h.mu.Lock()
	defer h.unlock()
	cur, ok := h.approvals.peek(keyOf(a))
	if !ok {
		return hub.NotFound(fleet.ApprovalRequestKind(a.Namespace), keyOf(a))
	}
	if err := checkVersion(cur, a); err != nil {
		return err
	}
	next := cur.DeepCopy()
	next.Status = *a.Status.DeepCopy()
	h.stamp(next, false)
	h.persist(h.approvals.put(next))
	h.emit(approvalEvent(next))
	return nil
}

// DeleteApprovalRequest implements hub.ApprovalRequests.
func (h *Hub) DeleteApprovalRequest(_ context.Context, key hub.Key) error {
	h.mu.Lock()
	defer h.unlock()
	cur, ok := h.approvals.peek(key)
	if !ok {
		return hub.NotFound(fleet.ApprovalRequestKind(key.Namespace), key)
	}
	h.approvals.delete(key)
	h.forget(cur.Kind, key)
	h.emit(approvalEvent(cur))
	return nil
}

func approvalEvent(a *fleet.ApprovalRequest) hub.Event {
	return hub.Event{Kind: hub.EventApprovalRequest, Key: keyOf(a),
		Run: hub.Key{Namespace: a.Namespace, Name: a.Spec.TargetUpdateRun}}
}

func setKind(o runtime.Object, kind string) {
	gvk := o.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" {
		gvk.Kind = kind
	}
	if gvk.Group == "" && gvk.Version == "" {
		gvk.Group, gvk.Version = fleet.PlacementGroup, fleet.Version
	}
	o.GetObjectKind().SetGroupVersionKind(gvk)
}
