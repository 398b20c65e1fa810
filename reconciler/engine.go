package reconciler

import (
	"context"
	"log/slog"
	"time"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/eviction"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/placement"
	"github.com/gitfleet/gitfleet/reconciler/scheduler"
	"github.com/gitfleet/gitfleet/reconciler/updaterun"
)

// EngineOptions are what differs between the places the engine runs:
// `serve` on either hub, `simulate`, tests.
type EngineOptions struct {
	// StuckThreshold is the engine's stuck threshold (default 5m).
	StuckThreshold time.Duration
	// Metrics receives the engine's metrics (optional).
	Metrics updaterun.Recorder
	// Committer ends every pass (optional; the hub's Commit).
	Committer Committer
	// OnError hears about failed reconciles (optional; metrics).
	OnError func(controller string, err error)
	// OnConflict hears about run passes retried after a Conflict, by the
	// kind of the object whose write lost (optional; metrics).
	OnConflict func(kind string)
	// OnBindings hears the bindings of a placement after each placement
	// status update (optional; metrics of version skew). They are the
	// hub's own where it can share them (hub.ListBindingsReadOnly): read
	// them, do not modify or keep them.
	OnBindings func(placement hub.Key, bindings []*fleet.Binding)
	// Observer is told about every run pass (optional; simulate's
	// timeline).
	Observer PassObserver
	// RefusedStrategy is updaterun.Reconciler's (optional).
	RefusedStrategy func(hub.Key) string
	// Gates evaluates metric gates (optional: without it every gate waits
	// for a Prometheus until it times out). One that can be told whom to
	// wake (SetWake) gets the Controller's EnqueueRun.
	Gates updaterun.MetricEvaluator
	// Workers is the Controller's Workers (default 1); more than one needs
	// a hub safe for concurrent use (the kube hub).
	Workers int
	Log     *slog.Logger
}

// NewEngine wires gitfleet's reconcilers on h, once for every caller: the
// scheduler, the update-run engine, the placement status and evictions, on one
// Controller. Nothing runs until the Controller's Run or Drain.
func NewEngine(h hub.Hub, clk clock.Clock, opts EngineOptions) *Controller {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	placements := &placement.Updater{Hub: h, Clock: clk}
	status := func(ctx context.Context, key hub.Key) error {
		if err := placements.Update(ctx, key); err != nil {
			return err
		}
		if opts.OnBindings == nil {
			return nil
		}
		bindings, err := hub.ListBindingsReadOnly(ctx, h, key)
		if err != nil {
			return err
		}
		opts.OnBindings(key, bindings)
		return nil
	}
	c := &Controller{
		Hub:   h,
		Clock: clk,
		Runs: &updaterun.Reconciler{Hub: h, Clock: clk, StuckThreshold: opts.StuckThreshold, Metrics: opts.Metrics,
			RefusedStrategy: opts.RefusedStrategy, Gates: opts.Gates, Log: log.With("controller", "updaterun")},
		Scheduler:  &scheduler.Scheduler{Hub: h, Clock: clk, Log: log.With("controller", "scheduler")},
		Status:     status,
		Evictions:  &eviction.Reconciler{Hub: h, Clock: clk, Log: log.With("controller", "eviction")},
		Committer:  opts.Committer,
		Observer:   opts.Observer,
		OnError:    opts.OnError,
		OnConflict: opts.OnConflict,
		Workers:    opts.Workers,
		Log:        log.With("controller", "reconciler"),
	}
	if w, ok := opts.Gates.(interface{ SetWake(func(hub.Key)) }); ok {
		w.SetWake(c.EnqueueRun)
	}
	return c
}
