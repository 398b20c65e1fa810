package reconciler

import (
	"testing"

	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/reconciler/updaterun"
)

// wakingGates is a metric evaluator that can be told whom to wake.
type wakingGates struct{ wake func(hub.Key) }

func (*wakingGates) Evaluate(updaterun.MetricQuery) (updaterun.MetricResult, bool) {
	return updaterun.MetricResult{}, false
}
func (g *wakingGates) SetWake(wake func(hub.Key)) { g.wake = wake }

// An evaluator that finishes an evaluation asks for a pass of its run:
// NewEngine hands it the Controller's EnqueueRun.
func TestAFinishedGateEvaluationQueuesItsRun(t *testing.T) {
	clk := clock.NewFake(epoch)
	gates := &wakingGates{}
	c := NewEngine(embedded.New(clk, nil), clk, EngineOptions{Gates: gates})
	if gates.wake == nil {
		t.Fatal("NewEngine did not tell the evaluator whom to wake")
	}
	if !c.Idle() {
		t.Fatal("a new controller has work")
	}
	gates.wake(hub.Key{Name: "run"})
	if c.Idle() {
		t.Error("the evaluator's wake-up queued nothing")
	}
}
