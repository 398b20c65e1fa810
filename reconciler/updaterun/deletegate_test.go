package updaterun

import (
	"testing"
	"time"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// gatedDeletion is one stage with every scheduled cluster, all at once, and
// an approval before the deletion stage (gitfleet's deleteStage).
func gatedDeletion() fleet.UpdateStrategySpec {
	return fleet.UpdateStrategySpec{
		Stages:      []fleet.StageConfig{{Name: "all", LabelSelector: selector("group", "prod"), MaxConcurrency: intOrStr("100%")}},
		DeleteStage: &fleet.DeleteStageConfig{BeforeStageTasks: []fleet.StageTask{approval()}},
	}
}

// rollAll takes the single stage through: started, available, succeeded.
func rollAll(t *testing.T, e *env) {
	t.Helper()
	e.ok() // initialized, every cluster started
	e.available(clusterNames(e.get().Status.StagesStatus[0])...)
	wantResult(t, "stage done", e.ok(), Result{Requeue: true})
	wantConds(t, "stage all", e.get().Status.StagesStatus[0].Conditions, stageDone...)
}

func TestTheDeletionStageWaitsForItsApproval(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			e := newEnv(t, f.ns).fixture()
			e.strategy(gatedDeletion())
			e.create()
			rollAll(t, e)
			name := runName + "-before-delete-stage"
			if got := e.get().Status.DeletionStageStatus.BeforeStageTaskStatus; len(got) != 1 || got[0].ApprovalRequestName != name {
				t.Fatalf("deletion stage before-stage tasks %+v, want one Approval named %s", got, name)
			}

			// Waiting, like a stage's before-stage approval: nothing deleted.
			wantResult(t, "gated", e.ok(), Result{RequeueAfter: ApprovalPollInterval, Blocked: true})
			run := e.get()
			del := run.Status.DeletionStageStatus
			wantConds(t, "run", run.Status.Conditions, initOK, runWaiting("before-stage", fleet.UpdateRunDeleteStageName))
			wantConds(t, "deletion stage", del.Conditions, stageWaitPre)
			wantConds(t, "deletion stage task", del.BeforeStageTaskStatus[0].Conditions, taskCreated)
			wantClusterStates(t, "deletion stage", *del, "", "", "")
			if del.StartTime != nil {
				t.Error("the deletion stage started before its approval")
			}
			a, ok := e.ar(name)
			if !ok {
				t.Fatalf("approval request %s does not exist", name)
			}
			if a.Spec.TargetUpdateRun != runName || a.Spec.TargetStage != fleet.UpdateRunDeleteStageName {
				t.Errorf("approval request spec %+v, want run %s, stage %s", a.Spec, runName, fleet.UpdateRunDeleteStageName)
			}
			for k, v := range map[string]string{fleet.TargetUpdatingStageNameLabel: "delete-stage", fleet.TargetUpdateRunLabel: runName,
				fleet.TaskTypeLabel: fleet.BeforeStageTaskLabelValue, fleet.IsLatestUpdateRunApprovalLabel: "true"} {
				if a.Labels[k] != v {
					t.Errorf("approval request label %s = %q, want %q", k, a.Labels[k], v)
				}
			}
			e.clk.Advance(time.Hour)
			wantResult(t, "still gated", e.ok(), Result{RequeueAfter: ApprovalPollInterval, Blocked: true})
			for _, c := range deletionClusters {
				if !e.bindingExists(c) {
					t.Errorf("binding of %s deleted before the approval", c)
				}
			}

			// Approved: every binding deleted at once, then the run succeeds.
			e.approve(name)
			wantResult(t, "approved", e.ok(), Result{RequeueAfter: ClusterPollInterval})
			wantAccepted(t, e, name)
			run = e.get()
			del = run.Status.DeletionStageStatus
			wantConds(t, "run", run.Status.Conditions, initOK, runProgressing)
			wantConds(t, "deletion stage", del.Conditions, stageStarted)
			wantConds(t, "deletion stage task", del.BeforeStageTaskStatus[0].Conditions, taskCreated, taskApproved)
			for _, c := range deletionClusters {
				if e.bindingExists(c) {
					t.Errorf("binding of %s not deleted after the approval", c)
				}
			}
			if e.rec.approvals[fleet.BeforeStageTaskLabelValue] != 1 {
				t.Errorf("approval latency observations %v", e.rec.approvals)
			}
			wantResult(t, "succeeded", e.ok(), Result{Blocked: true, Ended: true})
			wantConds(t, "run", e.get().Status.Conditions, runSucceeded...)
		})
	}
}

func TestADeletionStageWithNothingToDeleteCreatesNoApprovalRequest(t *testing.T) {
	e := newEnv(t, "").fixture()
	e.deleteBindings(deletionClusters...)
	e.strategy(gatedDeletion())
	e.create()
	rollAll(t, e)
	wantResult(t, "deletion stage", e.ok(), Result{Blocked: true, Ended: true})
	wantConds(t, "run", e.get().Status.Conditions, runSucceeded...)
	if _, ok := e.ar(runName + "-before-delete-stage"); ok {
		t.Error("an approval request gates a deletion stage that deletes nothing")
	}
}

func TestStripApprovalWaitTimesCoversTheDeletionStage(t *testing.T) {
	s := gatedDeletion()
	s.DeleteStage.BeforeStageTasks[0].WaitTime = dur(time.Minute)
	StripApprovalWaitTimes(&s)
	if w := s.DeleteStage.BeforeStageTasks[0].WaitTime; w != nil {
		t.Errorf("deleteStage approval keeps waitTime %v", w)
	}
}

// Stopped while its approval holds it, the deletion stage has started
// nothing: the run is Stopped at once (an update stage waiting for its
// before-stage approval stops so), and resumes where it stood.
func TestARunStoppedAtTheDeletionStagesApprovalIsStopped(t *testing.T) {
	e := newEnv(t, "").fixture()
	e.strategy(gatedDeletion())
	e.create()
	rollAll(t, e)
	wantResult(t, "gated", e.ok(), Result{RequeueAfter: ApprovalPollInterval, Blocked: true})

	e.setState(fleet.StateStop)
	wantResult(t, "stopped", e.ok(), Result{Blocked: true})
	run := e.get()
	wantConds(t, "run", run.Status.Conditions, initOK, runStopped)
	wantConds(t, "deletion stage", run.Status.DeletionStageStatus.Conditions, stageStopped)

	// Approved while stopped: nothing is deleted until the run runs again.
	e.approve(runName + "-before-delete-stage")
	wantResult(t, "approved while stopped", e.ok(), Result{Blocked: true})
	for _, c := range deletionClusters {
		if !e.bindingExists(c) {
			t.Errorf("binding of %s deleted while the run is stopped", c)
		}
	}
	e.setState(fleet.StateRun)
	wantResult(t, "resumed", e.ok(), Result{RequeueAfter: ClusterPollInterval})
	for _, c := range deletionClusters {
		if e.bindingExists(c) {
			t.Errorf("binding of %s not deleted after the resume", c)
		}
	}
	wantResult(t, "succeeded", e.ok(), Result{Blocked: true, Ended: true})
	wantConds(t, "run", e.get().Status.Conditions, runSucceeded...)
}
