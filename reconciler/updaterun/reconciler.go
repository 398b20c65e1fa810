// Package updaterun is gitfleet's staged update run engine: KubeFleet's
// ClusterStagedUpdateRun/StagedUpdateRun state machine (initialize, validate,
// execute, stop, deletion stage, approvals), written against hub.Hub and a
// clock.Clock only, so `gitfleet serve` and `gitfleet simulate` run the same
// code in real and virtual time.
//
// The behavioural reference is spec/updaterun-semantics.md; condition
// types, reasons and messages are KubeFleet's, verbatim. Where gitfleet
// deliberately differs (DESIGN.md), the code says so next to the difference.
package updaterun

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/internal/condmsg"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// Timing constants (spec §6).
const (
	// ClusterPollInterval is how often in-flight clusters, the deletion
	// stage and a stopping run are re-checked.
	ClusterPollInterval = 15 * time.Second
	// ApprovalPollInterval is how often a pending approval is re-checked
	// (approval events wake the run earlier).
	ApprovalPollInterval = 60 * time.Second
	// DefaultStuckThreshold is KubeFleet's fixed threshold; gitfleet makes it
	// configurable (deliberate difference 2).
	DefaultStuckThreshold = 5 * time.Minute
)

// Reconciler runs passes of the update-run state machine. It is safe for
// concurrent use on different runs; passes of one run must not overlap.
type Reconciler struct {
	Hub            hub.Hub
	Clock          clock.Clock
	StuckThreshold time.Duration // default 5m when zero (deliberate difference 2: configurable)
	Metrics        Recorder      // may be nil
	Log            *slog.Logger  // may be nil
	// RefusedStrategy says why a strategy that the hub does not have was
	// refused in Git ("" when it was not), so that a run naming it fails
	// as invalid rather than not found. May be nil.
	RefusedStrategy func(hub.Key) string
	// Gates evaluates the queries of Metric tasks (nil: every gate waits
	// for a Prometheus until it times out).
	Gates MetricEvaluator

	cache planCache
}

// Result tells the controller when to run the next pass.
type Result struct {
	Requeue      bool          // run again immediately (stage completed, empty stage skipped)
	RequeueAfter time.Duration // run again after this (cluster polling 15s, approval 60s, remaining TimedWait)
	// Blocked is true when the run cannot make progress without a person or
	// a change in Git: terminal (Succeeded/Failed/init failed), state Initialize,
	// Stopped, waiting for an approval with no TimedWait pending, or Stuck.
	Blocked bool
	// Ended is true when the run has ended for good (Ended): only a change
	// of its spec or its deletion gives it another pass anything to do.
	Ended bool
}

// Ended reports whether a run has ended for good: it succeeded or failed,
// or its initialization failed. Every later pass does nothing (spec §2.1
// steps 5 and 6: not even a state change is looked at) until the run is
// deleted. A stopped run has not ended: it may be resumed, and each pass
// validates it again, so a change of its bindings can still fail it.
func Ended(run *fleet.UpdateRun) bool {
	if run.DeletionTimestamp != nil {
		return false
	}
	// Every pass stamps every condition with the run's generation
	// (prepare), so a condition at an older one still holds.
	if c := find(run.Status.Conditions, fleet.StagedUpdateRunConditionInitialized); c != nil && c.Status == metav1.ConditionFalse {
		return true
	}
	c := find(run.Status.Conditions, fleet.StagedUpdateRunConditionSucceeded)
	return c != nil && (c.Status == metav1.ConditionTrue || c.Status == metav1.ConditionFalse)
}

// Recorder receives KubeFleet's three update-run metrics (spec §7); the
// metrics package implements it.
type Recorder interface {
	// RecordStatus is called at the end of every pass with the in-memory run
	// (MetricCondition picks the condition, FailureType its failure type).
	RecordStatus(run *fleet.UpdateRun)
	// ObserveApprovalLatency: taskType is beforeStage or afterStage.
	ObserveApprovalLatency(run *fleet.UpdateRun, taskType string, seconds float64)
	ObserveStageClusterUpdatingDuration(run *fleet.UpdateRun, seconds float64)
	DeleteRun(namespace, name string)
}

// pass is the state of one reconcile pass of one run.
type pass struct {
	r   *Reconciler
	ctx context.Context
	log *slog.Logger
	run *fleet.UpdateRun
	gen int64
	now time.Time

	// planRevision is the hub's plan revision read at the start of the pass
	// (0 when the hub is not a Revisioner); bindingStateWrites counts the
	// plan-revision changes this pass made itself, so the cached plan
	// survives the engine's own Scheduled→Bound writes.
	planRevision       uint64
	revisioner         bool
	bindingStateWrites uint64
	invalidatePlan     bool
	// memberWindows are read with the members when the plan is derived.
	memberWindows map[string][]string
}

// Reconcile runs one pass for the run at key (spec §2.1). A run that no longer exists → (Result{}, nil).
func (r *Reconciler) Reconcile(ctx context.Context, key hub.Key) (Result, error) {
	run, err := r.Hub.GetUpdateRun(ctx, key)
	if hub.IsNotFound(err) {
		r.cache.forget(key)
		r.forgetGates(key)
		return Result{}, nil
	}
	if err != nil {
		return Result{}, err
	}
	p := r.newPass(ctx, run)
	if run.DeletionTimestamp != nil {
		return Result{}, p.handleDelete()
	}
	if controllerutil.AddFinalizer(run, fleet.UpdateRunFinalizer) {
		// The finalizer is written alone and first, so the run is
		// protected before any progress it guards is recorded.
		if err := r.Hub.UpdateUpdateRunFinalizers(ctx, run); err != nil {
			return Result{}, fmt.Errorf("adding the finalizer of update run %s: %w", p.key(), err)
		}
		p.log.Info("added the update run finalizer")
	}
	defer func() {
		if r.Metrics != nil {
			r.Metrics.RecordStatus(p.run)
		}
		p.keepPlan()
		if c := find(p.run.Status.Conditions, fleet.StagedUpdateRunConditionSucceeded); isTrue(c, p.gen) || isFalse(c, p.gen) {
			r.forgetGates(key) // an ended run evaluates no gate again
		}
	}()
	res, err := p.reconcile()
	res.Ended = err == nil && Ended(p.run)
	return res, err
}

func (r *Reconciler) newPass(ctx context.Context, run *fleet.UpdateRun) *pass {
	log := r.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &pass{
		r:   r,
		ctx: ctx,
		log: log.With("run", hub.KeyString(hub.Key{Namespace: run.Namespace, Name: run.Name})),
		run: run,
		now: r.Clock.Now().UTC().Truncate(time.Second),
	}
	if rev, ok := r.Hub.(hub.Revisioner); ok {
		p.revisioner = true
		p.planRevision = rev.PlanRevision()
	}
	p.prepare()
	return p
}

// prepare applies the in-memory normalisations KubeFleet makes at the start
// of every pass: every condition is re-stamped with the current generation
// (a state change never invalidates recorded progress), waitTime is removed
// from Approval tasks, and an empty state means the default, Initialize.
func (p *pass) prepare() {
	p.gen = p.run.Generation
	BumpObservedGenerations(&p.run.Status, p.gen)
	StripApprovalWaitTimes(p.run.Status.StagedUpdateStrategySnapshot)
	fleet.SetDefaultsUpdateRun(p.run)
}

func (p *pass) key() hub.Key { return hub.Key{Namespace: p.run.Namespace, Name: p.run.Name} }

func (p *pass) stuckThreshold() time.Duration {
	if p.r.StuckThreshold > 0 {
		return p.r.StuckThreshold
	}
	return DefaultStuckThreshold
}

var blocked = Result{Blocked: true}

func (p *pass) reconcile() (Result, error) {
	st := &p.run.Status
	var (
		idx int
		pl  *plan
		err error
	)
	initCond := find(st.Conditions, fleet.StagedUpdateRunConditionInitialized)
	if !isTrue(initCond, p.gen) {
		if isFalse(initCond, p.gen) {
			return blocked, nil // initialization failures are never retried
		}
		if pl, err = p.initialize(); err != nil {
			if isAborted(err) {
				p.log.Info("initialization failed", "err", err)
				return blocked, p.recordInitFailed(abortReason(err, fleet.UpdateRunInitializeFailedReason), err.Error())
			}
			return Result{}, err
		}
		p.log.Info("initialized", "state", p.run.Spec.State)
		idx = 0
	} else {
		if c := find(st.Conditions, fleet.StagedUpdateRunConditionSucceeded); isTrue(c, p.gen) || isFalse(c, p.gen) {
			return blocked, nil // finished runs ignore state changes
		}
		if idx, pl, err = p.validate(); err != nil {
			if isAborted(err) {
				p.log.Info("validation failed", "err", err)
				return blocked, p.recordFailed(err.Error())
			}
			return Result{}, err
		}
	}
	if idx == -1 {
		return blocked, p.recordSucceeded()
	}

	switch p.run.Spec.State {
	case fleet.StateInitialize:
		return blocked, nil
	case fleet.StateRun:
		out := p.execute(idx, pl)
		if isAborted(out.err) {
			return blocked, p.recordFailed(out.err.Error())
		}
		if out.finished {
			p.log.Info("update run succeeded")
			return blocked, p.recordSucceeded()
		}
		return p.incomplete(out)
	case fleet.StateStop:
		out := p.stop(idx, pl)
		if isAborted(out.err) {
			return blocked, p.recordFailed(out.err.Error())
		}
		if out.finished {
			p.markRunStopped()
			return blocked, p.writeStatus()
		}
		return p.incomplete(out)
	default:
		return blocked, p.recordFailed(unexpectedErr("found unsupported updateRun state: %s", p.run.Spec.State))
	}
}

// outcome is what execute and stop report about a pass.
type outcome struct {
	finished bool
	after    time.Duration // 0 = requeue at once
	blocked  bool
	err      error // retriable unless aborted
}

// incomplete writes the progress of an unfinished pass and says when to
// come back; a retriable error is returned after the status is written.
func (p *pass) incomplete(out outcome) (Result, error) {
	if err := p.writeStatus(); err != nil {
		return Result{}, err
	}
	res := Result{RequeueAfter: out.after, Requeue: out.after == 0, Blocked: out.blocked}
	if out.err != nil {
		res.Requeue = false
		if res.RequeueAfter == 0 {
			res.RequeueAfter = ClusterPollInterval
		}
		return res, out.err
	}
	return res, nil
}

func (p *pass) recordInitFailed(reason, msg string) error {
	p.set(&p.run.Status.Conditions, fleet.StagedUpdateRunConditionInitialized, metav1.ConditionFalse, reason, condmsg.Cap(msg))
	return p.writeStatus()
}

func (p *pass) recordFailed(msg string) error {
	p.markRunFailed(msg)
	return p.writeStatus()
}

func (p *pass) recordSucceeded() error {
	p.markRunSucceeded()
	p.markPartialSuccess()
	return p.writeStatus()
}

// writeStatus persists the run's status as the pass's last write.
func (p *pass) writeStatus() error {
	if err := p.r.Hub.UpdateUpdateRunStatus(p.ctx, p.run); err != nil {
		return fmt.Errorf("writing the status of update run %s: %w", p.key(), err)
	}
	return nil
}

// writeStatusAndContinue persists the status when the pass goes on to write
// again (initialization, then execution). The hub does not
// hand back the new resourceVersion, so it is re-read; the later write must
// not conflict with our own.
func (p *pass) writeStatusAndContinue() error {
	if err := p.writeStatus(); err != nil {
		return err
	}
	cur, err := p.r.Hub.GetUpdateRun(p.ctx, p.key())
	if err != nil {
		return fmt.Errorf("re-reading update run %s: %w", p.key(), err)
	}
	p.run.ResourceVersion = cur.ResourceVersion
	return nil
}

// handleDelete finishes a run's deletion (spec §2.9): its approval requests
// and metric series go; bindings are left as they are.
func (p *pass) handleDelete() error {
	h := p.r.Hub
	ars, err := h.ListApprovalRequests(p.ctx, p.run.Namespace, map[string]string{fleet.TargetUpdateRunLabel: p.run.Name})
	if err != nil {
		return fmt.Errorf("listing the approval requests of update run %s: %w", p.key(), err)
	}
	for _, ar := range ars {
		if err := h.DeleteApprovalRequest(p.ctx, hub.Key{Namespace: ar.Namespace, Name: ar.Name}); err != nil && !hub.IsNotFound(err) {
			return fmt.Errorf("deleting approval request %s of update run %s: %w", ar.Name, p.key(), err)
		}
	}
	if p.r.Metrics != nil {
		p.r.Metrics.DeleteRun(p.run.Namespace, p.run.Name)
	}
	p.r.cache.forget(p.key())
	p.r.forgetGates(p.key())
	if err := h.RemoveUpdateRun(p.ctx, p.key()); err != nil {
		return fmt.Errorf("removing update run %s: %w", p.key(), err)
	}
	p.log.Info("deleted the update run", "approval_requests", len(ars))
	return nil
}

// BumpObservedGenerations re-stamps every condition of a run status (run,
// stages, deletion stage, tasks, clusters) with gen.
func BumpObservedGenerations(st *fleet.UpdateRunStatus, gen int64) {
	bump := func(cs []metav1.Condition) {
		for i := range cs {
			cs[i].ObservedGeneration = gen
		}
	}
	bump(st.Conditions)
	stage := func(s *fleet.StageUpdatingStatus) {
		bump(s.Conditions)
		for i := range s.BeforeStageTaskStatus {
			bump(s.BeforeStageTaskStatus[i].Conditions)
		}
		for i := range s.AfterStageTaskStatus {
			bump(s.AfterStageTaskStatus[i].Conditions)
		}
		for i := range s.Clusters {
			bump(s.Clusters[i].Conditions)
		}
	}
	for i := range st.StagesStatus {
		stage(&st.StagesStatus[i])
	}
	if st.DeletionStageStatus != nil {
		stage(st.DeletionStageStatus)
	}
}

// StripApprovalWaitTimes clears waitTime on Approval tasks, before and after
// stages and before the deletion stage; it is meaningless there and
// KubeFleet drops it. Nil is fine.
func StripApprovalWaitTimes(s *fleet.UpdateStrategySpec) {
	if s == nil {
		return
	}
	lists := make([][]fleet.StageTask, 0, 2*len(s.Stages)+1)
	for i := range s.Stages {
		lists = append(lists, s.Stages[i].BeforeStageTasks, s.Stages[i].AfterStageTasks)
	}
	if s.DeleteStage != nil {
		lists = append(lists, s.DeleteStage.BeforeStageTasks)
	}
	for _, tasks := range lists {
		for j := range tasks {
			if tasks[j].Type == fleet.StageTaskTypeApproval {
				tasks[j].WaitTime = nil
			}
		}
	}
}
