package gitops

import (
	"context"
	"sync"
	"time"

	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// DefaultGroupCommit is how long a guarded write waits, at most, for the
// writes of other passes to join its commit (Config.GroupCommit).
const DefaultGroupCommit = 20 * time.Millisecond

// groupWorkers is how many passes the engine runs at once when writes are
// grouped: the passes of different runs, placements and clusters ready
// together end in one commit and one push. A pass that waits for its
// group's push holds its worker, so the workers bound how many passes one
// push can carry: with 16, 100 runs at once took 115–120 pushes and p90
// 20–24 s (BenchmarkConcurrentRuns); with 256, 19–23 pushes and 6.4–7.5 s.
// Waiting workers cost a goroutine each; running passes share the cores.
const groupWorkers = 256

// groupCommit is the hub's Commit shared by every pass, as a database's
// group commit: a pass that ends joins the open group; the group's first
// member (its leader) waits until no other pass is under way or the window
// is over, then commits the hub once — one flush, one commit, one push —
// and performs the side effects, and every member learns the outcome. A
// failed commit fails every member of the group and performs nothing.
//
// passes keeps the hub still while a group seals its commit: a pass (a
// run's, a scheduling, a sync) writes the hub holding it for reading, the
// group holds it for writing while it fixes what its commit carries and
// which side effects that guards (hub.Sealer). The push and the side
// effects then run while the next passes write: the side effects are
// performed on the objects as sealed, so each is only ever performed for
// a write the group's commit carried, and a pass never waits for a push
// that is not its own. A hub that cannot seal is held for its whole
// Commit. Groups commit one after the other (committing), in the order
// they formed, and the store keeps the latest state of each object, so
// two writes of one object are never reordered.
type groupCommit struct {
	hub    hub.Loop
	clock  clock.Clock
	window time.Duration

	passes     sync.RWMutex
	committing sync.Mutex

	mu sync.Mutex
	// inPass counts the passes begun and not yet ended (waiting for
	// passes included).
	inPass int
	// open is the group that ending passes join (nil: none yet).
	open *group
}

// group is the passes whose writes one commit carries.
type group struct {
	members int
	// quiet is signalled when no pass is under way: nobody else can join
	// soon.
	quiet chan struct{}
	done  chan struct{}
	err   error
}

func newGroupCommit(h hub.Loop, clk clock.Clock, window time.Duration) *groupCommit {
	return &groupCommit{hub: h, clock: clk, window: window}
}

// begin starts a pass: it may write the hub until end.
func (g *groupCommit) begin() {
	g.mu.Lock()
	g.inPass++
	g.mu.Unlock()
	g.passes.RLock()
}

// end ends a pass begun with begin and, when commit says so, makes its
// writes durable and performs their side effects: it returns once its
// group's commit is done, with the group's error.
func (g *groupCommit) end(ctx context.Context, commit bool) error {
	g.passes.RUnlock()
	g.mu.Lock()
	g.inPass--
	if !commit {
		g.quietLocked()
		g.mu.Unlock()
		return nil
	}
	grp, leader := g.open, false
	if grp == nil {
		grp, leader = &group{quiet: make(chan struct{}, 1), done: make(chan struct{})}, true
		g.open = grp
	}
	grp.members++
	g.quietLocked()
	g.mu.Unlock()
	if !leader {
		<-grp.done
		return grp.err
	}
	g.lead(ctx, grp)
	return grp.err
}

// quietLocked tells the open group's leader that no pass is under way.
func (g *groupCommit) quietLocked() {
	if g.inPass == 0 && g.open != nil {
		select {
		case g.open.quiet <- struct{}{}:
		default:
		}
	}
}

// lead commits grp once the previous group committed and grp is complete:
// no pass is under way, or the window is over. Then no pass may begin
// until the commit is sealed; the passes still under way finish first
// (they hold the hub) and their writes go in too, though they join the
// next group.
func (g *groupCommit) lead(ctx context.Context, grp *group) {
	g.committing.Lock()
	defer g.committing.Unlock()
	g.await(ctx, grp)
	g.mu.Lock()
	g.open = nil // later passes form the next group
	g.mu.Unlock()
	g.passes.Lock()
	finish, err := g.seal(ctx)
	g.passes.Unlock()
	if err == nil {
		err = finish(ctx)
	}
	grp.err = err
	close(grp.done)
}

// seal fixes what the group's commit carries, holding the hub: with a
// hub.Sealer only that (the push and the deliveries run in finish, while
// the next passes write), otherwise the whole commit.
func (g *groupCommit) seal(ctx context.Context) (finish func(context.Context) error, err error) {
	if s, ok := g.hub.(hub.Sealer); ok {
		return s.Seal(ctx)
	}
	return func(context.Context) error { return nil }, g.hub.Commit(ctx)
}

// await waits for grp to be complete: no pass under way, or the window
// over (zero: no wait). The window bounds how long a group admits new
// members: under a steady stream of passes it would never be complete.
func (g *groupCommit) await(ctx context.Context, grp *group) {
	if g.window <= 0 {
		return
	}
	over := make(chan struct{})
	t := g.clock.AfterFunc(g.window, func() { close(over) })
	defer t.Stop()
	for {
		g.mu.Lock()
		quiet := g.inPass == 0
		g.mu.Unlock()
		if quiet {
			return
		}
		select {
		case <-grp.quiet:
		case <-over:
			return
		case <-ctx.Done():
			return
		}
	}
}

// commit is a pass of its own that wrote nothing: it makes what others
// wrote durable (the daemon's shutdown).
func (g *groupCommit) commit(ctx context.Context) error {
	g.begin()
	return g.end(ctx, true)
}

// engineOf puts every pass of ctrl in a group: each holds the hub (for
// reading: passes write the hub side by side) while it runs and joins a
// group at its end. The controller's own
// commit after a pass is taken over (a pass joins its group whatever its
// outcome); a failed group is reported as the controller reports a failed
// commit. With a window, the engine runs groupWorkers passes at once.
func (g *groupCommit) engineOf(ctrl *reconciler.Controller, onError func(string, error)) {
	end := func(ctx context.Context) {
		err := g.end(ctx, true)
		if err == nil {
			return
		}
		ctrl.Log.Error("committing hub state failed", "err", err)
		if onError != nil {
			onError("commit", err)
		}
	}
	ctrl.Committer = nil
	if r := ctrl.Runs; r != nil {
		ctrl.Runs = grouped(g, end, r.Reconcile)
	}
	if s := ctrl.Scheduler; s != nil {
		ctrl.Scheduler = grouped(g, end, noResult(s.Schedule))
	}
	if st := ctrl.Status; st != nil {
		ctrl.Status = grouped(g, end, noResult(st)).Schedule
	}
	if e := ctrl.Evictions; e != nil {
		ctrl.Evictions = grouped(g, end, e.Reconcile)
	}
	if g.window > 0 {
		ctrl.Workers = groupWorkers
	}
}

// pass is one of the engine's passes over a key, with its result: a
// reconciler.RunReconciler or EvictionReconciler (Reconcile), a
// reconciler.Scheduler or PlacementStatus (Schedule).
type pass[R any] func(context.Context, hub.Key) (R, error)

func (p pass[R]) Reconcile(ctx context.Context, key hub.Key) (R, error) { return p(ctx, key) }

func (p pass[R]) Schedule(ctx context.Context, key hub.Key) error {
	_, err := p(ctx, key)
	return err
}

// noResult is a pass that returns only an error.
func noResult(p func(context.Context, hub.Key) error) pass[struct{}] {
	return func(ctx context.Context, key hub.Key) (struct{}, error) { return struct{}{}, p(ctx, key) }
}

// grouped is p as a pass of g: it holds the hub while it runs and calls end
// (joins a group) when it returns.
func grouped[R any](g *groupCommit, end func(context.Context), p pass[R]) pass[R] {
	return func(ctx context.Context, key hub.Key) (R, error) {
		g.begin()
		defer end(ctx)
		return p(ctx, key)
	}
}
