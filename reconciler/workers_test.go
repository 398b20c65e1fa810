package reconciler

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"

	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/reconciler/updaterun"
)

// passHook stands in for the engine: it records the passes in flight per
// run, and holds the first pass of run held until release is closed.
type passHook struct {
	held    Key
	release chan struct{}
	entered chan Key

	mu       sync.Mutex
	inFlight map[Key]int
	passes   map[Key]int
	overlaps []Key
}

func (h *passHook) Reconcile(ctx context.Context, key Key) (updaterun.Result, error) {
	h.mu.Lock()
	h.inFlight[key]++
	h.passes[key]++
	first := h.passes[key] == 1
	if h.inFlight[key] > 1 {
		h.overlaps = append(h.overlaps, key)
	}
	h.mu.Unlock()
	h.entered <- key
	if key == h.held && first {
		select {
		case <-h.release:
		case <-ctx.Done():
		}
	}
	h.mu.Lock()
	h.inFlight[key]--
	h.mu.Unlock()
	return updaterun.Result{}, nil
}

// With two workers, a run woken again while its pass runs (a binding event
// in the middle of the pass) is not handed to the idle worker: its second
// pass starts when the first ended. The other worker meanwhile takes the
// next item, which shows it was free to take the run.
func TestWorkersNeverRunTwoPassesOfOneRunAtOnce(t *testing.T) {
	a, b := Key{Name: "a"}, Key{Name: "b"}
	hook := &passHook{held: a, release: make(chan struct{}), entered: make(chan Key, 8),
		inFlight: map[Key]int{}, passes: map[Key]int{}}
	c := &Controller{Hub: embedded.New(clock.Real{}, nil), Clock: clock.Real{}, Runs: hook, Workers: 2}
	ctx, cancel := context.WithCancel(await.Context(t))
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	defer func() { cancel(); <-done }()

	next := func(want Key) {
		t.Helper()
		select {
		case got := <-hook.entered:
			if got != want {
				t.Fatalf("pass of %s started; want %s", got.Name, want.Name)
			}
		case <-ctx.Done():
			t.Fatalf("no pass of %s started", want.Name)
		}
	}
	c.EnqueueRun(a)
	next(a) // the first worker holds a
	// a is queued before b: a queue that handed out a run in process would
	// give it to the second worker now.
	c.EnqueueRun(a)
	c.EnqueueRun(b)
	next(b)
	close(hook.release)
	next(a)
	await.Until(t, "both passes of a to end", func() bool { return c.Idle() })

	hook.mu.Lock()
	defer hook.mu.Unlock()
	if len(hook.overlaps) > 0 {
		t.Errorf("two passes at once of %v", hook.overlaps)
	}
	if hook.passes[a] != 2 || hook.passes[b] != 1 {
		t.Errorf("passes %v; want a twice (woken during its pass) and b once", hook.passes)
	}
}

// schedulingHook holds the scheduling of every placement until release
// is closed; runs is told about run passes, and notes those that start
// while a scheduling is in progress.
type schedulingHook struct {
	release    chan struct{}
	entered    chan struct{}
	inProgress atomic.Bool

	runEntered atomic.Int64
	overlaps   atomic.Int64
}

func (s *schedulingHook) Schedule(ctx context.Context, _ Key) error {
	s.inProgress.Store(true)
	defer s.inProgress.Store(false)
	s.entered <- struct{}{}
	select {
	case <-s.release:
	case <-ctx.Done():
	}
	return nil
}

func (s *schedulingHook) Reconcile(context.Context, Key) (updaterun.Result, error) {
	if s.inProgress.Load() {
		s.overlaps.Add(1)
	}
	s.runEntered.Add(1)
	return updaterun.Result{Blocked: true}, nil
}

// A run that arrives while its placement is being scheduled waits for the
// scheduler, on two workers as on one: it would otherwise initialize
// before its placement's policy snapshot is scheduled, and fail for good.
func TestWorkersRunARunAfterItsPlacementsScheduling(t *testing.T) {
	hook := &schedulingHook{release: make(chan struct{}), entered: make(chan struct{}, 1)}
	h := embedded.New(clock.Real{}, nil)
	h.ApplyUpdateRun(&fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: "r"},
		Spec: fleet.UpdateRunSpec{PlacementName: "app", StagedUpdateStrategyName: "s", State: fleet.StateRun}})
	c := &Controller{Hub: h, Clock: clock.Real{}, Runs: hook, Scheduler: hook, Workers: 2}
	ctx, cancel := context.WithCancel(await.Context(t))
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	defer func() { cancel(); <-done }()

	c.EnqueuePlacement(Key{Name: "app"})
	select {
	case <-hook.entered:
	case <-ctx.Done():
		t.Fatal("the placement was not scheduled")
	}
	c.EnqueueAll() // the run, which the second worker takes at once
	await.Until(t, "the run's pass to start or wait", func() bool {
		return hook.runEntered.Load() > 0 || c.waitingOnScheduling.Load() > 0
	})
	close(hook.release)
	await.Until(t, "the run's pass", func() bool { return hook.runEntered.Load() > 0 })
	if n := hook.overlaps.Load(); n > 0 {
		t.Errorf("%d run passes started while their placement was being scheduled", n)
	}
}

// orderHook records the order of scheduling and run passes.
type orderHook struct {
	mu    sync.Mutex
	calls []string
}

func (o *orderHook) note(s string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, s)
}

func (o *orderHook) Schedule(_ context.Context, k Key) error {
	o.note("schedule " + k.Name)
	return nil
}

func (o *orderHook) Reconcile(_ context.Context, k Key) (updaterun.Result, error) {
	o.note("run " + k.Name)
	return updaterun.Result{Blocked: true}, nil
}

// A run whose pass comes before the scheduling of its placement's queued
// change (queued first, or taken first by another worker) waits for that
// scheduling: it would otherwise initialize on the old policy snapshot,
// find a member the new one drops in no stage, and fail for good (a commit
// that retires a member, narrows the placement and adds a run; seen in
// TestTheQuickstartRollsOutToRealClustersStageByStage).
func TestARunWaitsForItsPlacementsQueuedScheduling(t *testing.T) {
	hook := &orderHook{}
	h := embedded.New(clock.Real{}, nil)
	h.ApplyUpdateRun(&fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: "r"},
		Spec: fleet.UpdateRunSpec{PlacementName: "app", StagedUpdateStrategyName: "s", State: fleet.StateRun}})
	c := &Controller{Hub: h, Clock: clock.Real{}, Runs: hook, Scheduler: hook}
	c.EnqueueAll()                       // the run, queued first
	c.EnqueuePlacement(Key{Name: "app"}) // then its placement's change
	c.Drain(await.Context(t))
	want := []string{"schedule app", "run r"}
	if !slices.Equal(hook.calls, want) {
		t.Fatalf("passes %q, want %q", hook.calls, want)
	}
}
