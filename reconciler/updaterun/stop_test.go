package updaterun

import (
	"fmt"
	"testing"
	"time"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

const testFinalizer = "test.gitfleet.io/hold"

// stopFixture is spec §9.5's: one stage selecting cluster-0,1,2 by name
// with a before approval and after [Approval, TimedWait 4s]; three
// unscheduled clusters, the first one's binding held by a finalizer.
func stopFixture(t *testing.T, ns string) *env {
	e := newEnv(t, ns).small(3, fleet.StageConfig{
		BeforeStageTasks: []fleet.StageTask{approval()},
		AfterStageTasks:  []fleet.StageTask{approval(), timedWait(4 * time.Second)},
	})
	for i := 0; i < 3; i++ {
		c := fmt.Sprintf("unscheduled-cluster-%d", i)
		e.member(c, nil)
		e.binding(c, 1, fleet.BindingStateUnscheduled)
	}
	e.updateBinding("unscheduled-cluster-0", func(b *fleet.Binding) { b.Finalizers = []string{testFinalizer} })
	return e
}

// TestStopAndResume walks spec §9.5's fourteen steps.
func TestStopAndResume(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			e := stopFixture(t, f.ns).create()
			before, after := runName+"-before-stage1", runName+"-after-stage1"
			stage := func() fleet.StageUpdatingStatus { return e.get().Status.StagesStatus[0] }

			// 1. Waiting for the before approval.
			e.ok()
			if got := e.rec.last(); got != "Run/Progressing/False/UpdateRunWaiting/none" {
				t.Errorf("metric %s", got)
			}

			// 2. Stop while waiting: stopped at once.
			e.setState(fleet.StateStop)
			wantResult(t, "stop while waiting", e.ok(), Result{Blocked: true})
			wantConds(t, "stage", stage().Conditions, stageStopped)
			wantConds(t, "run", e.get().Status.Conditions, initOK, runStopped)
			if stage().StartTime != nil {
				t.Error("stopped stage has a start time")
			}
			if got := e.rec.last(); got != "Stop/Progressing/False/UpdateRunStopped/none" {
				t.Errorf("metric %s", got)
			}

			// 3. Approving while stopped changes nothing.
			e.approve(before)
			wantResult(t, "approved while stopped", e.ok(), Result{Blocked: true})
			a, _ := e.ar(before)
			if find(a.Status.Conditions, fleet.ApprovalRequestConditionApprovalAccepted) != nil {
				t.Error("approval accepted while stopped")
			}
			wantConds(t, "before task", stage().BeforeStageTaskStatus[0].Conditions, taskCreated)
			wantNotBound(t, e, "cluster-0")

			// 4. Resume: accepted, cluster-0 started.
			e.setState(fleet.StateRun)
			wantResult(t, "resume", e.ok(), Result{RequeueAfter: ClusterPollInterval})
			wantAccepted(t, e, before)
			wantConds(t, "before task", stage().BeforeStageTaskStatus[0].Conditions, taskCreated, taskApproved)
			wantClusterStates(t, "stage", stage(), "started", "", "")
			wantConds(t, "stage", stage().Conditions, stageStarted)
			wantConds(t, "run", e.get().Status.Conditions, initOK, runProgressing)

			// 5. cluster-0 done → cluster-1 started.
			e.available("cluster-0")
			e.ok()
			wantClusterStates(t, "stage", stage(), "done", "started", "")

			// 6. Stop mid-update: stopping while cluster-1 is in flight.
			e.setState(fleet.StateStop)
			for i := 0; i < 2; i++ {
				wantResult(t, "stopping", e.ok(), Result{RequeueAfter: ClusterPollInterval})
				wantConds(t, "stage", stage().Conditions, stageStopping)
				wantConds(t, "run", e.get().Status.Conditions, initOK, runStopping)
			}

			// 7. cluster-1 finishes → stopped; cluster-2 untouched.
			e.available("cluster-1")
			wantResult(t, "stopped", e.ok(), Result{Blocked: true})
			wantClusterStates(t, "stage", stage(), "done", "done", "")
			wantConds(t, "stage", stage().Conditions, stageStopped)
			wantConds(t, "run", e.get().Status.Conditions, initOK, runStopped)
			wantNotBound(t, e, "cluster-2")

			// 8. Resume → cluster-2 started.
			e.setState(fleet.StateRun)
			e.ok()
			wantClusterStates(t, "stage", stage(), "done", "done", "started")
			wantConds(t, "stage", stage().Conditions, stageStarted)
			wantConds(t, "run", e.get().Status.Conditions, initOK, runProgressing)

			// 9. cluster-2 done → after-stage wait.
			e.available("cluster-2")
			e.ok()
			wantConds(t, "stage", stage().Conditions, stageWaitPost)
			wantAR(t, e, after, "stage1", fleet.AfterStageTaskLabelValue)
			wantConds(t, "run", e.get().Status.Conditions, initOK, runWaiting("after-stage", "stage1"))

			// 10. Stop during the after-stage wait; approving deletes nothing.
			e.clk.Advance(time.Second)
			e.setState(fleet.StateStop)
			wantResult(t, "stopped in wait", e.ok(), Result{Blocked: true})
			stoppedAt := e.clk.Now()
			wantConds(t, "stage", stage().Conditions, stageStopped)
			wantConds(t, "run", e.get().Status.Conditions, initOK, runStopped)
			e.approve(after)
			e.clk.Advance(10 * time.Second)
			e.ok()
			for i := 0; i < 3; i++ {
				if b := e.getBinding(fmt.Sprintf("unscheduled-cluster-%d", i)); b.DeletionTimestamp != nil {
					t.Errorf("binding %s deleted while stopped", b.Name)
				}
			}

			// 11. Resume: the wait is measured from the stop; the stage
			// completes and the deletion stage starts.
			e.setState(fleet.StateRun)
			if c := find(stage().Conditions, fleet.StageUpdatingConditionProgressing); !c.LastTransitionTime.Time.Equal(stoppedAt) {
				t.Errorf("stage transition time %v, want the stop at %v", c.LastTransitionTime, stoppedAt)
			}
			wantResult(t, "resume after wait", e.ok(), Result{Requeue: true})
			wantAccepted(t, e, after)
			wantConds(t, "stage", stage().Conditions, stageDone...)
			wantConds(t, "timed wait", stage().AfterStageTaskStatus[1].Conditions, waitElapsed)
			e.ok()
			e.ok()
			del := *e.get().Status.DeletionStageStatus
			wantConds(t, "deletion stage", del.Conditions, stageStarted)
			wantClusterStates(t, "deletion stage", del, "started", "done", "done")
			if b := e.getBinding("unscheduled-cluster-0"); b.DeletionTimestamp == nil {
				t.Error("held binding is not terminating")
			}

			// 12. Stop in the deletion stage: stopping while the binding is held.
			e.setState(fleet.StateStop)
			for i := 0; i < 2; i++ {
				wantResult(t, "stopping deletion", e.ok(), Result{RequeueAfter: ClusterPollInterval})
				wantConds(t, "deletion stage", e.get().Status.DeletionStageStatus.Conditions, stageStopping)
				wantConds(t, "run", e.get().Status.Conditions, initOK, runStopping)
			}

			// 13. Finalizer removed → binding gone → stopped.
			e.updateBinding("unscheduled-cluster-0", func(b *fleet.Binding) { b.Finalizers = nil })
			if e.bindingExists("unscheduled-cluster-0") {
				t.Fatal("binding still exists")
			}
			wantResult(t, "deletion stopped", e.ok(), Result{Blocked: true})
			del = *e.get().Status.DeletionStageStatus
			wantConds(t, "deletion stage", del.Conditions, stageStopped)
			wantClusterStates(t, "deletion stage", del, "done", "done", "done")
			wantConds(t, "run", e.get().Status.Conditions, initOK, runStopped)

			// 14. Resume → succeeded.
			e.setState(fleet.StateRun)
			wantResult(t, "succeeded", e.ok(), Result{Blocked: true, Ended: true})
			wantConds(t, "run", e.get().Status.Conditions, runSucceeded...)
			wantConds(t, "deletion stage", e.get().Status.DeletionStageStatus.Conditions, stageDone...)
		})
	}
}

// TestRunCreatedStoppedIsStoppedAtOnce: initialized, then Stopped.
func TestRunCreatedStoppedIsStoppedAtOnce(t *testing.T) {
	e := stopFixture(t, "")
	e.run.Spec.State = fleet.StateStop
	e.create()
	wantResult(t, "created stopped", e.ok(), Result{Blocked: true})
	wantConds(t, "run", e.get().Status.Conditions, initOK, runStopped)
	wantConds(t, "stage", e.get().Status.StagesStatus[0].Conditions, stageStopped)
	if _, ok := e.ar(runName + "-before-stage1"); ok {
		t.Error("approval request created while stopped")
	}
}

// TestStopBeforeDeletionStageStaysStopping is KubeFleet's quirk (spec
// §2.6): stopped after the last update stage but before the deletion stage
// deleted anything, the deletion stage is Stopped but the run stays
// Stopping until resumed.
func TestStopBeforeDeletionStageStaysStopping(t *testing.T) {
	e := newEnv(t, "").small(1, fleet.StageConfig{})
	e.member("gone", nil)
	e.binding("gone", 1, fleet.BindingStateUnscheduled)
	e.create()
	e.ok()
	e.available("cluster-0")
	wantResult(t, "stage done", e.ok(), Result{Requeue: true})
	e.setState(fleet.StateStop)
	wantResult(t, "stop", e.ok(), Result{RequeueAfter: ClusterPollInterval})
	run := e.get()
	wantConds(t, "deletion stage", run.Status.DeletionStageStatus.Conditions, stageStopped)
	wantConds(t, "run", run.Status.Conditions, initOK, runStopping)
	if !e.bindingExists("gone") {
		t.Error("binding deleted while stopping")
	}
	e.setState(fleet.StateRun)
	e.ok()
	wantResult(t, "resumed", e.ok(), Result{Blocked: true, Ended: true})
	wantConds(t, "run", e.get().Status.Conditions, runSucceeded...)
}
