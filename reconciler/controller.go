// Package reconciler drives gitfleet's reconcilers: the scheduler, the
// update-run engine (reconciler/updaterun) and the placement status, on a
// deduplicating work queue fed by hub events and by the engine's requeue
// timers. The same Controller runs against the wall clock in `serve` and in
// virtual time in `simulate`.
package reconciler

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/eviction"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/updaterun"
)

// Key addresses a run or a placement.
type Key = hub.Key

// RunReconciler is the update-run engine.
type RunReconciler interface {
	Reconcile(ctx context.Context, key Key) (updaterun.Result, error)
}

// Scheduler turns a placement's policy into policy snapshots and bindings.
type Scheduler interface {
	Schedule(ctx context.Context, placement Key) error
}

// PlacementStatus recomputes a placement's status from its bindings.
type PlacementStatus func(ctx context.Context, placement Key) error

// EvictionReconciler executes ClusterResourcePlacementEvictions
// (reconciler/eviction).
type EvictionReconciler interface {
	Reconcile(ctx context.Context, key Key) (eviction.Result, error)
}

// Committer makes the hub's changes durable and then performs the side
// effects they guard (deliveries to members). It runs after every pass.
type Committer interface {
	Commit(ctx context.Context) error
}

// PassObserver is told about every run pass, with the run before and after
// (nil when absent); `simulate` builds its timeline from it.
type PassObserver func(before, after *fleet.UpdateRun)

// Controller is the work loop.
type Controller struct {
	Hub       hub.Hub
	Clock     clock.Clock
	Runs      RunReconciler
	Scheduler Scheduler          // optional
	Status    PlacementStatus    // optional
	Evictions EvictionReconciler // optional
	Committer Committer          // optional
	Observer  PassObserver       // optional
	// OnError is told about every failed reconcile, by controller name
	// (scheduler, updaterun, placement, commit); optional, for metrics. A
	// run pass that lost a write to a Conflict is retried, not failed
	// (Conflicts counts those).
	OnError func(controller string, err error)
	// OnConflict is told about every run pass retried after a Conflict,
	// with the kind of the object whose write lost (ConflictKind);
	// optional, for metrics.
	OnConflict func(kind string)
	Log        *slog.Logger
	// SafetyPoll re-checks every run at least this often even when nothing
	// was requeued (default 5m).
	SafetyPoll time.Duration
	// StatusDelay debounces placement status updates (default 1s), so a pass
	// that touches many bindings recomputes the status once.
	StatusDelay time.Duration
	// Workers is how many items Run processes at once (default 1). The
	// queue never gives one item (a run, a placement) to two workers at
	// once. More than one needs a Hub and a Committer safe for concurrent
	// use: the Kubernetes hub, where each pass mostly waits on the API
	// server, and a placement's status write need not hold up run passes.
	Workers int

	q       *queue
	once    sync.Once
	mu      sync.Mutex
	results map[Key]updaterun.Result
	errs    map[Key]error
	// runs maps every known run to its placement, so a binding event finds
	// the runs to wake without listing (and copying) every run's status.
	runs map[Key]Key
	// ended holds the runs that have ended for good (updaterun.Ended):
	// binding, scheduling and window events do not wake them, so the
	// cost of a binding event does not grow with a placement's finished
	// runs. A run event (its spec changed, it is being deleted) wakes it.
	ended map[Key]bool
	// scheduling keeps a run's passes out of its placement's scheduling
	// (write-locked while the scheduler works, read-locked by run passes).
	// With one worker the placement, queued first, is scheduled first;
	// with more, a run created with its placement would initialize while
	// the scheduler is still at work and fail for good ("policy snapshot
	// not fully scheduled yet").
	scheduling map[Key]*sync.RWMutex
	// unscheduled holds the placements queued for scheduling and not yet
	// taken by the scheduler. A run of one waits for it: the lock above
	// covers a scheduling in progress, not one queued behind the run (a
	// commit that changes a placement and its members' labels and adds a
	// run queues the placement first, but with two workers the run's pass
	// could still start first, see the old policy snapshot with a member
	// the new one drops, and fail for good: "some clusters are not placed
	// in any stage"). The scheduler's pass wakes the placement's runs.
	unscheduled map[Key]bool
	// evicted maps the bindings evictions deleted to their placements: once
	// such a binding is gone, its placement is scheduled again (a PickN
	// placement picks another cluster, or the same one, as upstream's
	// scheduler does when a binding is deleted).
	evicted map[Key]Key
	// waitingOnScheduling counts run passes waiting for their placement's
	// scheduling, for tests that provoke the wait.
	waitingOnScheduling atomic.Int64
	// conflicts counts run passes that lost a write to a Conflict (a stale
	// resourceVersion: another writer came first) and were retried.
	conflicts atomic.Int64
}

const (
	statusItem   itemKind = 2
	evictionItem itemKind = 3
)

func (c *Controller) init() {
	c.once.Do(func() {
		c.q = newQueue(c.Clock)
		c.results = map[Key]updaterun.Result{}
		c.errs = map[Key]error{}
		c.runs = map[Key]Key{}
		c.ended = map[Key]bool{}
		c.scheduling = map[Key]*sync.RWMutex{}
		c.unscheduled = map[Key]bool{}
		c.evicted = map[Key]Key{}
		if c.Log == nil {
			c.Log = slog.New(slog.DiscardHandler)
		}
		if c.SafetyPoll == 0 {
			c.SafetyPoll = 5 * time.Minute
		}
		if c.StatusDelay == 0 {
			c.StatusDelay = time.Second
		}
		if n, ok := c.Hub.(hub.Notifier); ok {
			n.Subscribe(c.onEvent)
		}
	})
}

// onEvent maps hub changes to work, which is what makes cluster completion
// wake its run at once (deliberate difference 1).
func (c *Controller) onEvent(e hub.Event) {
	switch e.Kind {
	case hub.EventUpdateRun:
		c.trackRun(e.Run)
		c.q.add(item{runItem, e.Run})
	case hub.EventApprovalRequest:
		if e.Run.Name != "" {
			c.q.add(item{runItem, e.Run})
		}
	case hub.EventEviction:
		c.q.add(item{evictionItem, e.Key})
	case hub.EventBinding:
		c.rescheduleIfEvicted(e.Key)
		c.enqueueRunsOf(e.Placement)
		c.q.addAfter(item{statusItem, e.Placement}, c.StatusDelay)
	case hub.EventPlacement:
		c.schedule(e.Placement)
	case hub.EventMemberCluster:
		c.EnqueueAllPlacements()
	case hub.EventRolloutWindow:
		c.enqueueAllRuns()
	case hub.EventPolicySnapshot, hub.EventResourceSnapshot:
		c.q.addAfter(item{statusItem, e.Placement}, c.StatusDelay)
	}
}

// enqueueAllRuns wakes every run, for a change that any of them may wait
// on (a RolloutWindow).
func (c *Controller) enqueueAllRuns() {
	c.mu.Lock()
	keys := make([]Key, 0, len(c.runs))
	for run := range c.runs {
		if !c.ended[run] {
			keys = append(keys, run)
		}
	}
	c.mu.Unlock()
	for _, k := range keys {
		c.q.add(item{runItem, k})
	}
}

func (c *Controller) enqueueRunsOf(placement Key) {
	c.mu.Lock()
	var keys []Key
	for run, p := range c.runs {
		if p == placement && !c.ended[run] {
			keys = append(keys, run)
		}
	}
	c.mu.Unlock()
	for _, k := range keys {
		c.q.add(item{runItem, k})
	}
}

// rescheduleIfEvicted schedules the placement of a binding an eviction
// deleted once the binding is gone.
func (c *Controller) rescheduleIfEvicted(binding Key) {
	c.mu.Lock()
	placement, ok := c.evicted[binding]
	c.mu.Unlock()
	if !ok {
		return
	}
	if _, err := c.Hub.GetBinding(context.Background(), binding); !hub.IsNotFound(err) {
		return
	}
	c.mu.Lock()
	delete(c.evicted, binding)
	c.mu.Unlock()
	c.schedule(placement)
}

// trackRun records (or forgets) which placement a run rolls out and
// whether it has ended. Run events come from spec changes and deletions
// only, so this read is rare.
func (c *Controller) trackRun(key Key) {
	r, err := c.Hub.GetUpdateRun(context.Background(), key)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		delete(c.runs, key)
		delete(c.ended, key)
		return
	}
	c.runs[key] = Key{Namespace: r.Namespace, Name: r.Spec.PlacementName}
	c.ended[key] = updaterun.Ended(r)
}

// EnqueueRun asks for a pass of one run.
func (c *Controller) EnqueueRun(key Key) {
	c.init()
	c.q.add(item{runItem, key})
}

// EnqueuePlacement asks for scheduling and a status update of a placement.
func (c *Controller) EnqueuePlacement(key Key) {
	c.init()
	c.schedule(key)
}

// schedule queues a placement for scheduling; its runs wait until the
// scheduler has taken it.
func (c *Controller) schedule(key Key) {
	c.mu.Lock()
	c.unscheduled[key] = true
	c.mu.Unlock()
	c.q.add(item{placementItem, key})
}

// EnqueueAll queues every placement and every run.
func (c *Controller) EnqueueAll() {
	c.init()
	c.EnqueueAllPlacements()
	// Without the clusters of the finished runs, which EnqueueAll does not
	// read: a start after a hundred finished runs of 1,000 clusters does
	// not read them all whole (on a Kubernetes hub, from its API server).
	runs, _ := c.Hub.ListUpdateRunsWithoutClusters(context.Background())
	c.mu.Lock()
	for _, r := range runs {
		k := Key{Namespace: r.Namespace, Name: r.Name}
		c.runs[k] = Key{Namespace: r.Namespace, Name: r.Spec.PlacementName}
		c.ended[k] = updaterun.Ended(r)
	}
	c.mu.Unlock()
	for _, r := range runs {
		c.q.add(item{runItem, Key{Namespace: r.Namespace, Name: r.Name}})
	}
	if c.Evictions != nil {
		evictions, _ := c.Hub.ListEvictions(context.Background())
		for _, e := range evictions {
			if !e.IsTerminal() {
				c.q.add(item{evictionItem, Key{Name: e.Name}})
			}
		}
	}
}

// EnqueueAllPlacements queues every placement for scheduling.
func (c *Controller) EnqueueAllPlacements() {
	c.init()
	ps, _ := c.Hub.ListPlacements(context.Background())
	for _, p := range ps {
		c.schedule(Key{Namespace: p.Namespace, Name: p.Name})
	}
}

// Drain processes queued work until the queue is empty. It does not wait
// for timers: in virtual time the caller advances the clock and drains again.
func (c *Controller) Drain(ctx context.Context) {
	c.init()
	for ctx.Err() == nil {
		it, ok := c.q.pop()
		if !ok {
			return
		}
		c.process(ctx, it)
		c.q.done(it)
	}
}

// Run processes work with Workers workers until ctx is done; timers fire
// on the controller's clock. It returns after the current items finish.
func (c *Controller) Run(ctx context.Context) {
	c.init()
	defer c.q.stopTimers()
	var wg sync.WaitGroup
	for range max(c.Workers, 1) {
		wg.Go(func() {
			for {
				c.Drain(ctx)
				select {
				case <-ctx.Done():
					return
				case <-c.q.wake:
				}
			}
		})
	}
	wg.Wait()
}

// TimersDueWithin is the number of the controller's requeue timers that
// fire within d: with the queue idle and none due within the placement
// status debounce, nothing will move until a run's next poll.
func (c *Controller) TimersDueWithin(d time.Duration) int {
	c.init()
	return c.q.timersDueWithin(d)
}

// PendingTimers is the number of the controller's own requeue timers.
func (c *Controller) PendingTimers() int {
	c.init()
	return c.q.pendingTimers()
}

// Blocked reports whether every known run is blocked on a person (or
// finished) and its last pass succeeded. Runs never reconciled yet count as
// not blocked.
func (c *Controller) Blocked(ctx context.Context) bool {
	c.init()
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.runs {
		res, seen := c.results[k]
		if !seen || !res.Blocked || c.errs[k] != nil {
			return false
		}
	}
	return true
}

func (c *Controller) process(ctx context.Context, it item) {
	switch it.kind {
	case runItem:
		c.processRun(ctx, it)
	case placementItem:
		l := c.schedulingLock(it.key)
		l.Lock()
		c.mu.Lock()
		delete(c.unscheduled, it.key) // under the lock: its runs now wait on it
		c.mu.Unlock()
		var err error
		if c.Scheduler != nil {
			err = c.Scheduler.Schedule(ctx, it.key)
		}
		l.Unlock()
		if err != nil {
			c.mu.Lock()
			c.unscheduled[it.key] = true // its runs wait for the retry
			c.mu.Unlock()
			c.Log.Error("scheduling failed", "placement", hub.KeyString(it.key), "err", err)
			c.failed(ControllerScheduler, err)
			c.q.addAfter(it, c.q.failed(it))
			return
		}
		c.q.forget(it)
		c.commit(ctx)
		c.q.addAfter(item{statusItem, it.key}, c.StatusDelay)
		c.enqueueRunsOf(it.key)
	case evictionItem:
		c.processEviction(ctx, it)
	case statusItem:
		if c.Status != nil {
			if err := c.Status(ctx, it.key); err != nil && !hub.IsNotFound(err) {
				c.Log.Error("placement status update failed", "placement", hub.KeyString(it.key), "err", err)
				c.failed(ControllerPlacement, err)
				c.q.addAfter(it, c.q.failed(it))
				return
			}
			c.commit(ctx)
		}
		c.q.forget(it)
	}
}

// processEviction executes one eviction. The binding it deleted, once
// gone, has its placement scheduled again (rescheduleIfEvicted).
func (c *Controller) processEviction(ctx context.Context, it item) {
	if c.Evictions == nil {
		c.q.forget(it)
		return
	}
	// The placement's scheduling and its runs' passes wait while its
	// bindings are counted against the budget and one is deleted, as
	// upstream runs one eviction at a time for the same reason.
	if e, gerr := c.Hub.GetEviction(ctx, it.key); gerr == nil {
		l := c.schedulingLock(Key{Name: e.Spec.PlacementName})
		l.Lock()
		defer l.Unlock()
	}
	res, err := c.Evictions.Reconcile(ctx, it.key)
	if res.Evicted != nil {
		c.mu.Lock()
		c.evicted[*res.Evicted] = res.Placement
		c.mu.Unlock()
		c.rescheduleIfEvicted(*res.Evicted) // a binding without finalizers is gone at once
	}
	c.commit(ctx)
	if err != nil {
		c.Log.Error("eviction failed", "eviction", hub.KeyString(it.key), "err", err)
		c.failed(ControllerEviction, err)
		c.q.addAfter(it, c.q.failed(it))
		return
	}
	c.q.forget(it)
}

// schedulingLock is placement's lock of scheduling.
func (c *Controller) schedulingLock(placement Key) *sync.RWMutex {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.scheduling[placement]
	if !ok {
		l = &sync.RWMutex{}
		c.scheduling[placement] = l
	}
	return l
}

func (c *Controller) processRun(ctx context.Context, it item) {
	c.mu.Lock()
	placement, tracked := c.runs[it.key]
	waiting := tracked && c.unscheduled[placement]
	c.mu.Unlock()
	if waiting {
		c.q.forget(it) // the placement's scheduling pass queues it again
		return
	}
	if tracked {
		l := c.schedulingLock(placement)
		if !l.TryRLock() {
			c.waitingOnScheduling.Add(1)
			l.RLock()
			c.waitingOnScheduling.Add(-1)
		}
		defer l.RUnlock()
	}
	var before *fleet.UpdateRun
	if c.Observer != nil {
		before, _ = c.Hub.GetUpdateRun(ctx, it.key)
	}
	res, err := c.Runs.Reconcile(ctx, it.key)
	c.commit(ctx)
	if c.Observer != nil {
		after, gerr := c.Hub.GetUpdateRun(ctx, it.key)
		if gerr != nil {
			after = nil
		}
		c.Observer(before, after)
	}
	c.mu.Lock()
	prev := c.errs[it.key]
	if _, tracked := c.runs[it.key]; tracked {
		c.results[it.key] = res
		c.errs[it.key] = err
		c.ended[it.key] = res.Ended && err == nil
	} else {
		// A deleted run: its last result would stay forever.
		delete(c.results, it.key)
		delete(c.errs, it.key)
		delete(c.ended, it.key)
	}
	c.mu.Unlock()
	switch {
	case hub.IsConflict(err):
		// Another writer came first; the retry reads its write. Routine
		// on a busy Kubernetes hub, so no error and no news.
		c.Log.Debug("run pass lost a write to a conflict, retrying", "run", hub.KeyString(it.key), "err", err.Error())
	case err != nil && (prev == nil || prev.Error() != err.Error()):
		// Once per change: a stuck run fails the same way every pass.
		c.Log.Info("run pass failed, retrying", "run", hub.KeyString(it.key), "err", err.Error())
	case err != nil:
		c.Log.Debug("run pass failed again, retrying", "run", hub.KeyString(it.key), "err", err.Error())
	case prev != nil && !hub.IsConflict(prev):
		c.Log.Info("run pass succeeded again", "run", hub.KeyString(it.key))
	}
	switch {
	case hub.IsConflict(err):
		c.conflicts.Add(1)
		if c.OnConflict != nil {
			c.OnConflict(ConflictKind(err))
		}
		c.q.addAfter(it, c.q.failed(it))
	case err != nil:
		c.failed(ControllerUpdateRun, err)
		c.q.addAfter(it, c.q.failed(it))
	case res.Requeue:
		c.q.forget(it)
		c.q.add(it)
	case res.RequeueAfter > 0:
		c.q.forget(it)
		c.q.addAfter(it, res.RequeueAfter)
	default:
		c.q.forget(it)
		// A blocked run waits for an event; only a run that is still there
		// is polled (asking the hub last: on the embedded hub a finished
		// run's Get unpacks it).
		if !res.Blocked {
			if _, gerr := c.Hub.GetUpdateRun(ctx, it.key); gerr == nil {
				c.q.addAfter(it, c.SafetyPoll)
			}
		}
	}
}

func (c *Controller) commit(ctx context.Context) {
	if c.Committer == nil {
		return
	}
	if err := c.Committer.Commit(ctx); err != nil {
		c.Log.Error("committing hub state failed", "err", err)
		c.failed(ControllerCommit, err)
	}
}

// The controllers OnError names, as the reconcile error metric labels them.
const (
	ControllerScheduler = "scheduler"
	ControllerPlacement = "placement"
	ControllerEviction  = "eviction"
	ControllerUpdateRun = "updaterun"
	ControllerCommit    = "commit"
)

// Controllers lists every controller OnError may name, so a metric can
// export each at 0 before its first error.
var Controllers = []string{ControllerScheduler, ControllerPlacement, ControllerEviction, ControllerUpdateRun, ControllerCommit}

func (c *Controller) failed(controller string, err error) {
	if c.OnError != nil {
		c.OnError(controller, err)
	}
}

// Conflicts is how many run passes lost a write to a Conflict and were
// retried: not errors (OnError does not hear of them), but a measure of
// how often writers of the hub race.
func (c *Controller) Conflicts() int64 { return c.conflicts.Load() }

// Idle reports whether no work is queued or in progress right now (timers
// may be pending).
func (c *Controller) Idle() bool {
	c.init()
	return c.q.idle()
}
