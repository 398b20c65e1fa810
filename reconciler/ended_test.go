package reconciler

import (
	"context"
	"fmt"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/updaterun"
)

// passCounter counts the passes of each run on the way to the engine.
type passCounter struct {
	RunReconciler
	mu     sync.Mutex
	passes map[Key]int
}

func countPasses(c *Controller) *passCounter {
	p := &passCounter{RunReconciler: c.Runs, passes: map[Key]int{}}
	c.Runs = p
	return p
}

func (p *passCounter) Reconcile(ctx context.Context, key Key) (updaterun.Result, error) {
	p.mu.Lock()
	p.passes[key]++
	p.mu.Unlock()
	return p.RunReconciler.Reconcile(ctx, key)
}

// take returns the counts so far and starts again from zero.
func (p *passCounter) take() map[Key]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	got := p.passes
	p.passes = map[Key]int{}
	return got
}

// touchBinding writes a binding of the fleet's placement as a member's
// report does: a binding event for the placement.
func (f *testFleet) touchBinding(tb testing.TB) {
	tb.Helper()
	ctx := context.Background()
	bs, err := f.hub.ListBindings(ctx, Key{Name: "app"})
	if err != nil || len(bs) == 0 {
		tb.Fatalf("bindings of app: %d, %v", len(bs), err)
	}
	if err := f.hub.UpdateBindingStatus(ctx, bs[0]); err != nil {
		tb.Fatal(err)
	}
}

func (f *testFleet) applyRun(name string, state fleet.State) Key {
	f.hub.ApplyUpdateRun(&fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: fleet.UpdateRunSpec{PlacementName: "app", StagedUpdateStrategyName: "one-stage", State: state}})
	return Key{Name: name}
}

// A run that has ended does nothing on a binding change (spec §2.1: later
// passes do nothing), so binding events do not wake it: otherwise each
// event would cost a pass per finished run of the placement. A stopped
// run is woken (a binding change can still fail it), and an ended run
// being deleted still gets the passes that remove it.
func TestABindingEventDoesNotPassAnEndedRun(t *testing.T) {
	clk := clock.NewFake(epoch)
	f := newTestFleet(t, clk, 2, "1", "0s")
	ctx := context.Background()
	passes := countPasses(f.ctrl)
	f.startRun()
	stopped := f.applyRun("stopped", fleet.StateStop)
	f.ctrl.Drain(ctx)
	if got := f.phase(t); got != fleet.PhaseSucceeded {
		t.Fatalf("run is %s after one drain", got)
	}
	passes.take()

	f.touchBinding(t)
	f.ctrl.Drain(ctx)
	got := passes.take()
	if got[f.run] != 0 {
		t.Errorf("a binding event passed the succeeded run %d times, want 0", got[f.run])
	}
	if got[stopped] == 0 {
		t.Errorf("a binding event did not pass the stopped run; the test shows nothing (passes %v)", got)
	}

	f.hub.DeleteUpdateRun(f.run)
	f.ctrl.Drain(ctx)
	if _, err := f.hub.GetUpdateRun(ctx, f.run); err == nil {
		t.Fatal("the ended run being deleted was not passed: it is still there")
	}
}

// BenchmarkBindingEventWithEndedRuns is the work of one binding event of a
// placement with 100 succeeded runs and one running: passes/event is the
// run passes it costs.
func BenchmarkBindingEventWithEndedRuns(b *testing.B) {
	clk := clock.NewFake(epoch)
	f := newTestFleet(b, clk, 2, "1", "0s")
	ctx := context.Background()
	for i := range 100 {
		f.applyRun(fmt.Sprintf("done-%03d", i), fleet.StateRun)
	}
	f.applyRun("stopped", fleet.StateStop)
	f.ctrl.Drain(ctx)
	passes := countPasses(f.ctrl)
	b.ResetTimer()
	for range b.N {
		f.touchBinding(b)
		f.ctrl.Drain(ctx)
	}
	b.StopTimer()
	n := 0
	for _, c := range passes.take() {
		n += c
	}
	b.ReportMetric(float64(n)/float64(b.N), "passes/event")
}
