package updaterun

import (
	"fmt"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// stageAt is update stage idx, or the deletion stage when idx ==
// len(stages).
func (p *pass) stageAt(idx int) *fleet.StageUpdatingStatus {
	if idx < len(p.run.Status.StagesStatus) {
		return &p.run.Status.StagesStatus[idx]
	}
	return p.run.Status.DeletionStageStatus
}

// clusterBinding is the binding of a stage cluster; a cluster without one
// aborts the run (spec §3.4).
func (p *pass) clusterBinding(pl *plan, cs *fleet.ClusterUpdatingStatus, stage *fleet.StageUpdatingStatus) (*fleet.Binding, error) {
	b, err := pl.bindings.get(p.ctx, cs.ClusterName)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, abortf("%s", unexpectedErr("the binding for cluster `%s` in stage `%s` is not found in the toBeUpdatedBindings map", cs.ClusterName, stage.StageName))
	}
	return b, nil
}

// failStageOnAbort marks the stage failed when the pass ends in a terminal
// error raised while working on it (spec §2.8); deferred by execute and stop.
func (p *pass) failStageOnAbort(stage *fleet.StageUpdatingStatus, out *outcome) {
	if isAborted(out.err) {
		p.markStageFailed(stage, out.err.Error())
	}
}

// execute works on stage idx of a run in state Run (spec §2.5): an update
// stage, or the deletion stage when idx == len(stages). A terminal error
// also marks the stage it happened in as failed.
func (p *pass) execute(idx int, pl *plan) (out outcome) {
	st := &p.run.Status
	stage := p.stageAt(idx)
	defer p.failStageOnAbort(stage, &out)

	p.markRunProgressingUnlessWaitingOrStuck()
	if idx == len(st.StagesStatus) {
		return p.executeDeletionStage(pl)
	}
	if len(stage.Clusters) == 0 {
		// Skipped entirely, tasks included (KubeFleet PR #609).
		p.markStageSkipped(stage)
		p.log.Info("skipped a stage without clusters", "stage", stage.StageName)
		return outcome{after: 0}
	}
	approved, gateAfter, err := p.beforeStageTasks(idx)
	if err != nil {
		return outcome{err: err}
	}
	if !approved {
		p.markStageWaiting(stage, StageWaitingBeforeMessage)
		p.markRunWaiting("before-stage", stage.StageName)
		if gateAfter > 0 {
			return outcome{after: gateAfter}
		}
		return outcome{after: ApprovalPollInterval, blocked: true}
	}
	maxConc, err := stageMaxConcurrency(st, idx)
	if err != nil {
		return outcome{err: abortf("%s", err)}
	}
	budget, err := p.stageBudget(idx)
	if err != nil {
		return outcome{err: abortf("%s", err)}
	}
	return p.executeStage(idx, pl, maxConc, budget)
}

// beforeStageTasks evaluates the single Approval task a stage may have
// before it starts (spec §3.8), or gitfleet's Metric task; gateAfter is
// when a pending gate wants the next look.
func (p *pass) beforeStageTasks(idx int) (approved bool, gateAfter time.Duration, err error) {
	cfg := &p.run.Status.StagedUpdateStrategySnapshot.Stages[idx]
	stage := &p.run.Status.StagesStatus[idx]
	for i, t := range cfg.BeforeStageTasks {
		if !opensRequest(t.Type) {
			return false, 0, abortf("%s", unexpectedErr("found unsupported task type in before stage tasks: %s", t.Type))
		}
		if i >= len(stage.BeforeStageTaskStatus) {
			return false, 0, abortf("%s", unexpectedErr("the before stage task %d of stage `%s` has no status", i, stage.StageName))
		}
		return p.approvalTask(&stage.BeforeStageTaskStatus[i], stage, fleet.BeforeStageTaskLabelValue, t.Metric)
	}
	return true, 0, nil
}

// deleteStageTasks evaluates the Approval task the strategy's deleteStage
// may put before the deletion stage, exactly as a stage's (spec §3.8).
func (p *pass) deleteStageTasks() (bool, error) {
	del := p.run.Status.DeletionStageStatus
	var tasks []fleet.StageTask
	if s := p.run.Status.StagedUpdateStrategySnapshot; s != nil && s.DeleteStage != nil {
		tasks = s.DeleteStage.BeforeStageTasks
	}
	for i, t := range tasks {
		if t.Type != fleet.StageTaskTypeApproval {
			return false, abortf("%s", unexpectedErr("found unsupported task type in before stage tasks: %s", t.Type))
		}
		if i >= len(del.BeforeStageTaskStatus) {
			return false, abortf("%s", unexpectedErr("the before stage task %d of stage `%s` has no status", i, del.StageName))
		}
		approved, _, err := p.approvalTask(&del.BeforeStageTaskStatus[i], del, fleet.BeforeStageTaskLabelValue, nil)
		return approved, err
	}
	return true, nil
}

// executeStage starts and watches the clusters of an update stage, at most
// maxConc in flight, strictly in the recorded order (spec §3.3–§3.7).
// With a failure policy (budget non-nil, failurepolicy.go) a failed cluster
// is done, an overdue one fails, and a stage over its budget starts no more
// clusters and fails the run once its in-flight ones are done.
func (p *pass) executeStage(idx int, pl *plan, maxConc int, budget *stageBudget) outcome {
	st := &p.run.Status
	stage := &st.StagesStatus[idx]
	snapshotName := p.resourceSnapshotName()
	cfg := &st.StagedUpdateStrategySnapshot.Stages[idx]
	gate := windowGate{p: p}
	finished, inFlight := 0, 0
	finishedNow := false
	var stuck []string
	var errs []error
	var held []fleet.WindowWait
	for i := 0; i < len(stage.Clusters) && inFlight < maxConc; i++ {
		cs := &stage.Clusters[i]
		succeeded := find(cs.Conditions, fleet.ClusterUpdatingConditionSucceeded)
		if isTrue(succeeded, p.gen) || p.skipped(cs) || budget.failedCluster(cs, p.gen) {
			finished++
			continue
		}
		started := find(cs.Conditions, fleet.ClusterUpdatingConditionStarted)
		if !isTrue(started, p.gen) && budget.exceeded() {
			continue // over budget: no cluster starts any more
		}
		if !isTrue(started, p.gen) && !isFalse(succeeded, p.gen) {
			wait, isHeld, overridden, err := gate.hold(cfg, pl.memberWindows[cs.ClusterName])
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if isHeld {
				held = append(held, wait)
				continue // outside its windows: takes no slot (window.go)
			}
			recordOverriddenFreeze(stage, overridden)
		}
		inFlight++
		if isFalse(succeeded, p.gen) {
			errs = append(errs, abortf("the cluster `%s` in the stage %s has failed", cs.ClusterName, stage.StageName))
			continue
		}
		b, err := p.clusterBinding(pl, cs, stage)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !isTrue(started, p.gen) {
			done, err := p.startCluster(b, cs, stage, snapshotName)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			p.markClusterStarted(stage.StageName, cs)
			p.markStageStarted(stage)
			// A cluster that already had the snapshot finishes as it
			// starts, yet keeps its slot this pass (spec §3.3): no binding
			// changes, so no event would wake the run for the next one.
			finishedNow = finishedNow || done
			continue
		}
		// In flight: first make sure no other run took the binding over.
		inSync := p.bindingInSync(b, cs, snapshotName)
		rolloutStarted := isTrue(find(b.Status.Conditions, fleet.ResourceBindingRolloutStarted), b.Generation)
		if !inSync || !rolloutStarted || b.Spec.State != fleet.BindingStateBound {
			msg := userErr("the binding of the updating cluster `%s` in the stage `%s` is not up-to-date with the desired status, "+
				"please check the status of binding `%s` and see if there is a concurrent updateRun referencing the same placement and updating the same cluster",
				cs.ClusterName, stage.StageName, objRef(b))
			p.markClusterFailed(stage.StageName, cs, msg)
			errs = append(errs, abortf("%s", msg))
			continue
		}
		done, err := p.checkClusterResult(b, cs, stage)
		if !done && p.failIfOverdue(budget, b, cs, started, err) {
			done = true
		}
		if budget != nil {
			err = nil // under a failure policy the deadline deals with it, not the error backoff
		}
		if err != nil {
			errs = append(errs, err)
		}
		if done {
			finished++
			inFlight-- // a finished cluster frees its slot in this very pass
		} else if p.now.Sub(started.LastTransitionTime.Time) > p.stuckThreshold() {
			stuck = append(stuck, cs.ClusterName)
		}
	}
	if budget.exceeded() && inFlight == 0 && len(errs) == 0 {
		return outcome{err: budget.exceededErr()}
	}
	// Nothing in flight and the rest outside their windows: the stage
	// waits (marked before the run could be marked Progressing, which
	// would move the condition's transition time at every pass).
	if inFlight == 0 && len(held) > 0 && len(errs) == 0 && !finishedNow {
		return p.waitForWindow(stage, held)
	}
	// Upstream marks the run Progressing here even when every cluster is
	// done and completeStage is about to mark it Waiting again; the flip
	// moves the Progressing lastTransitionTime on every poll of a waiting
	// stage, which in gitfleet would be a status commit per poll. Skipping
	// it when the stage is complete leaves the final condition identical.
	if finished < len(stage.Clusters) || len(errs) > 0 {
		p.aggregateRunStatus(stage.StageName, stuck)
	}
	if len(errs) > 0 {
		return outcome{err: utilerrors.NewAggregate(errs), after: ClusterPollInterval, blocked: len(stuck) > 0 && budget == nil}
	}
	if finished == len(stage.Clusters) {
		p.observeStageDuration(stage)
		return p.completeStage(idx)
	}
	if finishedNow {
		return outcome{after: 0}
	}
	return outcome{after: ClusterPollInterval, blocked: len(stuck) > 0 && budget == nil}
}

// aggregateRunStatus reports a stuck run, or a progressing one in state Run.
func (p *pass) aggregateRunStatus(stage string, stuck []string) {
	if len(stuck) > 0 {
		p.markRunStuck(stage, stuck)
	} else if p.run.Spec.State == fleet.StateRun {
		p.markRunProgressing()
	}
}

func (p *pass) resourceSnapshotName() string {
	var idx int
	fmt.Sscan(p.run.Status.ResourceSnapshotIndexUsed, &idx) // validated at initialization
	return fmt.Sprintf(fleet.ResourceSnapshotNameFmt, p.run.Spec.PlacementName, idx)
}

// bindingInSync reports whether the binding already carries what this run
// rolls out to the cluster (spec §3.4); nil and empty lists differ.
func (p *pass) bindingInSync(b *fleet.Binding, cs *fleet.ClusterUpdatingStatus, snapshotName string) bool {
	return b.Spec.ResourceSnapshotName == snapshotName &&
		deepEqual(cs.ResourceOverrideSnapshots, b.Spec.ResourceOverrideSnapshots) &&
		deepEqual(cs.ClusterResourceOverrideSnapshots, b.Spec.ClusterResourceOverrideSnapshots) &&
		deepEqual(b.Spec.ApplyStrategy, p.run.Status.AppliedStrategy)
}

// startCluster points the cluster's binding at the run's snapshot (spec
// §3.4). It reports whether the cluster is already done: a binding that
// had the snapshot rolled out is evaluated at once.
func (p *pass) startCluster(b *fleet.Binding, cs *fleet.ClusterUpdatingStatus, stage *fleet.StageUpdatingStatus, snapshotName string) (bool, error) {
	switch {
	case !p.bindingInSync(b, cs, snapshotName):
		b.Spec.ResourceSnapshotName = snapshotName
		b.Spec.ResourceOverrideSnapshots = cs.ResourceOverrideSnapshots
		b.Spec.ClusterResourceOverrideSnapshots = cs.ClusterResourceOverrideSnapshots
		b.Spec.ApplyStrategy = p.run.Status.AppliedStrategy.DeepCopy()
		return false, p.bindAndMarkRolloutStarted(b)
	case b.Spec.State != fleet.BindingStateBound:
		return false, p.bindAndMarkRolloutStarted(b)
	case !isTrue(find(b.Status.Conditions, fleet.ResourceBindingRolloutStarted), b.Generation):
		return false, p.markRolloutStarted(b)
	default:
		return p.checkClusterResult(b, cs, stage)
	}
}

func (p *pass) bindAndMarkRolloutStarted(b *fleet.Binding) error {
	if b.Spec.State != fleet.BindingStateBound {
		p.bindingStateWrites++
	}
	b.Spec.State = fleet.BindingStateBound
	key := hub.Key{Namespace: b.Namespace, Name: b.Name}
	if err := p.r.Hub.UpdateBinding(p.ctx, b); err != nil {
		return fmt.Errorf("binding %s to the run's snapshot: %w", objRef(b), err)
	}
	// Re-read for the generation the spec change produced.
	cur, err := p.r.Hub.GetBinding(p.ctx, key)
	if err != nil {
		return fmt.Errorf("re-reading binding %s: %w", objRef(b), err)
	}
	*b = *cur
	return p.markRolloutStarted(b)
}

// markRolloutStarted replaces the binding's RolloutStarted condition (so
// its transition time is fresh) at the binding's generation. The message
// names the snapshot index actually used (deliberate difference 7).
func (p *pass) markRolloutStarted(b *fleet.Binding) error {
	removeCondition(&b.Status.Conditions, fleet.ResourceBindingRolloutStarted)
	b.Status.Conditions = append(b.Status.Conditions, metav1.Condition{
		Type: fleet.ResourceBindingRolloutStarted, Status: metav1.ConditionTrue, ObservedGeneration: b.Generation,
		LastTransitionTime: metav1.NewTime(p.now), Reason: fleet.RolloutStartedReason,
		Message: fmt.Sprintf(RolloutStartedMessageFmt, p.run.Status.ResourceSnapshotIndexUsed, p.run.Name),
	})
	if err := p.r.Hub.UpdateBindingStatus(p.ctx, b); err != nil {
		return fmt.Errorf("marking the rollout of binding %s started: %w", objRef(b), err)
	}
	return nil
}

// checkClusterResult marks the cluster succeeded when its binding reports
// the snapshot available (or its diff reported); a failure the delivery
// layer reports is a retriable error, so the cluster stays in flight and the
// run eventually shows Stuck (spec §3.5).
func (p *pass) checkClusterResult(b *fleet.Binding, cs *fleet.ClusterUpdatingStatus, stage *fleet.StageUpdatingStatus) (bool, error) {
	switch ClusterUpdateResult(b) {
	case ClusterUpdated:
		p.markClusterSucceeded(stage.StageName, cs)
		return true, nil
	case ClusterUpdateFailed:
		return false, fmt.Errorf("the cluster updating encountered an error at stage `%s`, updateRun := `%s`", stage.StageName, p.run.Name)
	}
	return false, nil
}

// ClusterResult is what a binding's conditions say about a cluster update.
type ClusterResult int

const (
	ClusterUpdating ClusterResult = iota
	ClusterUpdated
	ClusterUpdateFailed
)

// pendingReasons are the False reasons that mean "not yet", not "failed":
// KubeFleet's (spec §3.5) and the ones its work generator writes while
// the member has not reported on changed Works (ApplyInProgress,
// DiffReportInProgress), which a pass woken by that very write would
// otherwise take for a failure (README, deliberate differences, 31).
var pendingReasons = map[string]bool{
	fleet.OverriddenPendingReason:       true,
	fleet.WorkNotSynchronizedYetReason:  true,
	fleet.ApplyPendingReason:            true,
	fleet.ResourceNotAvailableYetReason: true,
	fleet.ApplyInProgressReason:         true,
	fleet.DiffReportInProgressReason:    true,
}

// ClusterUpdateResult evaluates a binding's delivery conditions at its
// generation: Available or DiffReported True is done; a False delivery
// condition (DiffReported included) with a non-pending reason is a
// failure.
func ClusterUpdateResult(b *fleet.Binding) ClusterResult {
	conds, gen := b.Status.Conditions, b.Generation
	diff := find(conds, fleet.ResourceBindingDiffReported)
	if isTrue(find(conds, fleet.ResourceBindingAvailable), gen) || isTrue(diff, gen) {
		return ClusterUpdated
	}
	for _, t := range []string{fleet.ResourceBindingOverridden, fleet.ResourceBindingWorkSynchronized,
		fleet.ResourceBindingApplied, fleet.ResourceBindingAvailable} {
		if c := find(conds, t); isFalse(c, gen) && !pendingReasons[c.Reason] {
			return ClusterUpdateFailed
		}
	}
	if isFalse(diff, gen) && !pendingReasons[diff.Reason] {
		return ClusterUpdateFailed
	}
	return ClusterUpdating
}

// observeStageDuration reports how long the stage's clusters took, once:
// while the stage is still in StageUpdatingStarted (spec §7.3).
func (p *pass) observeStageDuration(stage *fleet.StageUpdatingStatus) {
	c := find(stage.Conditions, fleet.StageUpdatingConditionProgressing)
	if p.r.Metrics == nil || c == nil || c.Reason != fleet.StageUpdatingStartedReason || stage.StartTime == nil {
		return
	}
	p.r.Metrics.ObserveStageClusterUpdatingDuration(p.run, p.now.Sub(stage.StartTime.Time).Seconds())
}

// completeStage runs the after-stage tasks of a stage whose clusters all
// succeeded (spec §3.9).
func (p *pass) completeStage(idx int) outcome {
	stage := &p.run.Status.StagesStatus[idx]
	p.markRunWaiting("after-stage", stage.StageName)
	p.markStageWaiting(stage, StageWaitingAfterMessage)
	done, wait, approvalPending, err := p.afterStageTasks(idx)
	if err != nil {
		return outcome{err: err}
	}
	if done {
		p.markRunProgressing()
		p.markStageSucceeded(stage)
		p.log.Info("stage succeeded", "stage", stage.StageName)
		return outcome{after: 0}
	}
	if wait > 0 {
		return outcome{after: wait}
	}
	return outcome{after: ApprovalPollInterval, blocked: approvalPending}
}

// afterStageTasks evaluates all after-stage tasks ("in parallel"). wait is
// the remaining time of a pending TimedWait, 0 if none is pending.
func (p *pass) afterStageTasks(idx int) (done bool, wait time.Duration, approvalPending bool, err error) {
	cfg := &p.run.Status.StagedUpdateStrategySnapshot.Stages[idx]
	stage := &p.run.Status.StagesStatus[idx]
	done = true
	for i, t := range cfg.AfterStageTasks {
		if i >= len(stage.AfterStageTaskStatus) {
			return false, 0, false, abortf("%s", unexpectedErr("the after stage task %d of stage `%s` has no status", i, stage.StageName))
		}
		task := &stage.AfterStageTaskStatus[i]
		switch t.Type {
		case fleet.StageTaskTypeTimedWait:
			// The wait starts when the stage's Progressing condition last
			// changed status: when its last cluster finished.
			start := find(stage.Conditions, fleet.StageUpdatingConditionProgressing).LastTransitionTime.Time
			end := start.Add(t.WaitTime.Duration)
			if remaining := end.Sub(p.now); remaining > 0 {
				done = false
				if wait == 0 || remaining < wait {
					wait = remaining
				}
				// Deliberate difference 6: say when the wait ends.
				p.set(&task.Conditions, fleet.StageTaskConditionWaitTimeElapsed, metav1.ConditionFalse,
					fleet.AfterStageTaskWaitTimeNotElapsedReason, fmt.Sprintf(TaskWaitTimeNotElapsedMessageFmt, end.UTC().Format(time.RFC3339)))
			} else {
				p.set(&task.Conditions, fleet.StageTaskConditionWaitTimeElapsed, metav1.ConditionTrue,
					fleet.AfterStageTaskWaitTimeElapsedReason, TaskWaitTimeElapsedMessage)
			}
		case fleet.StageTaskTypeApproval, fleet.StageTaskTypeMetric:
			approved, gateAfter, err := p.approvalTask(task, stage, fleet.AfterStageTaskLabelValue, t.Metric)
			if err != nil {
				return false, 0, false, err
			}
			switch {
			case approved:
			case gateAfter > 0:
				// A pending gate moves on its own, like a TimedWait.
				done = false
				if wait == 0 || gateAfter < wait {
					wait = gateAfter
				}
			default:
				done, approvalPending = false, true
			}
		}
	}
	if done {
		wait = 0
	}
	return done, wait, approvalPending, nil
}

// executeDeletionStage deletes the bindings of the clusters the placement
// no longer picks, all at once (spec §3.11). A binding is gone only when
// its finalizers let it go; until then its cluster stays Started. With a
// deleteStage approval in the strategy (gitfleet's), nothing is deleted
// before it is approved; with nothing to delete there is nothing to gate,
// as an update stage without clusters skips its tasks.
func (p *pass) executeDeletionStage(pl *plan) outcome {
	del := p.run.Status.DeletionStageStatus
	if len(pl.toDelete) > 0 && len(del.BeforeStageTaskStatus) > 0 {
		approved, err := p.deleteStageTasks()
		if err != nil {
			return outcome{err: err}
		}
		if !approved {
			p.markStageWaiting(del, StageWaitingBeforeMessage)
			p.markRunWaiting("before-stage", del.StageName)
			return outcome{after: ApprovalPollInterval, blocked: true}
		}
		p.markRunProgressing()
	}
	clusters := make(map[string]*fleet.ClusterUpdatingStatus, len(del.Clusters))
	for i := range del.Clusters {
		clusters[del.Clusters[i].ClusterName] = &del.Clusters[i]
	}
	p.markStageStarted(del)
	for _, b := range pl.toDelete {
		cs, ok := clusters[b.Spec.TargetCluster]
		if !ok {
			return outcome{err: abortf("%s", unexpectedErr("the to be deleted cluster `%s` is not in the deleting stage during execution", b.Spec.TargetCluster))}
		}
		delete(clusters, b.Spec.TargetCluster)
		if isTrue(find(cs.Conditions, fleet.ClusterUpdatingConditionSucceeded), p.gen) {
			return outcome{err: abortf("%s", unexpectedErr("the deleted cluster `%s` in the deleting stage still has a binding", b.Spec.TargetCluster))}
		}
		if isTrue(find(cs.Conditions, fleet.ClusterUpdatingConditionStarted), p.gen) {
			if b.DeletionTimestamp == nil {
				return outcome{err: abortf("%s", unexpectedErr("the cluster `%s` in the deleting stage is marked as deleting but its corresponding binding is not deleting", cs.ClusterName))}
			}
			continue
		}
		if err := p.r.Hub.DeleteBinding(p.ctx, hub.Key{Namespace: b.Namespace, Name: b.Name}); err != nil && !hub.IsNotFound(err) {
			return outcome{err: fmt.Errorf("deleting binding %s: %w", objRef(b), err)}
		}
		p.invalidatePlan = true
		p.markClusterStarted(del.StageName, cs)
	}
	p.markGoneClustersDeleted(clusters)
	if len(pl.toDelete) == 0 {
		p.markStageSucceeded(del)
		return outcome{finished: true}
	}
	return outcome{after: ClusterPollInterval}
}

// markGoneClustersDeleted marks the deletion-stage clusters whose bindings
// are gone as Started and Succeeded; one a frozen run skipped (picked
// again) is not gone.
func (p *pass) markGoneClustersDeleted(gone map[string]*fleet.ClusterUpdatingStatus) {
	for _, cs := range gone {
		if p.skipped(cs) {
			continue
		}
		if !isTrue(find(cs.Conditions, fleet.ClusterUpdatingConditionStarted), p.gen) {
			p.markClusterStarted(fleet.UpdateRunDeleteStageName, cs)
		}
		p.markClusterSucceeded(fleet.UpdateRunDeleteStageName, cs)
	}
}

func deepEqual(a, b any) bool { return reflect.DeepEqual(a, b) }
