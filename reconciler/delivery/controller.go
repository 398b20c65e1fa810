package delivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

// Hub is the part of the hub seam delivery reads and writes.
type Hub interface {
	hub.Placements
	hub.Bindings
	hub.ResourceSnapshots
	hub.MemberClusters
}

// DriverSource chooses the transport of a member cluster;
// *member.Drivers, which the Controller starts with, chooses by the
// member's gitfleet.io/driver annotation.
type DriverSource interface {
	For(m *fleet.MemberCluster) member.Driver
}

// Controller is the work generator of one hub. Its methods are safe for
// concurrent use; Observe and MemberChanged never call the hub, so a hub
// may call them with its own lock held.
type Controller struct {
	hub     Hub
	ctx     context.Context
	clock   clock.Clock
	log     *slog.Logger
	members *member.Drivers

	// dispatching serializes Dispatch: a hub may run it from more than
	// one goroutine (the kube hub on a Work's report, and on Commit).
	dispatching sync.Mutex
	// workers is how many intents one Dispatch performs at once.
	workers int

	mu      sync.Mutex
	drivers DriverSource
	seq     uint64
	pending map[hub.Key]intent
	// delivered remembers, per cluster delivered to, the annotations that
	// chose and shaped its transport then (member.DriverConfig), so a
	// change delivers its bindings again. Only the annotations: which
	// bindings the cluster has, Dispatch asks the hub (changed), a change
	// of transport being rare and a list per cluster megabytes at 10,000.
	delivered map[string]string
	// changed holds the clusters whose transport changed since their last
	// delivery: Dispatch delivers their bindings again.
	changed map[string]struct{}
}

type intentKind int

const (
	deliverIntent intentKind = iota + 1
	removeIntent
	// refreshIntent: a Work of the binding changed (pull.go); its
	// conditions are made again, or its removal goes on.
	refreshIntent
)

// intent is a side effect a binding change asked for: deliver the binding
// as the hub holds it when the intent is dispatched, remove what it
// delivered, or refresh it from its Works.
type intent struct {
	kind intentKind
	key  hub.Key
	seq  uint64
}

// Config is what a Controller works with.
type Config struct {
	Hub Hub
	// Context bounds the writes of the members' reports, which carry
	// none (default context.Background()).
	Context context.Context
	// Clock stamps the members' reports.
	Clock clock.Clock
	Log   *slog.Logger
	// Workers is how many deliveries and removals of different bindings
	// Dispatch performs at once (default 1, one after the other). A hub
	// whose writes each wait on a round trip (the kube hub) delivers
	// thousands of bindings one at a time no faster than its API server's
	// latency allows.
	Workers int
}

// New returns the controller of cfg.Hub, delivering through a
// member.Drivers of its own (Members) that reports to it.
func New(cfg Config) *Controller {
	c := &Controller{
		hub: cfg.Hub, ctx: cfg.Context, clock: cfg.Clock, log: cfg.Log, workers: max(cfg.Workers, 1),
		pending: map[hub.Key]intent{}, delivered: map[string]string{}, changed: map[string]struct{}{},
	}
	if c.ctx == nil {
		c.ctx = context.Background()
	}
	if c.clock == nil {
		c.clock = clock.Real{}
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.members = member.NewDrivers(c.clock, c, c.log)
	c.drivers = c.members
	return c
}

// Members is the registry of member drivers the controller started with;
// it shows what each simulated member holds.
func (c *Controller) Members() *member.Drivers { return c.members }

// SetDrivers replaces how member transports are chosen.
func (c *Controller) SetDrivers(d DriverSource) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drivers = d
}

// Pending is the number of deliveries, removals and clusters delivered to
// again that wait for Dispatch.
func (c *Controller) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending) + len(c.changed)
}

// Observe turns a binding change into a pending side effect; old is nil
// for a new binding, cur nil for one gone from the hub. A Bound binding
// is delivered at its generation once its rollout started there
// (rolloutDecided): the run's RolloutStarted write, which follows its
// bind, wakes the delivery. One that starts terminating has its
// resources removed, whatever its RolloutStarted says. Scheduled and
// Unscheduled deliver nothing new: what is on the member stays until the
// binding is deleted. The latest change wins.
//
// Observe reads of a binding only its metadata, spec.state and its
// RolloutStarted condition.
func (c *Controller) Observe(old, cur *fleet.Binding) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case cur == nil:
		// Gone: without the work-cleanup finalizer nothing was delivered;
		// a terminating one had its removal queued when it started
		// terminating.
		if old.DeletionTimestamp == nil {
			c.dropDeliveryLocked(keyOf(old))
		}
	case cur.DeletionTimestamp != nil:
		if old == nil || old.DeletionTimestamp == nil {
			c.queueLocked(removeIntent, keyOf(cur))
		}
	case cur.Spec.State == fleet.BindingStateBound && rolloutDecided(cur):
		if old == nil || old.Spec.State != fleet.BindingStateBound || old.Generation != cur.Generation || !rolloutDecided(old) {
			c.queueLocked(deliverIntent, keyOf(cur))
		}
	default:
		c.dropDeliveryLocked(keyOf(cur))
	}
}

// MemberChanged delivers again, on the next Dispatch, every binding of m
// when its transport annotations changed since it was last delivered to
// (member.DriverConfig), so a member given its driver annotation, or moved
// from simulated to a real cluster, receives what it is bound to without
// a new run.
func (c *Controller) MemberChanged(m *fleet.MemberCluster) {
	c.mu.Lock()
	defer c.mu.Unlock()
	config, ok := c.delivered[m.Name]
	if !ok || config == member.DriverConfig(m.Annotations) {
		return
	}
	c.delivered[m.Name] = member.DriverConfig(m.Annotations)
	c.changed[m.Name] = struct{}{}
}

// queueChanged queues a delivery of every Bound binding of the clusters
// whose transport changed (MemberChanged); on an error they stay changed.
func (c *Controller) queueChanged(ctx context.Context) error {
	c.mu.Lock()
	changed := c.changed
	c.changed = map[string]struct{}{}
	c.mu.Unlock()
	if len(changed) == 0 {
		return nil
	}
	var keys []hub.Key
	placements, err := c.hub.ListPlacements(ctx)
	for _, p := range placements {
		if err != nil {
			break
		}
		var bindings []*fleet.Binding
		bindings, err = hub.ListBindingsReadOnly(ctx, c.hub, keyOfPlacement(p))
		for _, b := range bindings {
			if _, ok := changed[b.Spec.TargetCluster]; ok && b.DeletionTimestamp == nil && deliverable(b) {
				keys = append(keys, keyOf(b))
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		maps.Copy(c.changed, changed)
		return fmt.Errorf("listing the bindings of member clusters whose transport changed: %w", err)
	}
	slices.SortFunc(keys, compareKeys)
	for _, k := range keys {
		if _, pending := c.pending[k]; !pending {
			c.queueLocked(deliverIntent, k)
		}
	}
	return nil
}

// Resync queues a delivery of every Bound binding whose rollout started
// and a removal of every terminating one: after a start, what the members
// hold is not known, so every decision is made again (idempotently) on
// the next Dispatch.
func (c *Controller) Resync(bindings []*fleet.Binding) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range bindings {
		switch {
		case b.DeletionTimestamp != nil:
			c.queueLocked(removeIntent, keyOf(b))
		case deliverable(b):
			c.queueLocked(deliverIntent, keyOf(b))
		}
	}
}

func (c *Controller) queueLocked(kind intentKind, key hub.Key) {
	c.seq++
	c.pending[key] = intent{kind: kind, key: key, seq: c.seq}
}

func (c *Controller) dropDeliveryLocked(key hub.Key) {
	if in, ok := c.pending[key]; ok && in.kind == deliverIntent {
		delete(c.pending, key)
	}
}

// Guard gives every binding about to be delivered the work-cleanup
// finalizer (fleet.WorkFinalizer). A hub whose writes become durable
// later (the embedded hub's flush) calls it before making them durable,
// so a binding is never delivered before a durable finalizer holds it;
// Dispatch guards each binding it delivers anyway.
func (c *Controller) Guard(ctx context.Context) error {
	var errs []error
	for _, in := range c.snapshot() {
		if in.kind != deliverIntent {
			continue
		}
		_, err := c.guard(ctx, in.key)
		if hub.IsNotFound(err) {
			c.forget(in)
			continue
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// snapshot is the pending intents, oldest first.
func (c *Controller) snapshot() []intent {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]intent, 0, len(c.pending))
	for _, in := range c.pending {
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

// forget drops in unless a newer intent replaced it.
func (c *Controller) forget(in intent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.pending[in.key]; ok && cur.seq == in.seq {
		delete(c.pending, in.key)
	}
}

// guard adds the work-cleanup finalizer to the binding at key unless it
// holds it or is terminating, and returns the binding as the hub holds it
// after (read-only: hub.AddBindingFinalizer).
func (c *Controller) guard(ctx context.Context, key hub.Key) (*fleet.Binding, error) {
	b, err := hub.AddBindingFinalizer(ctx, c.hub, key, fleet.WorkFinalizer)
	if err != nil {
		return nil, fmt.Errorf("guarding binding %s with the work-cleanup finalizer: %w", hub.KeyString(key), err)
	}
	return b, nil
}

// Dispatch performs the pending deliveries and removals, oldest first, on
// the bindings as the hub holds them now, up to Config.Workers at once
// (each intent is a different binding's). A failed one stays pending
// (unless a newer change replaced it) and its error is returned after
// every pending one was tried.
func (c *Controller) Dispatch(ctx context.Context) error {
	c.dispatching.Lock()
	defer c.dispatching.Unlock()
	err := c.queueChanged(ctx)
	read := func(key hub.Key) (*fleet.Binding, error) { return hub.GetBindingReadOnly(ctx, c.hub, key) }
	return errors.Join(err, c.dispatchAll(ctx, c.snapshot(), read))
}

// dispatchAll performs intents, oldest first, up to Config.Workers at
// once, each on the binding read returns. The caller holds dispatching.
func (c *Controller) dispatchAll(ctx context.Context, intents []intent, read func(hub.Key) (*fleet.Binding, error)) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	slots := make(chan struct{}, c.workers)
	for _, in := range intents {
		c.forget(in)
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			if err := c.dispatch(ctx, in, read); err != nil {
				c.requeue(in)
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Sealed is the side effects a commit guards, fixed when it was sealed
// (Seal): the intents pending then, each with its binding as the hub held
// it (nil: gone).
type Sealed struct {
	intents  []intent
	bindings map[hub.Key]*fleet.Binding
}

// Seal fixes the side effects of the commit being sealed: those pending
// now, the clusters whose transport changed included, each on its binding
// as the hub holds it now. Call it while no pass writes the hub, after
// Guard; DispatchSealed performs them once the commit is durable.
func (c *Controller) Seal(ctx context.Context) (Sealed, error) {
	c.dispatching.Lock()
	defer c.dispatching.Unlock()
	err := c.queueChanged(ctx)
	sealed := Sealed{intents: c.snapshot(), bindings: map[hub.Key]*fleet.Binding{}}
	for _, in := range sealed.intents {
		b, gerr := hub.GetBindingReadOnly(ctx, c.hub, in.key)
		switch {
		case hub.IsNotFound(gerr):
			b = nil
		case gerr != nil:
			return Sealed{}, errors.Join(err, gerr)
		}
		sealed.bindings[in.key] = b
	}
	return sealed, err
}

// DispatchSealed performs the side effects s fixed, as Dispatch does but
// on each binding as it was sealed: a binding written since (its write
// not yet durable) is delivered as its durable version, and its newer
// intent waits for the next commit.
func (c *Controller) DispatchSealed(ctx context.Context, s Sealed) error {
	c.dispatching.Lock()
	defer c.dispatching.Unlock()
	return c.dispatchAll(ctx, s.intents, func(key hub.Key) (*fleet.Binding, error) {
		if b := s.bindings[key]; b != nil {
			return b, nil
		}
		return nil, hub.NotFound("binding", key)
	})
}

// requeue puts a failed intent back unless a newer one replaced it.
func (c *Controller) requeue(in intent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pending[in.key]; !ok {
		c.pending[in.key] = in
	}
}

func (c *Controller) dispatch(ctx context.Context, in intent, read func(hub.Key) (*fleet.Binding, error)) error {
	// Read-only: what delivery writes (the finalizer, a report) it copies.
	b, err := read(in.key)
	if hub.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	m, err := c.member(ctx, b.Spec.TargetCluster)
	if err != nil {
		return err
	}
	c.mu.Lock()
	drivers := c.drivers
	c.mu.Unlock()
	d := member.Delivery{Binding: b, Member: m}
	log := c.log.With("binding", hub.KeyString(in.key), "cluster", d.Cluster(), "generation", d.Generation())
	kind := in.kind
	if kind == refreshIntent {
		switch {
		case b.DeletionTimestamp != nil:
			kind = removeIntent
		case m != nil && pulls(m):
			kind = deliverIntent
		default:
			return nil
		}
	}
	switch kind {
	case deliverIntent:
		if b.DeletionTimestamp != nil || !deliverable(b) {
			// Not Bound, or its rollout not started at its generation yet:
			// the RolloutStarted write (Observe) brings the delivery back.
			return nil
		}
		if m == nil {
			log.Info("not delivering: the member cluster is not in the fleet")
			return nil
		}
		c.noteDelivered(m)
		if !slices.Contains(b.Finalizers, fleet.WorkFinalizer) {
			if d.Binding, err = c.guard(ctx, in.key); err != nil {
				return err
			}
		}
		src, err := Lookup(ctx, c.hub, b)
		if err != nil {
			return err
		}
		if pulls(m) {
			return c.deliverWorks(ctx, b, m, src, log)
		}
		// Works left from when the member pulled go: it is reached now.
		if _, err := c.removeWorks(ctx, b, m.Name); err != nil {
			return err
		}
		driver := drivers.For(m)
		var failed *metav1.Condition
		if _, ok := driver.(member.WorkDriver); ok {
			// Applied as pulled Works are, reported from their status.
			d.Works, failed = PushWorks(b, m, src)
		} else {
			d.Resources, d.Envelopes, failed = member.Prepare(b, m, src.Snapshots, src.ClusterResourceOverrides, src.ResourceOverrides, src.Missing)
		}
		if failed != nil {
			log.Warn("not delivering", "condition", failed.Type, "reason", failed.Message)
			return c.ReportBindingStatus(in.key, b.Generation, []metav1.Condition{*failed}, member.Placements{})
		}
		if err := driver.Deliver(ctx, d); err != nil {
			return fmt.Errorf("deliver binding %s to member cluster %q: %w", hub.KeyString(in.key), d.Cluster(), err)
		}
		log.Debug("delivered", "snapshot", b.Spec.ResourceSnapshotName)
	case removeIntent:
		done, err := c.removeWorks(ctx, b, b.Spec.TargetCluster)
		if err != nil {
			return err
		}
		if !done {
			// The agent's finalizers hold the Works until it removed what
			// they applied; their deletion (WorkChanged) brings the
			// removal back.
			log.Debug("waiting for the member's agent to remove the works")
			return nil
		}
		switch {
		case m == nil:
			log.Info("member cluster left the fleet; its resources stay on it")
		case !pulls(m):
			if err := drivers.For(m).Remove(ctx, d); err != nil {
				return fmt.Errorf("remove binding %s from member cluster %q: %w", hub.KeyString(in.key), d.Cluster(), err)
			}
			log.Debug("removed")
		}
		return c.release(ctx, b)
	}
	return nil
}

// noteDelivered records the transport configuration m is delivered with.
func (c *Controller) noteDelivered(m *fleet.MemberCluster) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.delivered[m.Name] = member.DriverConfig(m.Annotations)
}

// release drops the work-cleanup finalizer of a terminating binding whose
// resources were removed; with no finalizer left the hub removes it.
func (c *Controller) release(ctx context.Context, b *fleet.Binding) error {
	key := keyOf(b)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if b.DeletionTimestamp == nil || !slices.Contains(b.Finalizers, fleet.WorkFinalizer) {
			return nil
		}
		next := b.DeepCopy()
		next.Finalizers = slices.DeleteFunc(next.Finalizers, func(f string) bool { return f == fleet.WorkFinalizer })
		err := c.hub.UpdateBinding(ctx, next)
		if hub.IsConflict(err) {
			if b, err = c.hub.GetBinding(ctx, key); err != nil {
				return err
			}
			return hub.Conflict(fleet.BindingKind(key.Namespace), key)
		}
		return err
	})
	if err != nil && !hub.IsNotFound(err) {
		return fmt.Errorf("releasing binding %s: %w", hub.KeyString(key), err)
	}
	return nil
}

// MemberClusterGetter is implemented by hubs that read one member
// cluster without listing them all (both do).
type MemberClusterGetter interface {
	GetMemberCluster(ctx context.Context, name string) (*fleet.MemberCluster, error)
}

// member is the member cluster of that name; nil when it is not in the
// fleet.
func (c *Controller) member(ctx context.Context, name string) (*fleet.MemberCluster, error) {
	if ro, ok := c.hub.(hub.ReadOnlyGetter); ok {
		m, err := ro.GetMemberClusterReadOnly(ctx, name)
		if hub.IsNotFound(err) {
			return nil, nil
		}
		return m, err
	}
	if g, ok := c.hub.(MemberClusterGetter); ok {
		m, err := g.GetMemberCluster(ctx, name)
		if hub.IsNotFound(err) {
			return nil, nil
		}
		return m, err
	}
	all, err := c.hub.ListMemberClusters(ctx)
	if err != nil {
		return nil, err
	}
	for _, m := range all {
		if m.Name == name {
			return m, nil
		}
	}
	return nil, nil
}

var _ member.Reporter = (*Controller)(nil)

// ReportBindingStatus implements member.Reporter (member.MergeReport)
// with a status write, retried on a Conflict with another writer: the
// report is ignored when the binding is gone or its generation is no
// longer generation; nothing is written when nothing changed.
func (c *Controller) ReportBindingStatus(key hub.Key, generation int64, conds []metav1.Condition, p member.Placements) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := hub.GetBindingReadOnly(c.ctx, c.hub, key) // MergeReport copies it
		if hub.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		next := member.MergeReport(cur, generation, conds, p, c.clock.Now())
		if next == nil {
			return nil
		}
		// next's status is MergeReport's fresh copy, for this write alone.
		return hub.HandOverBindingStatus(c.ctx, c.hub, next)
	})
}

func keyOf(b *fleet.Binding) hub.Key { return hub.Key{Namespace: b.Namespace, Name: b.Name} }

func keyOfPlacement(p *fleet.Placement) hub.Key { return hub.Key{Namespace: p.Namespace, Name: p.Name} }

func compareKeys(a, b hub.Key) int {
	if a.Namespace != b.Namespace {
		if a.Namespace < b.Namespace {
			return -1
		}
		return 1
	}
	switch {
	case a.Name < b.Name:
		return -1
	case a.Name > b.Name:
		return 1
	}
	return 0
}
