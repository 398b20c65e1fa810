package updaterun

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// small installs a fleet of n clusters (cluster-0..n-1, PickN(n)) with no
// unscheduled cluster and a one-stage strategy selecting all of them.
func (e *env) small(n int, stage fleet.StageConfig) *env {
	for i := 0; i < n; i++ {
		e.member(fmt.Sprintf("cluster-%d", i), map[string]string{"group": "prod", "index": fmt.Sprint(i)})
	}
	e.placement(func(p *fleet.Placement) { p.Spec.Policy = pickN(n) })
	e.policySnapshot(1, true, pickN(n), true)
	for i := 0; i < n; i++ {
		e.binding(fmt.Sprintf("cluster-%d", i), 1, fleet.BindingStateScheduled)
	}
	e.resourceSnapshot(0, true, "hash-0")
	if stage.Name == "" {
		stage.Name = "stage1"
	}
	if stage.LabelSelector == nil {
		stage.LabelSelector = &metav1.LabelSelector{}
	}
	e.strategy(fleet.UpdateStrategySpec{Stages: []fleet.StageConfig{stage}})
	return e
}

func preemptionMessage(e *env, cluster, stage string) string {
	ref := bindingName(cluster)
	if e.ns != "" {
		ref = e.ns + "/" + ref
	}
	return "cannot continue the updateRun: failed to process the request due to a client error: the binding of the updating cluster `" +
		cluster + "` in the stage `" + stage + "` is not up-to-date with the desired status, please check the status of binding `" + ref +
		"` and see if there is a concurrent updateRun referencing the same placement and updating the same cluster"
}

// TestStuckClusterThenPreemptionAbortsTheRun is spec §9.4 12–13.
func TestStuckClusterThenPreemptionAbortsTheRun(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			e := newEnv(t, f.ns).fixture().create()
			e.r.StuckThreshold = time.Second
			e.ok()
			e.approve(runName + "-before-stage1")
			e.ok()
			e.setBindingCondition("cluster-9", fleet.ResourceBindingApplied, metav1.ConditionFalse, "ApplyFailed")
			e.clk.Advance(2 * time.Second)
			for i := 0; i < 2; i++ {
				res, err := e.pass()
				if err == nil || isAborted(err) || !strings.Contains(err.Error(), "the cluster updating encountered an error at stage `stage1`, updateRun := `test-run`") {
					t.Fatalf("pass %d: err %v, want the retriable cluster error", i, err)
				}
				if !res.Blocked {
					t.Errorf("a stuck run is blocked: %+v", res)
				}
				run := e.get()
				wantConds(t, "run", run.Status.Conditions, initOK, cond{fleet.StagedUpdateRunConditionProgressing, "False", fleet.UpdateRunStuckReason,
					"The updateRun is stuck waiting for cluster-9 cluster(s) in stage stage1 to finish updating, please check placement status for potential errors"})
				wantClusterStates(t, "stage1", run.Status.StagesStatus[0], "started", "", "", "", "")
				if got := e.rec.last(); got != "Run/Progressing/False/UpdateRunStuck/internal_error" {
					t.Errorf("metric %s", got)
				}
			}

			// Another writer takes the binding back: the run is preempted.
			e.updateBinding("cluster-9", func(b *fleet.Binding) { b.Spec.State = fleet.BindingStateScheduled })
			wantResult(t, "preempted", e.ok(), Result{Blocked: true, Ended: true})
			run := e.get()
			msg := preemptionMessage(e, "cluster-9", "stage1")
			wantConds(t, "run", run.Status.Conditions, runFailed(msg)...)
			s1 := run.Status.StagesStatus[0]
			wantConds(t, "stage1", s1.Conditions,
				cond{fleet.StageUpdatingConditionProgressing, "False", fleet.StageUpdatingFailedReason, StageFailedProgMessage},
				cond{fleet.StageUpdatingConditionSucceeded, "False", fleet.StageUpdatingFailedReason, msg})
			wantConds(t, "cluster-9", s1.Clusters[0].Conditions, clusterStarted,
				cond{fleet.ClusterUpdatingConditionSucceeded, "False", fleet.ClusterUpdatingFailedReason,
					strings.TrimPrefix(msg, "cannot continue the updateRun: ")})
			if s1.EndTime == nil {
				t.Error("failed stage has no end time")
			}
			if got := e.rec.last(); got != "Run/Succeeded/False/UpdateRunFailed/user_error" {
				t.Errorf("metric %s", got)
			}
			// Failed runs never resume.
			e.setState(fleet.StateStop)
			e.setState(fleet.StateRun)
			wantResult(t, "after failure", e.ok(), Result{Blocked: true, Ended: true})
			wantNotBound(t, e, "cluster-7")
		})
	}
}

// TestEmptyStageIsSkippedWithItsTasks is spec §9.4 14 (and §3.10).
func TestEmptyStageIsSkippedWithItsTasks(t *testing.T) {
	e := newEnv(t, "").fixture()
	e.strategy(fleet.UpdateStrategySpec{Stages: []fleet.StageConfig{
		{Name: "stage1", LabelSelector: &metav1.LabelSelector{}, SortingLabelKey: strptr("index"),
			AfterStageTasks: []fleet.StageTask{approval()}},
		{Name: "stage2", BeforeStageTasks: []fleet.StageTask{approval()},
			AfterStageTasks: []fleet.StageTask{timedWait(10 * time.Second), approval()}},
	}})
	e.create()
	wantResult(t, "first pass", e.ok(), Result{RequeueAfter: ClusterPollInterval})
	all := []string{"cluster-9", "cluster-8", "cluster-7", "cluster-6", "cluster-5", "cluster-4", "cluster-3", "cluster-2", "cluster-1", "cluster-0"}
	run := e.get()
	if got := clusterNames(run.Status.StagesStatus[0]); !slices.Equal(got, all) {
		t.Fatalf("stage1 clusters %v", got)
	}
	if got := run.Status.StagesStatus[1].Clusters; got == nil || len(got) != 0 {
		t.Errorf("stage2 clusters %v, want []", got)
	}
	rollStage(t, e, 0, all)
	wantConds(t, "stage1", e.get().Status.StagesStatus[0].Conditions, stageWaitPost)
	e.approve(runName + "-after-stage1")
	wantResult(t, "stage1 done", e.ok(), Result{Requeue: true})
	e.clk.Advance(time.Second)
	wantResult(t, "skip", e.ok(), Result{Requeue: true})
	s2 := e.get().Status.StagesStatus[1]
	wantConds(t, "stage2", s2.Conditions, stageSkipped...)
	if s2.StartTime == nil || s2.EndTime == nil || !s2.StartTime.Equal(s2.EndTime) {
		t.Errorf("skipped stage times %v %v", s2.StartTime, s2.EndTime)
	}
	wantConds(t, "stage2 before task", s2.BeforeStageTaskStatus[0].Conditions)
	wantConds(t, "stage2 timed wait", s2.AfterStageTaskStatus[0].Conditions)
	wantConds(t, "stage2 after approval", s2.AfterStageTaskStatus[1].Conditions)
	for _, n := range []string{runName + "-before-stage2", runName + "-after-stage2"} {
		if _, ok := e.ar(n); ok {
			t.Errorf("approval request %s created for a skipped stage", n)
		}
	}
	e.ok() // deletion stage deletes the three bindings
	wantResult(t, "succeeded", e.ok(), Result{Blocked: true, Ended: true})
	wantConds(t, "run", e.get().Status.Conditions, runSucceeded...)
}

// TestSingleStageVariants is spec §9.4 15–18: one stage of three clusters
// with no task, a before approval, an after TimedWait, an after approval.
func TestSingleStageVariants(t *testing.T) {
	clusters := []string{"cluster-0", "cluster-1", "cluster-2"}
	tests := []struct {
		name   string
		before []fleet.StageTask
		after  []fleet.StageTask
	}{
		{name: "no tasks start at once"},
		{name: "before approval gates the stage", before: []fleet.StageTask{approval()}},
		{name: "after timed wait delays completion", after: []fleet.StageTask{timedWait(4 * time.Second)}},
		{name: "after approval gates completion", after: []fleet.StageTask{approval()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, "").small(3, fleet.StageConfig{BeforeStageTasks: tt.before, AfterStageTasks: tt.after}).create()
			res := e.ok()
			if tt.before != nil {
				wantResult(t, "before approval", res, Result{RequeueAfter: ApprovalPollInterval, Blocked: true})
				wantAR(t, e, runName+"-before-stage1", "stage1", fleet.BeforeStageTaskLabelValue)
				for _, c := range clusters {
					wantNotBound(t, e, c)
				}
				e.approve(runName + "-before-stage1")
				e.ok()
			}
			rollStage(t, e, 0, clusters)
			switch {
			case len(tt.after) == 0:
			case tt.after[0].Type == fleet.StageTaskTypeTimedWait:
				// The last completion pass started the wait.
				e.clk.Advance(3 * time.Second)
				wantResult(t, "waiting", e.ok(), Result{RequeueAfter: time.Second})
				wantConds(t, "stage1", e.get().Status.StagesStatus[0].Conditions, stageWaitPost)
				e.clk.Advance(time.Second)
				wantResult(t, "wait over", e.ok(), Result{Requeue: true})
			default:
				wantResult(t, "approval pending", e.ok(), Result{RequeueAfter: ApprovalPollInterval, Blocked: true})
				e.approve(runName + "-after-stage1")
				wantResult(t, "approved", e.ok(), Result{Requeue: true})
				wantAccepted(t, e, runName+"-after-stage1")
			}
			wantResult(t, "deletion stage", e.ok(), Result{Blocked: true, Ended: true})
			run := e.get()
			wantConds(t, "run", run.Status.Conditions, runSucceeded...)
			wantConds(t, "stage1", run.Status.StagesStatus[0].Conditions, stageDone...)
			wantConds(t, "deletion stage", run.Status.DeletionStageStatus.Conditions, stageDone...)
			if d := run.Status.DeletionStageStatus.Clusters; d == nil || len(d) != 0 {
				t.Errorf("deletion stage clusters %v, want []", d)
			}
		})
	}
}

// TestReportDiff is spec §9.4 19–20: with the ReportDiff apply strategy a
// cluster is done when its diff is reported; DiffReported=False is stuck,
// never failed.
func TestReportDiff(t *testing.T) {
	setup := func(t *testing.T) *env {
		e := newEnv(t, "").small(2, fleet.StageConfig{})
		e.placement(func(p *fleet.Placement) {
			p.Spec.Policy = pickN(2)
			p.Spec.Strategy.ApplyStrategy = &fleet.ApplyStrategy{Type: fleet.ApplyStrategyTypeReportDiff}
		})
		return e.create()
	}
	t.Run("diff reported succeeds", func(t *testing.T) {
		e := setup(t)
		e.ok()
		if got := e.get().Status.AppliedStrategy.Type; got != fleet.ApplyStrategyTypeReportDiff {
			t.Errorf("applied strategy %s", got)
		}
		for _, c := range []string{"cluster-0", "cluster-1"} {
			if got := e.getBinding(c).Spec.ApplyStrategy.Type; got != fleet.ApplyStrategyTypeReportDiff {
				t.Errorf("binding apply strategy %s", got)
			}
			e.setBindingCondition(c, fleet.ResourceBindingDiffReported, metav1.ConditionTrue, "DiffReported")
			e.ok()
		}
		e.ok()
		wantConds(t, "run", e.get().Status.Conditions, runSucceeded...)
	})
	t.Run("diff not reported is stuck", func(t *testing.T) {
		e := setup(t)
		e.r.StuckThreshold = time.Second
		e.ok()
		e.setBindingCondition("cluster-0", fleet.ResourceBindingDiffReported, metav1.ConditionFalse, "FailedToReportDiff")
		e.clk.Advance(2 * time.Second)
		if _, err := e.pass(); err == nil || isAborted(err) {
			t.Fatalf("err %v, want a retriable error", err)
		}
		run := e.get()
		wantConds(t, "run", run.Status.Conditions, initOK, cond{fleet.StagedUpdateRunConditionProgressing, "False", fleet.UpdateRunStuckReason, "~cluster-0 cluster(s) in stage stage1"})
		wantClusterStates(t, "stage1", run.Status.StagesStatus[0], "started", "")
	})
}

// TestDeletedApprovalRequestIsRecreatedOnlyBeforeApproval is spec §9.4 21.
func TestDeletedApprovalRequestIsRecreatedOnlyBeforeApproval(t *testing.T) {
	e := newEnv(t, "").small(2, fleet.StageConfig{
		BeforeStageTasks: []fleet.StageTask{approval()},
		AfterStageTasks:  []fleet.StageTask{approval(), timedWait(90 * time.Second)},
	}).create()
	before, after := runName+"-before-stage1", runName+"-after-stage1"
	e.ok()
	if err := e.h.DeleteApprovalRequest(e.ctx, e.arKey(before)); err != nil {
		t.Fatal(err)
	}
	e.ok()
	wantAR(t, e, before, "stage1", fleet.BeforeStageTaskLabelValue)
	e.approve(before)
	e.ok()
	run := e.get()
	wantConds(t, "stage1", run.Status.StagesStatus[0].Conditions, stageStarted)
	wantClusterStates(t, "stage1", run.Status.StagesStatus[0], "started", "")
	if err := e.h.DeleteApprovalRequest(e.ctx, e.arKey(before)); err != nil {
		t.Fatal(err)
	}
	rollStage(t, e, 0, []string{"cluster-0", "cluster-1"})
	if _, ok := e.ar(before); ok {
		t.Error("an approved request was recreated")
	}
	wantAR(t, e, after, "stage1", fleet.AfterStageTaskLabelValue)
	if err := e.h.DeleteApprovalRequest(e.ctx, e.arKey(after)); err != nil {
		t.Fatal(err)
	}
	e.ok()
	wantAR(t, e, after, "stage1", fleet.AfterStageTaskLabelValue)
	e.approve(after)
	wantResult(t, "approved, waiting", e.ok(), Result{RequeueAfter: 90 * time.Second})
	if err := e.h.DeleteApprovalRequest(e.ctx, e.arKey(after)); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(89 * time.Second)
	wantResult(t, "still waiting", e.ok(), Result{RequeueAfter: time.Second})
	if _, ok := e.ar(after); ok {
		t.Error("an approved request was recreated")
	}
	s := e.get().Status.StagesStatus[0]
	if c := find(s.AfterStageTaskStatus[1].Conditions, fleet.StageTaskConditionWaitTimeElapsed); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("wait elapsed early: %v", c)
	}
	e.clk.Advance(time.Second)
	wantResult(t, "wait over", e.ok(), Result{Requeue: true})
	e.ok()
	wantConds(t, "run", e.get().Status.Conditions, runSucceeded...)
}

// TestInitializeThenRun is spec §9.4 22: Initialize only plans; switching to
// Run (generation 2) starts execution with every condition re-stamped.
func TestInitializeThenRun(t *testing.T) {
	e := newEnv(t, "").fixture()
	e.run.Spec.State = fleet.StateInitialize
	e.create()
	for i := 0; i < 2; i++ {
		wantResult(t, "initialize", e.ok(), Result{Blocked: true})
		run := e.get()
		wantConds(t, "run", run.Status.Conditions, initOK)
		for _, s := range run.Status.StagesStatus {
			wantConds(t, s.StageName, s.Conditions)
		}
		wantConds(t, "deletion stage", run.Status.DeletionStageStatus.Conditions)
		wantNotBound(t, e, "cluster-9")
		if _, ok := e.ar(runName + "-before-stage1"); ok {
			t.Error("approval request created in Initialize")
		}
	}
	e.setState(fleet.StateRun)
	wantResult(t, "run", e.ok(), Result{RequeueAfter: ApprovalPollInterval, Blocked: true})
	run := e.get()
	if run.Generation != 2 {
		t.Fatalf("generation %d", run.Generation)
	}
	wantConds(t, "run", run.Status.Conditions, initOK, runWaiting("before-stage", "stage1"))
	for _, c := range run.Status.Conditions {
		if c.ObservedGeneration != 2 {
			t.Errorf("%s observed generation %d", c.Type, c.ObservedGeneration)
		}
	}
	for _, want := range []string{"Initialize/Initialized/True/UpdateRunInitializedSuccessfully/none", "Run/Progressing/False/UpdateRunWaiting/none"} {
		if !slices.Contains(e.rec.statuses, want) {
			t.Errorf("metric %s not recorded: %v", want, e.rec.statuses)
		}
	}
}
