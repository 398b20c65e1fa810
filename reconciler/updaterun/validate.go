package updaterun

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// validate re-derives the plan of an initialized run and checks that the
// fleet still matches what was recorded, then works out where the run is
// (spec §2.3). It returns the index of the stage to work on: len(stages)
// for the deletion stage, -1 when everything is done. Any drift is
// terminal; validation failures never mark a stage failed.
func (p *pass) validate() (int, *plan, error) {
	pl := p.r.cache.lookup(p)
	if pl == nil {
		var err error
		if pl, err = p.derivePlan(); err != nil {
			return -1, nil, err
		}
	}
	idx, err := p.checkProgress(pl)
	if err != nil {
		return -1, nil, err
	}
	if idx == len(p.run.Status.StagesStatus) && pl.cached {
		// The deletion stage needs the to-be-deleted bindings themselves,
		// and it deletes them: derive afresh (once or twice per run).
		if pl, err = p.derivePlan(); err != nil {
			return -1, nil, err
		}
		if idx, err = p.checkProgress(pl); err != nil {
			return -1, nil, err
		}
	}
	return idx, pl, nil
}

// derivePlan runs spec §2.3 steps 1–4 on a scratch status and compares it
// with the recorded apply strategy, policy snapshot index and cluster count.
func (p *pass) derivePlan() (*plan, error) {
	rec := &p.run.Status
	scratch := &fleet.UpdateRunStatus{StagedUpdateStrategySnapshot: rec.StagedUpdateStrategySnapshot}
	if _, err := p.checkPlacement(scratch); err != nil {
		return nil, err
	}
	if !equality.Semantic.DeepEqual(scratch.AppliedStrategy, rec.AppliedStrategy) {
		return nil, abortf("%s", userErr("the applyStrategy in the updateRun is outdated, latest: %s, recorded: %s", formatApplyStrategy(scratch.AppliedStrategy), formatApplyStrategy(rec.AppliedStrategy)))
	}
	snap, count, err := p.latestPolicySnapshot(scratch)
	if err != nil {
		return nil, err
	}
	if scratch.PolicySnapshotIndexUsed != rec.PolicySnapshotIndexUsed {
		return nil, abortf("the policy snapshot index used in the updateRun is outdated, latest: %s, recorded: %s", scratch.PolicySnapshotIndexUsed, rec.PolicySnapshotIndexUsed)
	}
	frozen := p.run.Spec.ClusterSet.Freezes()
	if count != -1 && count != rec.PolicyObservedClusterCount && !frozen {
		return nil, abortf("the cluster count initialized in the updateRun is outdated, latest: %d, recorded: %d", count, rec.PolicyObservedClusterCount)
	}
	selected, toDelete, err := p.collectBindings(snap, scratch)
	if err != nil {
		return nil, err
	}
	selected, toDelete = p.retryScope(selected, toDelete)
	if rec.StagedUpdateStrategySnapshot == nil {
		return nil, abortf("%s", unexpectedErr("the updateRun has nil updateStrategySnapshot"))
	}
	if frozen {
		// The stages are what initialization recorded; only which of
		// their clusters are still picked matters (freezeClusterSet).
		toDelete = frozenDeletions(toDelete, rec.DeletionStageStatus)
		members, err := p.r.Hub.ListMemberClusters(p.ctx)
		if err != nil {
			return nil, fmt.Errorf("listing member clusters: %w", err)
		}
		p.memberWindows = memberWindows(members)
	} else if err := p.computeStages(selected, scratch); err != nil {
		return nil, err
	}
	pl := newPlan(p, scratch, selected, toDelete)
	p.r.cache.store(p, pl)
	return pl, nil
}

// checkProgress compares the recorded stages with the derived ones and
// finds the current stage (spec §2.3 steps 4–7). It runs on every pass,
// cached plan or not, because the recorded status is an input too.
func (p *pass) checkProgress(pl *plan) (int, error) {
	rec := &p.run.Status
	if rec.StagedUpdateStrategySnapshot == nil {
		return -1, abortf("%s", unexpectedErr("the updateRun has nil updateStrategySnapshot"))
	}
	if rec.StagesStatus == nil {
		return -1, abortf("%s", unexpectedErr("the updateRun has nil stagesStatus"))
	}
	frozen := p.run.Spec.ClusterSet.Freezes()
	if frozen {
		p.freezeClusterSet(pl)
	}
	derived := pl.derived.StagesStatus
	if len(rec.StagesStatus) != len(derived) && !frozen {
		return -1, abortf("the number of stages in the updateRun has changed, new: %d, existing: %d", len(derived), len(rec.StagesStatus))
	}
	updating, lastFinished := -1, -1
	for i := range rec.StagesStatus {
		s := &rec.StagesStatus[i]
		if err := compareStage(i, s, derived, frozen); err != nil {
			return -1, err
		}
		maxConc, err := stageMaxConcurrency(rec, i)
		if err != nil {
			return -1, abortf("%s", err)
		}
		if updating, lastFinished, err = p.checkStageProgress(i, updating, lastFinished, s, maxConc); err != nil {
			return -1, err
		}
	}
	return p.checkDeletionStage(updating, lastFinished, pl)
}

// compareStage compares recorded stage i with the derived one; a frozen
// cluster set has nothing to compare.
func compareStage(i int, s *fleet.StageUpdatingStatus, derived []fleet.StageUpdatingStatus, frozen bool) error {
	if frozen {
		return nil
	}
	d := &derived[i]
	if s.StageName != d.StageName {
		return abortf("index `%d` stage name in the updateRun has changed, new: %s, existing: %s", i, d.StageName, s.StageName)
	}
	if len(s.Clusters) != len(d.Clusters) {
		return abortf("the number of clusters in index `%d` stage has changed, new: %d, existing: %d", i, len(d.Clusters), len(s.Clusters))
	}
	for j := range s.Clusters {
		if s.Clusters[j].ClusterName != d.Clusters[j].ClusterName {
			return abortf("the `%d` cluster in the `%d` stage has changed, new: %s, existing: %s", j, i, d.Clusters[j].ClusterName, s.Clusters[j].ClusterName)
		}
	}
	return nil
}

// checkStageProgress classifies one recorded stage as finished, failed,
// updating or not started, and checks it is where a stage of that kind
// can be.
func (p *pass) checkStageProgress(i, updating, lastFinished int, s *fleet.StageUpdatingStatus, maxConc int) (int, int, error) {
	succeeded := find(s.Conditions, fleet.StageUpdatingConditionSucceeded)
	progressing := find(s.Conditions, fleet.StageUpdatingConditionProgressing)
	switch {
	case isTrue(succeeded, p.gen):
		if updating != -1 && i > updating {
			return -1, -1, abortf("%s", unexpectedErr("the finished stage `%d` is after the updating stage `%d`", i, updating))
		}
		for j := range s.Clusters {
			if !p.clusterDone(&s.Clusters[j]) {
				return -1, -1, abortf("%s", unexpectedErr("cluster `%s` in the finished stage `%s` has not succeeded", s.Clusters[j].ClusterName, s.StageName))
			}
		}
		if i != lastFinished+1 {
			return -1, -1, abortf("%s", unexpectedErr("the finished stage `%s` is not right after the last finished stage with index `%d`", s.StageName, lastFinished))
		}
		return updating, i, nil
	case isFalse(succeeded, p.gen):
		return -1, -1, abortf("the stage `%s` has failed, err: %s", s.StageName, succeeded.Message)
	case progressing != nil:
		if updating != -1 {
			return -1, -1, abortf("%s", unexpectedErr("the stage `%s` is updating, but there is already a stage with index `%d` updating", s.StageName, updating))
		}
		if i != lastFinished+1 {
			return -1, -1, abortf("%s", unexpectedErr("the updating stage `%s` is not right after the last finished stage with index `%d`", s.StageName, lastFinished))
		}
		inFlight := 0
		for j := range s.Clusters {
			c := s.Clusters[j].Conditions
			if isTrue(find(c, fleet.ClusterUpdatingConditionStarted), p.gen) && !p.clusterDone(&s.Clusters[j]) {
				inFlight++
			}
		}
		if inFlight > maxConc {
			return -1, -1, abortf("%s", unexpectedErr("the number of updating clusters `%d` in the updating stage `%s` exceeds maxConcurrency `%d`", inFlight, s.StageName, maxConc))
		}
		return i, lastFinished, nil
	}
	return updating, lastFinished, nil
}

// checkDeletionStage checks the deletion stage against the current
// to-be-deleted bindings and returns the stage to work on.
func (p *pass) checkDeletionStage(updating, lastFinished int, pl *plan) (int, error) {
	del := p.run.Status.DeletionStageStatus
	total := len(p.run.Status.StagesStatus)
	if del == nil {
		return -1, abortf("%s", unexpectedErr("the updateRun has nil deletionStageStatus"))
	}
	listed := make(map[string]bool, len(del.Clusters))
	for _, c := range del.Clusters {
		listed[c.ClusterName] = true
	}
	// Fewer is fine: bindings disappear as they are deleted.
	for _, c := range pl.toDeleteClusters {
		if !listed[c] {
			return -1, abortf("%s", unexpectedErr("the cluster `%s` to be deleted is not in the delete stage", c))
		}
	}
	succeeded := find(del.Conditions, fleet.StageUpdatingConditionSucceeded)
	progressing := find(del.Conditions, fleet.StageUpdatingConditionProgressing)
	if updating != -1 || lastFinished < total-1 {
		if isTrue(succeeded, p.gen) || isFalse(succeeded, p.gen) || isTrue(progressing, p.gen) {
			return -1, abortf("%s", unexpectedErr("the delete stage is active, but there are still stages updating, updatingStageIndex: %d, lastFinishedStageIndex: %d", updating, lastFinished))
		}
		if updating == -1 {
			updating = lastFinished + 1
		}
		return updating, nil
	}
	if isTrue(succeeded, p.gen) {
		return -1, nil
	}
	if isFalse(succeeded, p.gen) {
		return -1, abortf("the delete stage has failed, err: %s", succeeded.Message)
	}
	return total, nil
}

// formatApplyStrategy prints an apply strategy as upstream's %v of the
// pointer does (&{PartialComparison Always ClientSideApply false <nil>
// Always}), except that a serverSideApplyConfig prints its value instead
// of a memory address: the message lands in a status file in Git and must
// be the same on every pass and every machine.
func formatApplyStrategy(a *fleet.ApplyStrategy) string {
	if a == nil {
		return "<nil>"
	}
	ssa := "<nil>"
	if a.ServerSideApplyConfig != nil {
		ssa = fmt.Sprintf("&%v", *a.ServerSideApplyConfig)
	}
	return fmt.Sprintf("&{%s %s %s %t %s %s}", a.ComparisonOption, a.WhenToApply, a.Type, a.AllowCoOwnership, ssa, a.WhenToTakeOver)
}
