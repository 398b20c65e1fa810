package reconciler

import (
	"context"
	"testing"
	"time"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Deliberate difference 1: a cluster that becomes available wakes its run
// at once. With members available after 10s and maxConcurrency 1, three
// clusters take 30s of virtual time — not the 45s that 15s polls would.
func TestClusterCompletionWakesTheRunAtOnce(t *testing.T) {
	clk := clock.NewFake(epoch)
	f := newTestFleet(t, clk, 3, "1", "10s")
	f.startRun()
	ctx := context.Background()
	for i := 0; i < 100 && f.phase(t) != fleet.PhaseSucceeded; i++ {
		f.ctrl.Drain(ctx)
		if f.phase(t) == fleet.PhaseSucceeded || !clk.Step() {
			break
		}
	}
	if got := f.phase(t); got != fleet.PhaseSucceeded {
		t.Fatalf("run is %s", got)
	}
	if took := clk.Now().Sub(epoch); took != 30*time.Second {
		t.Errorf("three clusters available after 10s each took %s of virtual time, want 30s", took)
	}
}

func TestBlockedOnlyOnceEveryRunWaitsOnAPerson(t *testing.T) {
	clk := clock.NewFake(epoch)
	f := newTestFleet(t, clk, 2, "1", "0s")
	ctx := context.Background()
	f.ctrl.Drain(ctx)
	if !f.ctrl.Blocked(ctx) {
		t.Error("a fleet without runs is not blocked")
	}
	f.startRun()
	if f.ctrl.Blocked(ctx) {
		t.Error("a run never reconciled counts as blocked")
	}
	f.ctrl.Drain(ctx)
	if got := f.phase(t); got != fleet.PhaseSucceeded {
		t.Fatalf("instantly available members: run is %s after one drain", got)
	}
	if !f.ctrl.Blocked(ctx) || !f.ctrl.Idle() {
		t.Error("a succeeded run leaves the controller busy")
	}
}

func TestQueueDeduplicatesAndKeepsTheEarliestTimer(t *testing.T) {
	clk := clock.NewFake(epoch)
	q := newQueue(clk)
	a, b := item{runItem, Key{Name: "a"}}, item{runItem, Key{Name: "b"}}
	q.add(a)
	q.add(b)
	q.add(a)
	if got, _ := q.pop(); got != a {
		t.Fatalf("first pop %v, want a", got)
	}
	if got, _ := q.pop(); got != b {
		t.Fatalf("second pop %v, want b", got)
	}
	if _, ok := q.pop(); ok {
		t.Fatal("an item queued twice was processed twice")
	}
	q.done(a)
	q.done(b)
	q.addAfter(a, time.Minute)
	q.addAfter(a, 10*time.Second)
	q.addAfter(a, time.Hour)
	if q.pendingTimers() != 1 {
		t.Fatalf("%d timers for one item", q.pendingTimers())
	}
	clk.Advance(10 * time.Second)
	if got, ok := q.pop(); !ok || got != a {
		t.Fatal("the earliest delayed add did not fire")
	}
	clk.Advance(time.Hour)
	if _, ok := q.pop(); ok {
		t.Fatal("a replaced timer fired as well")
	}
}

// client-go's queue holds an item back while a worker processes it: a
// second pass of a run waits for the first to end.
func TestQueueHoldsAnItemAddedWhileItIsProcessed(t *testing.T) {
	q := newQueue(clock.NewFake(epoch))
	a, b := item{runItem, Key{Name: "a"}}, item{runItem, Key{Name: "b"}}
	q.add(a)
	if got, _ := q.pop(); got != a {
		t.Fatalf("pop %v, want a", got)
	}
	q.add(a)
	q.add(b)
	if got, ok := q.pop(); !ok || got != b {
		t.Fatalf("pop %v while a is processed, want b", got)
	}
	if got, ok := q.pop(); ok {
		t.Fatalf("popped %v while a is processed; want nothing", got)
	}
	q.done(a)
	if got, ok := q.pop(); !ok || got != a {
		t.Fatalf("after a is done, pop %v, want a again", got)
	}
}

func TestBackoffDoublesAndIsCapped(t *testing.T) {
	q := newQueue(clock.NewFake(epoch))
	it := item{runItem, Key{Name: "r"}}
	var got []time.Duration
	for i := 0; i < 20; i++ {
		got = append(got, q.failed(it))
	}
	if got[0] != 5*time.Millisecond || got[1] != 10*time.Millisecond || got[19] != 5*time.Minute {
		t.Errorf("backoff %v", got)
	}
	q.forget(it)
	if d := q.failed(it); d != 5*time.Millisecond {
		t.Errorf("after a success the backoff starts at %s", d)
	}
}

// An item being processed keeps the queue busy: Idle must not report a
// quiet controller in the middle of a pass (serve --until-idle and the
// tests that step the clock only when nothing runs rely on it).
func TestQueueIsNotIdleWhileAnItemIsProcessed(t *testing.T) {
	q := newQueue(clock.NewFake(time.Unix(0, 0)))
	q.add(item{runItem, Key{Name: "r"}})
	if q.idle() {
		t.Fatal("idle with an item queued")
	}
	if _, ok := q.pop(); !ok {
		t.Fatal("nothing to pop")
	}
	if q.idle() {
		t.Fatal("idle while the popped item is processed")
	}
	q.done(item{runItem, Key{Name: "r"}})
	if !q.idle() {
		t.Fatal("not idle after the item was done")
	}
}

// A deleted run's last result must not stay with the controller for good.
func TestDeletedRunLeavesNoResultBehind(t *testing.T) {
	clk := clock.NewFake(epoch)
	f := newTestFleet(t, clk, 2, "1", "0s")
	ctx := context.Background()
	f.startRun()
	f.ctrl.Drain(ctx)
	if ok := f.ctrl.hasResult(f.run); !ok {
		t.Fatal("the run's pass left no result; the test shows nothing")
	}
	f.hub.DeleteUpdateRun(f.run)
	for i := 0; i < 10; i++ {
		f.ctrl.Drain(ctx)
		if _, err := f.hub.GetUpdateRun(ctx, f.run); err != nil {
			break
		}
		clk.Step()
	}
	if _, err := f.hub.GetUpdateRun(ctx, f.run); err == nil {
		t.Fatal("the run was not deleted")
	}
	if ok := f.ctrl.hasResult(f.run); ok {
		t.Fatal("the deleted run's last result is still kept")
	}
}

// hasResult reports whether the controller keeps a last pass result of
// the run.
func (c *Controller) hasResult(key Key) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.results[key]
	return ok
}
