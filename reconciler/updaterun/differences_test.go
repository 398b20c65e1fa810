package updaterun

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
)

// Tests of gitfleet's deliberate differences from KubeFleet (DESIGN.md).

// Difference 2: the stuck threshold is configurable, 5 minutes by default.
func TestStuckThresholdIsConfigurable(t *testing.T) {
	tests := []struct {
		name      string
		threshold time.Duration
		after     time.Duration
		wantStuck bool
	}{
		{"default not reached", 0, 4 * time.Minute, false},
		{"default passed", 0, 6 * time.Minute, true},
		{"custom passed", time.Minute, 2 * time.Minute, true},
		{"custom not reached", 10 * time.Minute, 6 * time.Minute, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, "").small(1, fleet.StageConfig{}).create()
			e.r.StuckThreshold = tt.threshold
			e.ok()
			e.clk.Advance(tt.after)
			res := e.ok()
			p := find(e.get().Status.Conditions, fleet.StagedUpdateRunConditionProgressing)
			if stuck := p.Reason == fleet.UpdateRunStuckReason; stuck != tt.wantStuck || res.Blocked != tt.wantStuck {
				t.Errorf("Progressing %s, blocked %v; want stuck %v", p.Reason, res.Blocked, tt.wantStuck)
			}
		})
	}
}

// Difference 3: concurrent runs on one placement must use identical
// strategy snapshots.
func TestConcurrentRunsNeedTheSameStrategy(t *testing.T) {
	other := func(e *env, strategy string) {
		e.h.ApplyUpdateRun(&fleet.UpdateRun{
			ObjectMeta: metav1.ObjectMeta{Name: "other-run", Namespace: e.ns},
			Spec: fleet.UpdateRunSpec{PlacementName: placementName, StagedUpdateStrategyName: strategy,
				ResourceSnapshotIndex: "0", State: fleet.StateRun},
		})
		if _, err := e.r.Reconcile(e.ctx, hub.Key{Namespace: e.ns, Name: "other-run"}); err != nil {
			t.Fatal(err)
		}
	}
	different := func(e *env) {
		s := twoStages()
		s.Stages[0].MaxConcurrency = intOrStr("2")
		e.h.ApplyUpdateStrategy(&fleet.UpdateStrategy{ObjectMeta: metav1.ObjectMeta{Name: "other-strategy", Namespace: e.ns}, Spec: s})
		other(e, "other-strategy")
	}
	t.Run("in flight with another strategy", func(t *testing.T) {
		e := newEnv(t, "").fixture()
		different(e)
		e.create()
		e.ok()
		wantConds(t, "run", e.get().Status.Conditions, initFailed(userMsg(fmt.Sprintf(ConcurrentStrategyMismatchFmt, "other-run", placementName))))
	})
	t.Run("in flight with the same strategy", func(t *testing.T) {
		e := newEnv(t, "").fixture()
		other(e, strategyName)
		e.create()
		e.ok()
		wantConds(t, "run", e.get().Status.Conditions, initOK, runWaiting("before-stage", "stage1"))
	})
	t.Run("finished with another strategy", func(t *testing.T) {
		e := newEnv(t, "").fixture()
		different(e)
		// Preempt it: it fails and no longer counts.
		e.h.DeletePlacement(e.pkey())
		if _, err := e.r.Reconcile(e.ctx, hub.Key{Name: "other-run"}); err != nil {
			t.Fatal(err)
		}
		e.placement(nil)
		lists := &runListCountingHub{Hub: e.h}
		e.r.Hub = lists
		e.create()
		e.ok()
		wantConds(t, "run", e.get().Status.Conditions, initOK, runWaiting("before-stage", "stage1"))
		if n := lists.whole.Load(); n != 0 {
			t.Errorf("initializing listed the runs whole %d times; want only the unfinished ones listed, a finished run left packed", n)
		}
	})
}

// runListCountingHub counts the lists of every run whole, which unpack the
// finished runs the embedded hub keeps packed.
type runListCountingHub struct {
	*embedded.Hub
	whole atomic.Int64
}

func (c *runListCountingHub) ListUpdateRuns(ctx context.Context) ([]*fleet.UpdateRun, error) {
	c.whole.Add(1)
	return c.Hub.ListUpdateRuns(ctx)
}

// Difference 5: an Approved condition at the wrong observedGeneration is
// still ignored, but the task says why.
func TestApprovalAtTheWrongGenerationIsExplained(t *testing.T) {
	e := newEnv(t, "").fixture().create()
	e.ok()
	name := runName + "-before-stage1"
	e.approveAt(name, 0)
	wantResult(t, "ignored", e.ok(), Result{RequeueAfter: ApprovalPollInterval, Blocked: true})
	task := e.get().Status.StagesStatus[0].BeforeStageTaskStatus[0]
	wantConds(t, "task", task.Conditions, taskCreated,
		cond{fleet.StageTaskConditionApprovalRequestApproved, "False", fleet.StageTaskApprovalIgnoredReason,
			"Approved condition ignored: its observedGeneration 0 does not match the approval request's generation 1; set observedGeneration: 1"})
	wantNotBound(t, e, "cluster-9")
	if a, _ := e.ar(name); find(a.Status.Conditions, fleet.ApprovalRequestConditionApprovalAccepted) != nil {
		t.Error("ignored approval was accepted")
	}
	e.approve(name)
	e.ok()
	wantConds(t, "task", e.get().Status.StagesStatus[0].BeforeStageTaskStatus[0].Conditions, taskCreated, taskApproved)
	wantBoundTo(t, e, "cluster-9")
}

// The explanation goes when the wrong condition goes.
func TestApprovalExplanationIsRemovedWithTheCondition(t *testing.T) {
	e := newEnv(t, "").fixture().create()
	e.ok()
	name := runName + "-before-stage1"
	e.approveAt(name, 0)
	e.ok()
	a, _ := e.ar(name)
	a.Status.Conditions = nil
	if err := e.h.ApplyApprovalRequestStatus(e.ctx, a); err != nil {
		t.Fatal(err)
	}
	e.ok()
	wantConds(t, "task", e.get().Status.StagesStatus[0].BeforeStageTaskStatus[0].Conditions, taskCreated)
}

// An edit of the approval request that was not taken (the feeder notes it
// on the request, as serve does for a file a commit broke) is reported on
// the task until the request is approved.
func TestARejectedApprovalFileIsReportedOnTheTask(t *testing.T) {
	e := newEnv(t, "").fixture().create()
	e.ok()
	name := runName + "-before-stage1"
	note := "approvals/" + name + ".yaml: not valid YAML; gitfleet wrote the request back"
	e.h.AnnotateApprovalRequest(hub.Key{Namespace: e.ns, Name: name}, fleet.RejectedChangeAnnotation, note)
	wantResult(t, "not approved", e.ok(), Result{RequeueAfter: ApprovalPollInterval, Blocked: true})
	wantConds(t, "task", e.get().Status.StagesStatus[0].BeforeStageTaskStatus[0].Conditions, taskCreated,
		cond{fleet.StageTaskConditionApprovalRequestApproved, "False", fleet.StageTaskApprovalIgnoredReason,
			"Approval request not taken: " + note})
	wantNotBound(t, e, "cluster-9")
	e.approve(name)
	e.ok()
	wantConds(t, "task", e.get().Status.StagesStatus[0].BeforeStageTaskStatus[0].Conditions, taskCreated, taskApproved)
	wantBoundTo(t, e, "cluster-9")
}

// Differences 4 and 7: a run without an index snapshots what the placement
// selects now, and the binding says which index it got.
func TestAutoSnapshotRunNamesTheIndexUsed(t *testing.T) {
	e := newEnv(t, "").small(1, fleet.StageConfig{})
	e.withSelection("v2") // differs from snapshot 0
	e.run.Spec.ResourceSnapshotIndex = ""
	e.create()
	e.ok()
	b := e.getBinding("cluster-0")
	if b.Spec.ResourceSnapshotName != placementName+"-1-snapshot" {
		t.Errorf("bound to %s", b.Spec.ResourceSnapshotName)
	}
	rs := find(b.Status.Conditions, fleet.ResourceBindingRolloutStarted)
	if want := fmt.Sprintf(RolloutStartedMessageFmt, "1", runName); rs == nil || rs.Message != want {
		t.Errorf("RolloutStarted %v, want message %q", rs, want)
	}
}

// Difference 6 for a wait that ends in the middle of a minute, and the
// requeue comes exactly when it ends.
func TestTimedWaitSaysWhenItEnds(t *testing.T) {
	e := newEnv(t, "").small(1, fleet.StageConfig{AfterStageTasks: []fleet.StageTask{timedWait(90 * time.Second)}}).create()
	e.ok()
	e.clk.Advance(7 * time.Second)
	e.available("cluster-0")
	wantResult(t, "waiting", e.ok(), Result{RequeueAfter: 90 * time.Second})
	end := e.clk.Now().Add(90 * time.Second)
	wantConds(t, "task", e.get().Status.StagesStatus[0].AfterStageTaskStatus[0].Conditions,
		cond{fleet.StageTaskConditionWaitTimeElapsed, "False", fleet.AfterStageTaskWaitTimeNotElapsedReason, "Wait time ends at " + end.Format(time.RFC3339)})
	e.clk.Advance(90 * time.Second)
	wantResult(t, "elapsed", e.ok(), Result{Requeue: true})
	wantConds(t, "task", e.get().Status.StagesStatus[0].AfterStageTaskStatus[0].Conditions, waitElapsed)
}

// Spec §9.1: deleting a run deletes its approval requests (only its own)
// and its metric series, whatever state it is in; bindings stay.
func TestDeletingARun(t *testing.T) {
	tests := []struct {
		name  string
		state func(e *env)
	}{
		{"without approval requests", func(e *env) {
			e.run.Spec.State = fleet.StateInitialize
			e.create()
			e.ok()
		}},
		{"while waiting for an approval", func(e *env) {
			e.create()
			e.ok()
		}},
		{"in flight", func(e *env) {
			e.create()
			e.ok()
			e.approve(runName + "-before-stage1")
			e.ok()
		}},
		{"failed", func(e *env) {
			e.create()
			e.ok()
			e.h.DeletePlacement(e.pkey())
			e.ok()
		}},
	}
	for _, f := range families {
		for _, tt := range tests {
			t.Run(f.name+"/"+tt.name, func(t *testing.T) {
				e := newEnv(t, f.ns).fixture()
				for _, n := range []string{runName + "-after-stage9", "another-run-before-stage1"} {
					target := runName
					if n[0] == 'a' {
						target = "another-run"
					}
					if err := e.h.CreateApprovalRequest(e.ctx, NewApprovalRequest(e.ns, n, target, "stage9", fleet.AfterStageTaskLabelValue)); err != nil {
						t.Fatal(err)
					}
				}
				tt.state(e)
				bound := e.getBinding("cluster-9").Spec.State
				e.h.DeleteUpdateRun(e.key())
				wantResult(t, "deleted", e.ok(), Result{})
				if _, err := e.h.GetUpdateRun(e.ctx, e.key()); !hub.IsNotFound(err) {
					t.Fatalf("run still there: %v", err)
				}
				left, _ := e.h.ListApprovalRequests(e.ctx, e.ns, nil)
				var names []string
				for _, a := range left {
					names = append(names, a.Name)
				}
				if !slices.Equal(names, []string{"another-run-before-stage1"}) {
					t.Errorf("approval requests left %v", names)
				}
				if !slices.Equal(e.rec.deleted, []string{e.ns + "/" + runName}) {
					t.Errorf("metric series deleted %v", e.rec.deleted)
				}
				if got := e.getBinding("cluster-9").Spec.State; got != bound {
					t.Errorf("binding changed from %s to %s", bound, got)
				}
				wantResult(t, "gone", e.ok(), Result{})
			})
		}
	}
}

// Spec §2.6: the TimedWait clock is the stage's Progressing
// lastTransitionTime, which Stop moves (Waiting → Stopping → Stopped) and
// resume does not (Stopped and Waiting are both False). So a Stop then Run
// during a soak restarts the soak from the Stop: the wait ends waitTime
// after the Stop, however long the run stayed stopped.
func TestStopThenRunDuringATimedWaitRestartsItFromTheStop(t *testing.T) {
	for _, tc := range []struct {
		name          string
		stoppedFor    time.Duration
		wantWaitAfter time.Duration // after the resume; 0: elapsed at once
	}{
		{"resumed within the wait", 30 * time.Second, 60 * time.Second},
		{"resumed after the wait", 2 * time.Minute, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "").small(1, fleet.StageConfig{AfterStageTasks: []fleet.StageTask{timedWait(90 * time.Second)}}).create()
			e.ok()
			e.available("cluster-0")
			wantResult(t, "soaking", e.ok(), Result{RequeueAfter: 90 * time.Second})

			e.clk.Advance(60 * time.Second) // 30s of the soak left
			e.setState(fleet.StateStop)
			e.ok()
			if p := e.get().Phase(); p != fleet.PhaseStopped {
				t.Fatalf("after Stop: phase %s, want Stopped", p)
			}
			e.clk.Advance(tc.stoppedFor)
			e.setState(fleet.StateRun)
			res := e.ok()
			task := e.get().Status.StagesStatus[0].AfterStageTaskStatus[0].Conditions
			if tc.wantWaitAfter == 0 {
				wantResult(t, "resumed", res, Result{Requeue: true})
				wantConds(t, "task", task, waitElapsed)
				return
			}
			wantResult(t, "resumed", res, Result{RequeueAfter: tc.wantWaitAfter})
			end := e.clk.Now().Add(tc.wantWaitAfter)
			wantConds(t, "task", task, cond{fleet.StageTaskConditionWaitTimeElapsed, "False", fleet.AfterStageTaskWaitTimeNotElapsedReason, "Wait time ends at " + end.Format(time.RFC3339)})
		})
	}
}
