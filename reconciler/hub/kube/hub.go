// Package kube is the hub on a Kubernetes API server: the fleet objects are
// custom resources (config/crd), read from client-go shared informers and
// written with the dynamic client, so the engine runs unchanged on a hub
// cluster that people also use with kubectl.
//
// Reads come from the informers' caches. Every write waits until the
// hub's own informer has caught up with it (the written resourceVersion, or
// the deletion), bounded by the caller's context, so a pass that writes and
// then reads sees its write, as with the embedded hub. The one exception is
// a run's status, which the hub writes behind the engine's back and shows
// to reads until the cache has it (runstatus.go). Writes of other
// clients (a member agent's binding status, a person's approval) show up
// when the watch delivers them, and wake the engine through Subscribe.
package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/internal/restlimits"
	"github.com/gitfleet/gitfleet/reconciler/delivery"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

// FieldManager names gitfleet's writes in managedFields.
const FieldManager = "gitfleet"

// Config says how to reach the hub and where its workload resources come
// from.
type Config struct {
	// Rest reaches the hub's API server. Its QPS and Burst are raised to
	// restlimits' when unset.
	Rest *rest.Config
	// Resources returns, sorted, the workload resources a placement selects
	// now. The hub cluster does not hold them: gitfleet renders them from
	// the tracked commit (render.Select over the rendered content), and the
	// engine snapshots them for runs without a resourceSnapshotIndex. Nil:
	// SelectResources fails, and runs need an explicit snapshot index.
	Resources func(ctx context.Context, p *fleet.Placement) ([]*unstructured.Unstructured, error)
	// MaxSnapshotBytes is the size past which a resource snapshot is split
	// into sub-snapshots; 0 keeps KubeFleet's 800 KB, which suits etcd's
	// default 1.5 MiB request limit. Lower it for an etcd configured with
	// a lower --max-request-bytes.
	MaxSnapshotBytes int
	// Select picks, sorted, a placement's resources out of those the Git
	// loop hands over with SetResources (render.Select); used when
	// Resources is nil.
	Select func(p *fleet.Placement, resources []*unstructured.Unstructured) ([]*unstructured.Unstructured, error)
	// Store receives every object the hub holds once Start has loaded it
	// (the status tree in `serve --hub kube`; optional).
	Store hub.Store
	// Deliver makes the hub deliver bound bindings to their members with
	// gitfleet's drivers (simulated, kubeconfig: through Clusters) on
	// Commit, as the embedded hub does; off, an agent or a test plays the
	// members.
	Deliver  bool
	Clusters member.Clusters
	// Clock stamps members' reports (default the wall clock).
	Clock clock.Clock
	Log   *slog.Logger
	// RunStatusSpacing is the least time between two writes of one run's
	// status (runstatus.go): DefaultRunStatusSpacing when 0, none when
	// negative. A write that took long spaces the next one further
	// (RunStatusCostFactor).
	RunStatusSpacing time.Duration
}

const (
	// DefaultRunStatusSpacing lets a run's status coalesce for 100 ms
	// between writes: at maxConcurrency 1 every cluster changes it, and
	// the API server spent most of a core on these 40 KB writes while the
	// binding writes of the next cluster waited for it (KubeFleet anchor,
	// N = 100: 2.7–2.8 s without, 1.4–1.8 s with, same machine).
	DefaultRunStatusSpacing = 100 * time.Millisecond
	// DeliveryWorkers is how many bindings delivery delivers at once: each
	// delivery is three writes in a row (the finalizer, the Work or the
	// member's apply, the binding's report), each waiting for the hub's
	// informer, so one at a time kept 100 concurrent runs of 100 clusters
	// at ~6 clusters a second while the API server idled
	// (BenchmarkPullFleet).
	DeliveryWorkers = 16
	// EngineWorkers is how many passes the engine runs at once on this
	// hub (EngineWorkers): a pass mostly waits for its writes to come
	// back through the informers.
	EngineWorkers = 8
)

// Hub implements hub.Hub, hub.Notifier and hub.Revisioner over a
// Kubernetes API server.
type Hub struct {
	cfg       Config
	client    dynamic.Interface
	informers map[string]*informer // by kind
	log       *slog.Logger

	planRevision atomic.Uint64

	mu          sync.Mutex
	subscribers []func(hub.Event)
	// workload is what SetResources handed over.
	workload []*unstructured.Unstructured
	clock    clock.Clock
	// delivery decides what members receive (loop.go; nil unless
	// Config.Deliver); works are the Works it keeps for members that pull
	// them, kick runs it when one reports (works.go).
	delivery *delivery.Controller
	works    *informer
	kick     chan struct{}
	// mirrorMu orders the writes to Config.Store. Once Start has loaded
	// the store (mirroring), every object the informers hold is put there,
	// as the embedded hub persists every write, so status/ in Git shows
	// the hub.
	mirrorMu  sync.Mutex
	mirroring bool

	// chains write the runs' statuses (runstatus.go), tokens numbers
	// the resourceVersions they hand out.
	chainMu sync.Mutex
	chains  map[hub.Key]*statusChain
	tokens  uint64

	// beforeStatusWrite, when set, runs before each write of a chain
	// (tests provoke a race with it).
	beforeStatusWrite func(run hub.Key)

	// flushes asks flushLoop for a flush of the status tree (Commit);
	// ctx is New's, which ends the loop.
	flushes chan struct{}
	ctx     context.Context

	// applied is what Apply last wrote of each object (desired.go).
	appliedMu sync.Mutex
	applied   map[hub.ObjectRef]appliedState
}

// EngineWorkers is how many passes (runs, placements) the engine may run
// at once on this hub: the hub is safe for concurrent use, and each pass
// mostly waits for its writes to come back through the informers.
func (h *Hub) EngineWorkers() int { return EngineWorkers }

var _ hub.Hub = (*Hub)(nil)
var _ hub.Notifier = (*Hub)(nil)
var _ hub.Revisioner = (*Hub)(nil)

// informer is the shared informer of one kind, with a signal that fires
// after each event it handled (its cache is updated by then), for writers
// waiting to read their own write.
type informer struct {
	kind string
	gvr  schema.GroupVersionResource
	inf  cache.SharedIndexInformer

	mu      sync.Mutex
	changed chan struct{}
	// seen is the highest resourceVersion the hub handled: a watch
	// delivers one resource's changes in resourceVersion order, so once
	// seen reaches a write's version the hub has handled that write.
	seen string
	// handled is each object's state as the hub last handled it. Writers
	// wait on this, not on the cache: the cache runs ahead of the event
	// handlers, and a write must return only once its event was handled
	// (its plan revision counted, see PlanRevision).
	handled map[string]handledState
	// converted holds, by key, the typed conversion of the cached objects
	// (convert); an object's is dropped with its deletion.
	converted map[string]conversion
}

type handledState struct {
	resourceVersion string
	terminating     bool
}

// New connects to the hub, checks that the fleet CRDs are served and that
// KubeFleet's own hub agent is not at work there (checkNoKubeFleet), starts
// an informer per kind and waits for their caches. The informers stop when
// ctx ends.
func New(ctx context.Context, cfg Config) (*Hub, error) {
	rc := restlimits.Default(cfg.Rest)
	if cfg.RunStatusSpacing == 0 {
		cfg.RunStatusSpacing = DefaultRunStatusSpacing
	}
	if err := Check(ctx, rc); err != nil {
		return nil, err
	}
	client, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	h := &Hub{cfg: cfg, client: client, informers: map[string]*informer{}, log: cfg.Log,
		ctx: ctx, clock: cfg.Clock, chains: map[hub.Key]*statusChain{},
		flushes: make(chan struct{}, 1), applied: map[hub.ObjectRef]appliedState{}}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if cfg.Store != nil {
		go h.flushLoop()
	}
	if h.clock == nil {
		h.clock = clock.Real{}
	}
	if cfg.Deliver {
		h.delivery = delivery.New(delivery.Config{Hub: h, Context: ctx, Clock: h.clock, Log: h.log.With("component", "delivery"),
			Workers: DeliveryWorkers})
		if cfg.Clusters != nil {
			h.delivery.Members().UseClusters(cfg.Clusters)
		}
	}
	// No periodic resync: the engine has its own safety poll, and a resync
	// would wake every run for nothing.
	factory := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
	for kind, gvr := range resources {
		in := &informer{kind: kind, gvr: gvr, inf: factory.ForResource(gvr).Informer(),
			changed: make(chan struct{}), handled: map[string]handledState{}, converted: map[string]conversion{}}
		transform := stripManagedFields
		if isRunKind(kind) {
			transform = transformRun // husk.go
		}
		if err := in.inf.SetTransform(transform); err != nil {
			return nil, err
		}
		if err := in.inf.AddIndexers(cache.Indexers{placementIndex: byPlacement}); err != nil {
			return nil, err
		}
		if _, err := in.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { h.handle(in, nil, obj, false) },
			UpdateFunc: func(old, obj any) { h.handle(in, old, obj, false) },
			DeleteFunc: func(obj any) { h.handle(in, nil, obj, true) },
		}); err != nil {
			return nil, err
		}
		h.informers[kind] = in
	}
	if h.delivery != nil {
		h.kick = make(chan struct{}, 1)
		if err := h.watchWorks(factory); err != nil {
			return nil, err
		}
	}
	factory.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		factory.Shutdown()
	}()
	for gvr, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("the cache of %s did not sync: %w", gvr.Resource, context.Cause(ctx))
		}
	}
	if h.delivery != nil {
		go h.runDelivery(ctx)
	}
	return h, nil
}

// stripManagedFields drops every cached object's managedFields, which
// nothing of the hub reads (the status tree drops them too, mirrored) and
// which the API server keeps when an update omits them: a run's status
// carries an entry per field manager and subresource, and the cache held
// them for every object. Writes built from cached objects omit them, so
// the API server keeps its own.
var stripManagedFields = crcache.TransformStripManagedFields()

// checkServed fails with the fix when the hub lacks gitfleet's CRDs, rather
// than letting the informers wait for resources that never come.
func checkServed(rc *rest.Config) error {
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return err
	}
	served := map[schema.GroupVersionResource]bool{}
	for _, gv := range []string{fleet.PlacementAPIVersion, fleet.ClusterAPIVersion, fleet.GitfleetGroupVersion.String()} {
		list, err := dc.ServerResourcesForGroupVersion(gv)
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("discovering %s on the hub: %w", gv, err)
		}
		if list == nil {
			continue
		}
		for _, r := range list.APIResources {
			served[schema.FromAPIVersionAndKind(gv, r.Kind).GroupVersion().WithResource(r.Name)] = true
		}
	}
	var missing []string
	for _, gvr := range append(slices.Collect(maps.Values(resources)), worksGVR) {
		if !served[gvr] {
			missing = append(missing, gvr.Resource+"."+gvr.Group)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("the hub does not serve %v; install gitfleet's CRDs: kubectl apply --server-side -R -f config/crd/", missing)
	}
	return nil
}

// Subscribe implements hub.Notifier. f runs on an informer's goroutine,
// after the hub's cache holds the change.
func (h *Hub) Subscribe(f func(hub.Event)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.subscribers = append(h.subscribers, f)
}

// handle turns an informer event into the hub.Event the embedded hub emits
// for the same change, counts plan revisions, and then wakes writers
// waiting for their write.
func (h *Hub) handle(in *informer, old, obj any, deleted bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	var prev *unstructured.Unstructured
	if old != nil {
		prev, _ = old.(*unstructured.Unstructured)
	}
	// A member agent's heartbeat, copied into its MemberCluster every
	// minute, changes nothing the engine reads: an event would wake every
	// placement (1,000 members: 17 times a second). Nor is it mirrored:
	// the status tree in Git shows a member's state as of its last real
	// change, not a commit of every member's heartbeat (with 1,000 members
	// the status tree was never done flushing).
	heartbeat := in.kind == fleet.KindMemberCluster && !deleted && heartbeatOnly(prev, u)
	if !heartbeat && changesPlan(in.kind, prev, u, deleted) {
		h.planRevision.Add(1)
	}
	e, wakes := eventOf(in.kind, prev, u)
	wakes = wakes && !heartbeat
	if !heartbeat && h.mirrorEvent(in.kind, u, deleted) && !wakes {
		// A change that wakes a pass reaches the status tree with the
		// flush of that pass's Commit. One that wakes none asks for its
		// flush itself: a run's status written behind the engine
		// (runstatus.go) lands after its pass committed, maybe after the
		// flush that Commit asked for, and a finished run has no later pass.
		h.askFlush()
	}
	switch in.kind {
	case fleet.KindClusterResourceBinding, fleet.KindResourceBinding:
		h.noteBinding(prev, u, deleted)
	case fleet.KindMemberCluster:
		h.noteMember(prev, u, deleted)
	}
	if isRunKind(in.kind) && !deleted && isHusk(u) {
		h.shedFinishedChain(u)
	}
	in.observed(u, deleted)
	if deleted && isRunKind(in.kind) {
		h.forgetRun(hub.Key{Namespace: u.GetNamespace(), Name: u.GetName()})
	}
	if wakes {
		h.notify(e)
	}
}

// heartbeatOnly reports whether a member cluster's update changed only
// its agents' lastReceivedHeartbeat.
func heartbeatOnly(old, u *unstructured.Unstructured) bool {
	if !statusOnly(old, u) {
		return false
	}
	withoutHeartbeats := func(o *unstructured.Unstructured) any {
		status, _ := o.Object["status"].(map[string]any)
		agents, _ := status["agentStatus"].([]any)
		if len(agents) == 0 {
			return status
		}
		out := maps.Clone(status)
		stripped := make([]any, len(agents))
		for i, a := range agents {
			if m, ok := a.(map[string]any); ok {
				m = maps.Clone(m)
				delete(m, "lastReceivedHeartbeat")
				a = m
			}
			stripped[i] = a
		}
		out["agentStatus"] = stripped
		return out
	}
	return equality.Semantic.DeepEqual(withoutHeartbeats(old), withoutHeartbeats(u))
}

// notify tells the subscribers about e.
func (h *Hub) notify(e hub.Event) {
	h.mu.Lock()
	subs := h.subscribers
	h.mu.Unlock()
	for _, s := range subs {
		s(e)
	}
}

// PlanRevision implements hub.Revisioner: it moves, as the embedded
// hub's does, when a placement's spec, a policy snapshot, a member
// cluster, or a binding's state, policy snapshot or deletion changes. It
// moves when the hub handles the change, before a write of the hub
// returns, so the engine sees its own binding writes counted as it
// expects.
func (h *Hub) PlanRevision() uint64 { return h.planRevision.Load() }

func changesPlan(kind string, old, u *unstructured.Unstructured, deleted bool) bool {
	switch kind {
	case fleet.KindClusterResourcePlacement, fleet.KindResourcePlacement:
		return deleted || !statusOnly(old, u)
	case fleet.KindClusterSchedulingPolicySnapshot, fleet.KindSchedulingPolicySnapshot, fleet.KindMemberCluster:
		return true
	case fleet.KindClusterResourceBinding, fleet.KindResourceBinding:
		if deleted || old == nil {
			return true
		}
		field := func(o *unstructured.Unstructured, f string) string {
			v, _, _ := unstructured.NestedString(o.Object, "spec", f)
			return v
		}
		return field(old, "state") != field(u, "state") ||
			field(old, "schedulingPolicySnapshotName") != field(u, "schedulingPolicySnapshotName") ||
			(old.GetDeletionTimestamp() == nil) != (u.GetDeletionTimestamp() == nil)
	}
	return false
}

// eventOf maps a change to the event the embedded hub emits for it. The
// embedded hub emits nothing for the engine's own status writes on
// placements and runs (the engine wrote them; waking it again only costs a
// pass), nor for strategies; the same changes are dropped here.
func eventOf(kind string, old, u *unstructured.Unstructured) (hub.Event, bool) {
	key := hub.Key{Namespace: u.GetNamespace(), Name: u.GetName()}
	placement := hub.Key{Namespace: u.GetNamespace(), Name: u.GetLabels()[fleet.PlacementTrackingLabel]}
	switch kind {
	case fleet.KindClusterResourcePlacement, fleet.KindResourcePlacement:
		if statusOnly(old, u) {
			return hub.Event{}, false
		}
		return hub.Event{Kind: hub.EventPlacement, Key: key, Placement: key}, true
	case fleet.KindClusterStagedUpdateRun, fleet.KindStagedUpdateRun:
		if statusOnly(old, u) {
			return hub.Event{}, false
		}
		return hub.Event{Kind: hub.EventUpdateRun, Key: key, Run: key}, true
	case fleet.KindClusterResourceBinding, fleet.KindResourceBinding:
		return hub.Event{Kind: hub.EventBinding, Key: key, Placement: placement}, true
	case fleet.KindClusterResourceSnapshot, fleet.KindResourceSnapshot:
		return hub.Event{Kind: hub.EventResourceSnapshot, Key: key, Placement: placement}, true
	case fleet.KindClusterSchedulingPolicySnapshot, fleet.KindSchedulingPolicySnapshot:
		return hub.Event{Kind: hub.EventPolicySnapshot, Key: key, Placement: placement}, true
	case fleet.KindMemberCluster:
		return hub.Event{Kind: hub.EventMemberCluster, Key: key}, true
	case fleet.KindClusterResourcePlacementEviction:
		if statusOnly(old, u) {
			return hub.Event{}, false
		}
		name, _, _ := unstructured.NestedString(u.Object, "spec", "placementName")
		return hub.Event{Kind: hub.EventEviction, Key: key, Placement: hub.Key{Name: name}}, true
	case fleet.KindRolloutWindow:
		return hub.Event{Kind: hub.EventRolloutWindow, Key: key}, true
	case fleet.KindClusterApprovalRequest, fleet.KindApprovalRequest:
		run, _, _ := unstructured.NestedString(u.Object, "spec", "parentStageRollout")
		return hub.Event{Kind: hub.EventApprovalRequest, Key: key, Run: hub.Key{Namespace: u.GetNamespace(), Name: run}}, true
	}
	return hub.Event{}, false
}

// statusOnly reports whether an update changed nothing a person writes:
// spec (the generation), labels, annotations, the deletion. Finalizer
// changes are the engine's own too.
func statusOnly(old, u *unstructured.Unstructured) bool {
	if old == nil {
		return false
	}
	return old.GetGeneration() == u.GetGeneration() &&
		labels.Equals(old.GetLabels(), u.GetLabels()) &&
		labels.Equals(old.GetAnnotations(), u.GetAnnotations()) &&
		(old.GetDeletionTimestamp() == nil) == (u.GetDeletionTimestamp() == nil)
}

func (in *informer) observed(u *unstructured.Unstructured, deleted bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	rv := u.GetResourceVersion()
	if in.seen == "" || !atLeast(in.seen, rv) {
		in.seen = rv
	}
	key := cacheKey(u.GetNamespace(), u.GetName())
	if deleted {
		delete(in.handled, key)
		delete(in.converted, key)
	} else {
		in.handled[key] = handledState{resourceVersion: rv, terminating: u.GetDeletionTimestamp() != nil}
		// A conversion of an older state is of no more use; kept, that of
		// a run read last before it finished would keep the whole run
		// the cache keeps as a husk (husk.go).
		if c, ok := in.converted[key]; ok && !atLeast(c.resourceVersion, rv) {
			delete(in.converted, key)
		}
	}
	close(in.changed)
	in.changed = make(chan struct{})
}

// waitFor blocks until done holds for what the hub handled, rechecking
// after every event, or until ctx ends.
func (in *informer) waitFor(ctx context.Context, done func(seen string, handled map[string]handledState) bool) error {
	for {
		in.mu.Lock()
		ch := in.changed
		ok := done(in.seen, in.handled)
		in.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for the hub's %s cache: %w", in.gvr.Resource, context.Cause(ctx))
		}
	}
}

// caughtUp waits until the hub handled the write that returned u (or a
// newer state of the object's resource).
func (in *informer) caughtUp(ctx context.Context, u *unstructured.Unstructured) error {
	rv := u.GetResourceVersion()
	key := cacheKey(u.GetNamespace(), u.GetName())
	return in.waitFor(ctx, func(seen string, handled map[string]handledState) bool {
		return atLeast(seen, rv) || atLeast(handled[key].resourceVersion, rv)
	})
}

// handledAt reports whether the hub handled key at resourceVersion rv or
// later, or handles key no more (it was deleted).
func (in *informer) handledAt(key hub.Key, rv string) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	st, ok := in.handled[cacheKey(key.Namespace, key.Name)]
	return !ok || atLeast(st.resourceVersion, rv)
}

// gone waits until the hub handled the deletion of key: it is absent, or
// terminating (a finalizer keeps it).
func (in *informer) gone(ctx context.Context, key hub.Key) error {
	return in.waitFor(ctx, func(_ string, handled map[string]handledState) bool {
		st, ok := handled[cacheKey(key.Namespace, key.Name)]
		return !ok || st.terminating
	})
}

// absent waits until the hub handled the removal of key.
func (in *informer) absent(ctx context.Context, key hub.Key) error {
	return in.waitFor(ctx, func(_ string, handled map[string]handledState) bool {
		_, ok := handled[cacheKey(key.Namespace, key.Name)]
		return !ok
	})
}

// atLeast compares resourceVersions as the API server defines them
// (comparable integers); an unparsable one only matches itself.
func atLeast(have, want string) bool {
	c, err := resourceversion.CompareResourceVersion(have, want)
	if err != nil {
		return have == want
	}
	return c >= 0
}

func cacheKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// ---- reading ----

// get reads one object of kind from the cache into out.
func (h *Hub) get(kind string, key hub.Key, out runtime.Object) error {
	in := h.informers[kind]
	obj, ok, err := in.inf.GetStore().GetByKey(cacheKey(key.Namespace, key.Name))
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s %q: %w", kind, keyString(key), apierrors.NewNotFound(in.gvr.GroupResource(), key.Name))
	}
	return in.convert(obj.(*unstructured.Unstructured), out)
}

// convert fills out (a typed object of in's kind) from u, a cached
// object: a deep copy of the conversion made when the cache first handed
// out u at its resourceVersion. The engine reads every member cluster,
// binding and snapshot of a placement on each pass, and converting the
// same unchanged objects again through reflection was a quarter of
// serve's CPU (BenchmarkPullFleet).
func (in *informer) convert(u *unstructured.Unstructured, out runtime.Object) error {
	key, rv := cacheKey(u.GetNamespace(), u.GetName()), u.GetResourceVersion()
	in.mu.Lock()
	c, ok := in.converted[key]
	in.mu.Unlock()
	if !ok || c.resourceVersion != rv || reflect.TypeOf(c.obj) != reflect.TypeOf(out) {
		if err := fromUnstructured(u, out); err != nil {
			return err
		}
		in.mu.Lock()
		if _, live := in.handled[key]; live {
			in.converted[key] = conversion{resourceVersion: rv, obj: out.DeepCopyObject()}
		}
		in.mu.Unlock()
		return nil
	}
	reflect.ValueOf(out).Elem().Set(reflect.ValueOf(c.obj.DeepCopyObject()).Elem())
	return nil
}

// conversion is a cached object's typed conversion at a resourceVersion.
type conversion struct {
	resourceVersion string
	obj             runtime.Object
}

// list returns the cached objects of kind in namespace (every namespace
// when all) that carry sel, converted by newT and sorted by namespace and
// name.
func list[T object](h *Hub, kind, namespace string, all bool, sel labels.Selector, newT func() T) ([]T, error) {
	in := h.informers[kind]
	lister := cache.NewGenericLister(in.inf.GetIndexer(), in.gvr.GroupResource())
	var objs []runtime.Object
	var err error
	if all || namespace == "" {
		objs, err = lister.List(sel)
	} else {
		objs, err = lister.ByNamespace(namespace).List(sel)
	}
	if err != nil {
		return nil, err
	}
	return typed(in, objs, newT)
}

// placementIndex indexes every informer's objects by the placement that
// tracks them (PlacementTrackingLabel, as <namespace>/<name>): the engine
// lists a placement's bindings and snapshots on every pass over a run, and
// a label selector tested every binding of the hub each time (10,000 of
// them for 100 placements of 100 clusters, BenchmarkPullFleet).
const placementIndex = "placement"

func byPlacement(obj any) ([]string, error) {
	m, err := apimeta.Accessor(obj)
	if err != nil {
		return nil, nil
	}
	p, ok := m.GetLabels()[fleet.PlacementTrackingLabel]
	if !ok {
		return nil, nil
	}
	return []string{m.GetNamespace() + "/" + p}, nil
}

// listOfPlacement lists, sorted, the objects of kind that placement
// tracks.
func listOfPlacement[T object](h *Hub, kind string, placement hub.Key, newT func() T) ([]T, error) {
	in := h.informers[kind]
	objs, err := in.inf.GetIndexer().ByIndex(placementIndex, placement.Namespace+"/"+placement.Name)
	if err != nil {
		return nil, err
	}
	out := make([]runtime.Object, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(runtime.Object))
	}
	return typed(in, out, newT)
}

// typed converts objects of in's cache, sorted by namespace and name.
func typed[T object](in *informer, objs []runtime.Object, newT func() T) ([]T, error) {
	return convertAll(objs, func(u *unstructured.Unstructured) (T, error) {
		t := newT()
		return t, in.convert(u, t)
	})
}

// typedShared is typed without the copies: the conversions the cache
// keeps, themselves, for a caller that promises not to modify them (the
// read-only contract of hub.ReadOnlyBindings). An object the cache keeps
// no conversion of yet is converted for the caller.
func typedShared[T object](in *informer, objs []runtime.Object, newT func() T) ([]T, error) {
	return convertAll(objs, func(u *unstructured.Unstructured) (T, error) {
		in.mu.Lock()
		c, ok := in.converted[cacheKey(u.GetNamespace(), u.GetName())]
		in.mu.Unlock()
		if t, same := c.obj.(T); ok && same && c.resourceVersion == u.GetResourceVersion() {
			return t, nil
		}
		t := newT()
		return t, in.convert(u, t)
	})
}

// convertAll converts objs, cached objects, with conv, sorted by namespace
// and name.
func convertAll[T object](objs []runtime.Object, conv func(*unstructured.Unstructured) (T, error)) ([]T, error) {
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		t, err := conv(o.(*unstructured.Unstructured))
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.GetNamespace() != b.GetNamespace() {
			return a.GetNamespace() < b.GetNamespace()
		}
		return a.GetName() < b.GetName()
	})
	return out, nil
}

// listBoth lists the cluster-scoped and the namespaced kind of a family.
func listBoth[T object](h *Hub, clusterKind, namespacedKind string, newT func() T) ([]T, error) {
	a, err := list(h, clusterKind, "", true, labels.Everything(), newT)
	if err != nil {
		return nil, err
	}
	b, err := list(h, namespacedKind, "", true, labels.Everything(), newT)
	if err != nil {
		return nil, err
	}
	return append(a, b...), nil
}

func fromUnstructured(u *unstructured.Unstructured, out runtime.Object) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return fmt.Errorf("converting %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}

var errNoResources = errors.New("the kube hub has no workload resources configured (Config.Resources): runs need a resourceSnapshotIndex")

func keyString(k hub.Key) string {
	if k.Namespace == "" {
		return k.Name
	}
	return k.Namespace + "/" + k.Name
}
