package updaterun

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// stop handles a run in state Stop (spec §2.6): nothing new is started, no
// task is evaluated, no binding is written; clusters already in flight are
// watched until they finish, then the run reports Stopped. A terminal error
// also marks the current stage failed.
func (p *pass) stop(idx int, pl *plan) (out outcome) {
	st := &p.run.Status
	stage := p.stageAt(idx)
	defer p.failStageOnAbort(stage, &out)
	wasStopped := hasReason(st.Conditions, fleet.StagedUpdateRunConditionProgressing, fleet.UpdateRunStoppedReason)
	if !wasStopped {
		p.markRunStopping()
	}
	if idx == len(st.StagesStatus) {
		out = p.stopDeletionStage(pl)
	} else if budget, err := p.stageBudget(idx); err != nil {
		out = outcome{err: abortf("%s", err)}
	} else {
		out = p.stopStage(stage, pl, budget)
	}
	if !out.finished && hasReason(st.Conditions, fleet.StagedUpdateRunConditionProgressing, fleet.UpdateRunStoppedReason) {
		p.markRunStopping()
	}
	return out
}

// hasReason reports whether the condition of type t has the given reason.
// A run or stage already Stopped is not marked Stopping again on a later
// pass: KubeFleet's in-memory Stopped→Stopping→Stopped flip would re-stamp
// the transition time on every pass, moving the start of an after-stage
// wait away from the moment the run was stopped.
func hasReason(conds []metav1.Condition, t, reason string) bool {
	c := find(conds, t)
	return c != nil && c.Reason == reason
}

// stopStage lets the in-flight clusters of an update stage finish; under a
// failure policy (budget non-nil) one past its deadline fails, so a dead
// member does not hold the stop forever.
func (p *pass) stopStage(stage *fleet.StageUpdatingStatus, pl *plan, budget *stageBudget) outcome {
	if !hasReason(stage.Conditions, fleet.StageUpdatingConditionProgressing, fleet.StageUpdatingStoppedReason) {
		p.markStageStopping(stage)
	}
	inFlight := 0
	var stuck []string
	var errs []error
	for i := range stage.Clusters {
		cs := &stage.Clusters[i]
		started := find(cs.Conditions, fleet.ClusterUpdatingConditionStarted)
		if !isTrue(started, p.gen) || p.skipped(cs) {
			continue
		}
		if s := find(cs.Conditions, fleet.ClusterUpdatingConditionSucceeded); isTrue(s, p.gen) || isFalse(s, p.gen) {
			continue
		}
		inFlight++
		b, err := p.clusterBinding(pl, cs, stage)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		done, err := p.checkClusterResult(b, cs, stage)
		if !done && p.failIfOverdue(budget, b, cs, started, err) {
			done = true
		}
		if budget != nil {
			err = nil // the deadline deals with it (executeStage)
		}
		if err != nil {
			errs = append(errs, err)
		}
		if done {
			inFlight--
		} else if p.now.Sub(started.LastTransitionTime.Time) > p.stuckThreshold() {
			stuck = append(stuck, cs.ClusterName)
		}
	}
	p.aggregateRunStatus(stage.StageName, stuck)
	if len(errs) > 0 {
		return outcome{err: utilerrors.NewAggregate(errs), after: ClusterPollInterval, blocked: len(stuck) > 0 && budget == nil}
	}
	if inFlight == 0 {
		p.markStageStopped(stage)
		p.log.Info("stage stopped", "stage", stage.StageName)
		return outcome{finished: true}
	}
	return outcome{after: ClusterPollInterval, blocked: len(stuck) > 0 && budget == nil}
}

// stopDeletionStage deletes nothing new; it records the bindings that went
// away. The stage is Stopped once no started deletion is pending, but the
// run is Stopped only when no to-be-deleted binding is left at all — so a
// run stopped before the deletion stage deleted anything stays Stopping
// until resumed, as in KubeFleet — or when the stage's approval holds it.
func (p *pass) stopDeletionStage(pl *plan) outcome {
	del := p.run.Status.DeletionStageStatus
	clusters := make(map[string]*fleet.ClusterUpdatingStatus, len(del.Clusters))
	for i := range del.Clusters {
		clusters[del.Clusters[i].ClusterName] = &del.Clusters[i]
	}
	if !hasReason(del.Conditions, fleet.StageUpdatingConditionProgressing, fleet.StageUpdatingStoppedReason) {
		p.markStageStopping(del)
	}
	deleting := 0
	for _, b := range pl.toDelete {
		cs, ok := clusters[b.Spec.TargetCluster]
		if !ok {
			return outcome{err: abortf("%s", unexpectedErr("the to be deleted cluster `%s` is not in the deleting stage during stopping", b.Spec.TargetCluster))}
		}
		delete(clusters, b.Spec.TargetCluster)
		if isTrue(find(cs.Conditions, fleet.ClusterUpdatingConditionSucceeded), p.gen) {
			continue
		}
		if isTrue(find(cs.Conditions, fleet.ClusterUpdatingConditionStarted), p.gen) {
			if b.DeletionTimestamp == nil {
				return outcome{err: abortf("%s", unexpectedErr("the cluster `%s` in the deleting stage is marked as deleting but its corresponding binding is not deleting", cs.ClusterName))}
			}
			deleting++
		}
	}
	p.markGoneClustersDeleted(clusters)
	if deleting == 0 {
		p.markStageStopped(del)
	}
	if len(pl.toDelete) == 0 || (deleting == 0 && p.deletionGateClosed()) {
		// Held by its approval (gitfleet's deleteStage), the deletion
		// stage has started nothing: Stopped at once, as an update stage
		// waiting for its before-stage approval.
		return outcome{finished: true}
	}
	return outcome{after: ClusterPollInterval}
}

// deletionGateClosed reports whether the deletion stage has an approval
// task not approved yet.
func (p *pass) deletionGateClosed() bool {
	for _, t := range p.run.Status.DeletionStageStatus.BeforeStageTaskStatus {
		if !isTrue(find(t.Conditions, fleet.StageTaskConditionApprovalRequestApproved), p.gen) {
			return true
		}
	}
	return false
}
