package updaterun

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// Spec §9.6: the unit tables.

func TestMaxConcurrency(t *testing.T) {
	tests := []struct {
		mc       string
		clusters int
		want     int
		wantErr  bool
	}{
		{"3", 10, 3, false}, {"10", 10, 10, false}, {"15", 10, 15, false},
		{"50%", 10, 5, false}, {"10%", 1, 1, false}, {"33%", 10, 3, false},
		{"100%", 10, 10, false}, {"25%", 7, 1, false}, {"3", 0, 3, false},
		{"50%", 0, 1, false}, {"50", 10, 0, true},
	}
	for _, tt := range tests {
		mc := intOrStr(tt.mc)
		if tt.mc == "50" {
			v := intstr.FromString("50") // a string without %
			mc = &v
		}
		got, err := MaxConcurrency(mc, tt.clusters)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("MaxConcurrency(%s, %d) = %d, %v; want %d, error %v", tt.mc, tt.clusters, got, err, tt.want, tt.wantErr)
		}
	}
	if got, err := MaxConcurrency(nil, 10); got != 1 || err != nil {
		t.Errorf("nil maxConcurrency = %d, %v; want the default 1", got, err)
	}
}

func TestStuckClustersString(t *testing.T) {
	tests := []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"a"}, "a"},
		{[]string{"a", "b", "c"}, "a, b, c"},
		{[]string{"a", "b", "c", "d", "e"}, "a, b, c..."},
	}
	for _, tt := range tests {
		if got := StuckClustersString(tt.in); got != tt.want {
			t.Errorf("StuckClustersString(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFailureType(t *testing.T) {
	c := func(status metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Status: status, Reason: reason, Message: msg}
	}
	tests := []struct {
		name string
		cond metav1.Condition
		want string
	}{
		{"stuck", c("False", fleet.UpdateRunStuckReason, "x"), FailureTypeInternalError},
		{"failed by the user", c("False", fleet.UpdateRunFailedReason, userMsg("parent placement not found")), FailureTypeUserError},
		{"failed internally", c("False", fleet.UpdateRunFailedReason, "cannot continue the updateRun: the stage `s` has failed"), FailureTypeInternalError},
		{"init failed by the user", c("False", fleet.UpdateRunInitializeFailedReason, userMsg("x")), FailureTypeUserError},
		{"init failed internally", c("False", fleet.UpdateRunInitializeFailedReason, "x"), FailureTypeInternalError},
		{"waiting", c("False", fleet.UpdateRunWaitingReason, "x"), FailureTypeNone},
		{"stopping", c("Unknown", fleet.UpdateRunStoppingReason, "x"), FailureTypeNone},
		{"stopped", c("False", fleet.UpdateRunStoppedReason, "x"), FailureTypeNone},
		{"succeeded", c("True", fleet.UpdateRunSucceededReason, "x"), FailureTypeNone},
		{"progress stopped by failure", c("False", fleet.UpdateRunSucceededReason, "x"), FailureTypeNone},
	}
	for _, tt := range tests {
		if got := FailureType(tt.cond); got != tt.want {
			t.Errorf("%s: FailureType = %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestStripApprovalWaitTimes(t *testing.T) {
	StripApprovalWaitTimes(nil) // nil is safe
	s := &fleet.UpdateStrategySpec{Stages: []fleet.StageConfig{
		{Name: "a", BeforeStageTasks: []fleet.StageTask{{Type: fleet.StageTaskTypeApproval, WaitTime: dur(time.Minute)}},
			AfterStageTasks: []fleet.StageTask{{Type: fleet.StageTaskTypeApproval, WaitTime: dur(time.Minute)}, timedWait(time.Minute)}},
		{Name: "b", AfterStageTasks: []fleet.StageTask{timedWait(2 * time.Minute), {Type: fleet.StageTaskTypeApproval, WaitTime: dur(time.Hour)}}},
	}}
	StripApprovalWaitTimes(s)
	for _, st := range s.Stages {
		for _, task := range append(append([]fleet.StageTask{}, st.BeforeStageTasks...), st.AfterStageTasks...) {
			if (task.Type == fleet.StageTaskTypeApproval) != (task.WaitTime == nil) {
				t.Errorf("stage %s task %s waitTime %v", st.Name, task.Type, task.WaitTime)
			}
		}
	}
}

func TestClusterUpdateResult(t *testing.T) {
	c := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, ObservedGeneration: 1}
	}
	tests := []struct {
		name  string
		conds []metav1.Condition
		want  ClusterResult
	}{
		{"available", []metav1.Condition{c(fleet.ResourceBindingAvailable, "True", "x")}, ClusterUpdated},
		{"diff reported", []metav1.Condition{c(fleet.ResourceBindingDiffReported, "True", "x")}, ClusterUpdated},
		{"override failed", []metav1.Condition{c(fleet.ResourceBindingOverridden, "False", "OverriddenFailed")}, ClusterUpdateFailed},
		{"override pending", []metav1.Condition{c(fleet.ResourceBindingOverridden, "False", fleet.OverriddenPendingReason)}, ClusterUpdating},
		{"work not synchronized yet", []metav1.Condition{c(fleet.ResourceBindingWorkSynchronized, "False", fleet.WorkNotSynchronizedYetReason)}, ClusterUpdating},
		{"sync work failed", []metav1.Condition{c(fleet.ResourceBindingWorkSynchronized, "False", fleet.SyncWorkFailedReason)}, ClusterUpdateFailed},
		{"apply failed", []metav1.Condition{c(fleet.ResourceBindingApplied, "False", "ApplyFailed")}, ClusterUpdateFailed},
		{"apply pending", []metav1.Condition{c(fleet.ResourceBindingApplied, "False", fleet.ApplyPendingReason)}, ClusterUpdating},
		{"not available yet", []metav1.Condition{c(fleet.ResourceBindingAvailable, "False", fleet.ResourceNotAvailableYetReason)}, ClusterUpdating},
		{"diff not reported", []metav1.Condition{c(fleet.ResourceBindingDiffReported, "False", "x")}, ClusterUpdateFailed},
		{"works changed, not applied yet", []metav1.Condition{c(fleet.ResourceBindingApplied, "False", fleet.ApplyInProgressReason)}, ClusterUpdating},
		{"works changed, diff not reported yet", []metav1.Condition{c(fleet.ResourceBindingDiffReported, "False", fleet.DiffReportInProgressReason)}, ClusterUpdating},
		{"no conditions", nil, ClusterUpdating},
		{"available at an old generation", []metav1.Condition{{Type: fleet.ResourceBindingAvailable, Status: "True", ObservedGeneration: 0}}, ClusterUpdating},
	}
	for _, tt := range tests {
		b := &fleet.Binding{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Status: fleet.ResourceBindingStatus{Conditions: tt.conds}}
		if got := ClusterUpdateResult(b); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// passFor builds a pass over an in-memory run for the helpers below.
func passFor(e *env, run *fleet.UpdateRun) *pass {
	p := e.r.newPass(e.ctx, run)
	return p
}

func done(p *pass) []metav1.Condition {
	return []metav1.Condition{
		{Type: fleet.ClusterUpdatingConditionStarted, Status: "True", ObservedGeneration: p.gen},
		{Type: fleet.ClusterUpdatingConditionSucceeded, Status: "True", ObservedGeneration: p.gen}}
}

// TestProgressChecks covers validateClusterUpdatingStatus and
// validateDeleteStageStatus (spec §2.3 steps 5–7).
func TestProgressChecks(t *testing.T) {
	gen := int64(1)
	started := []metav1.Condition{{Type: fleet.ClusterUpdatingConditionStarted, Status: "True", ObservedGeneration: gen}}
	succ := append(append([]metav1.Condition{}, started...), metav1.Condition{Type: fleet.ClusterUpdatingConditionSucceeded, Status: "True", ObservedGeneration: gen})
	stageDoneC := []metav1.Condition{{Type: fleet.StageUpdatingConditionSucceeded, Status: "True", ObservedGeneration: gen}}
	stageProg := []metav1.Condition{{Type: fleet.StageUpdatingConditionProgressing, Status: "True", ObservedGeneration: gen}}
	stageFailed := []metav1.Condition{{Type: fleet.StageUpdatingConditionSucceeded, Status: "False", ObservedGeneration: gen, Message: "boom"}}
	cl := func(name string, conds []metav1.Condition) fleet.ClusterUpdatingStatus {
		return fleet.ClusterUpdatingStatus{ClusterName: name, Conditions: conds}
	}
	type stage struct {
		conds    []metav1.Condition
		clusters []fleet.ClusterUpdatingStatus
		maxConc  string
	}
	tests := []struct {
		name     string
		stages   []stage
		delConds []metav1.Condition
		toDelete []string
		want     int
		wantErr  string
	}{
		{name: "nothing started", stages: []stage{{}, {}}, want: 0},
		{name: "clusters without conditions in the updating stage are fine",
			stages: []stage{{conds: stageProg, clusters: []fleet.ClusterUpdatingStatus{cl("a", nil), cl("b", nil)}}, {}}, want: 0},
		{name: "second stage updating", stages: []stage{{conds: stageDoneC}, {conds: stageProg}}, want: 1},
		{name: "all done goes to the deletion stage", stages: []stage{{conds: stageDoneC}, {conds: stageDoneC}}, want: 2},
		{name: "deletion done", stages: []stage{{conds: stageDoneC}}, delConds: stageDoneC, want: -1},
		{name: "deletion failed", stages: []stage{{conds: stageDoneC}}, delConds: stageFailed, wantErr: "the delete stage has failed, err: boom"},
		{name: "too many in flight", stages: []stage{{conds: stageProg, maxConc: "1",
			clusters: []fleet.ClusterUpdatingStatus{cl("a", started), cl("b", started)}}},
			wantErr: "the number of updating clusters `2` in the updating stage `s0` exceeds maxConcurrency `1`"},
		{name: "finished stage with an unfinished cluster", stages: []stage{{conds: stageDoneC, clusters: []fleet.ClusterUpdatingStatus{cl("a", started)}}},
			wantErr: "cluster `a` in the finished stage `s0` has not succeeded"},
		{name: "finished after updating", stages: []stage{{conds: stageProg}, {conds: stageDoneC}},
			wantErr: "the finished stage `1` is after the updating stage `0`"},
		{name: "finished after a gap", stages: []stage{{}, {conds: stageDoneC}},
			wantErr: "the finished stage `s1` is not right after the last finished stage with index `-1`"},
		{name: "two updating", stages: []stage{{conds: stageProg}, {conds: stageProg}},
			wantErr: "the stage `s1` is updating, but there is already a stage with index `0` updating"},
		{name: "updating after a gap", stages: []stage{{}, {conds: stageProg}},
			wantErr: "the updating stage `s1` is not right after the last finished stage with index `-1`"},
		{name: "failed stage", stages: []stage{{conds: stageFailed}}, wantErr: "the stage `s0` has failed, err: boom"},
		{name: "deletion active while updating", stages: []stage{{conds: stageProg}}, delConds: stageProg,
			wantErr: "the delete stage is active, but there are still stages updating, updatingStageIndex: 0, lastFinishedStageIndex: -1"},
		{name: "new cluster to delete", stages: []stage{{}}, toDelete: []string{"x"},
			wantErr: "the cluster `x` to be deleted is not in the delete stage"},
		{name: "finished clusters ok", stages: []stage{{conds: stageDoneC, clusters: []fleet.ClusterUpdatingStatus{cl("a", succ)}}, {}}, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, "")
			run := &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: runName, Generation: gen}, Spec: fleet.UpdateRunSpec{State: fleet.StateRun}}
			strategy := &fleet.UpdateStrategySpec{}
			derived := &fleet.UpdateRunStatus{}
			for i, s := range tt.stages {
				name := "s" + string(rune('0'+i))
				cfg := fleet.StageConfig{Name: name}
				if s.maxConc != "" {
					cfg.MaxConcurrency = intOrStr(s.maxConc)
				}
				strategy.Stages = append(strategy.Stages, cfg)
				clusters := s.clusters
				if clusters == nil {
					clusters = []fleet.ClusterUpdatingStatus{}
				}
				run.Status.StagesStatus = append(run.Status.StagesStatus, fleet.StageUpdatingStatus{StageName: name, Conditions: s.conds, Clusters: clusters})
				names := make([]fleet.ClusterUpdatingStatus, len(clusters))
				for j := range clusters {
					names[j].ClusterName = clusters[j].ClusterName
				}
				derived.StagesStatus = append(derived.StagesStatus, fleet.StageUpdatingStatus{StageName: name, Clusters: names})
			}
			run.Status.StagedUpdateStrategySnapshot = strategy
			run.Status.DeletionStageStatus = &fleet.StageUpdatingStatus{StageName: fleet.UpdateRunDeleteStageName, Clusters: []fleet.ClusterUpdatingStatus{}, Conditions: tt.delConds}
			p := passFor(e, run)
			got, err := p.checkProgress(&plan{derived: derived, toDeleteClusters: tt.toDelete})
			if tt.wantErr != "" {
				if !isAborted(err) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want an abort containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

// TestApprovalRequestOfAnotherTargetAbortsTheRun: an existing request
// with the task's name but another stage or run is not ours.
func TestApprovalRequestOfAnotherTargetAbortsTheRun(t *testing.T) {
	tests := []struct{ name, run, stage string }{
		{"wrong stage", runName, "stage2"},
		{"wrong run", "other-run", "stage1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, "").fixture()
			ar := NewApprovalRequest("", runName+"-before-stage1", tt.run, tt.stage, fleet.BeforeStageTaskLabelValue)
			if err := e.h.CreateApprovalRequest(e.ctx, ar); err != nil {
				t.Fatal(err)
			}
			e.create()
			wantResult(t, "aborted", e.ok(), Result{Blocked: true, Ended: true})
			msg := "cannot continue the updateRun: unexpected behavior which cannot be handled by the controller: the approval request task `/test-run-before-stage1` is targeting update run `/" +
				tt.run + "` and stage `" + tt.stage + "`, want target update run `/test-run and stage `stage1`"
			run := e.get()
			wantConds(t, "run", run.Status.Conditions, runFailed(msg)...)
			wantConds(t, "stage1", run.Status.StagesStatus[0].Conditions,
				cond{fleet.StageUpdatingConditionProgressing, "False", fleet.StageUpdatingFailedReason, StageFailedProgMessage},
				cond{fleet.StageUpdatingConditionSucceeded, "False", fleet.StageUpdatingFailedReason, msg})
		})
	}
}

// failingAccept makes writing ApprovalAccepted fail.
type failingAccept struct{ hub.Hub }

func (failingAccept) UpdateApprovalRequestStatus(context.Context, *fleet.ApprovalRequest) error {
	return errors.New("injected write failure")
}

func TestFailingToAcceptAnApprovalIsRetried(t *testing.T) {
	e := newEnv(t, "").fixture().create()
	e.ok()
	e.approve(runName + "-before-stage1")
	e.r.Hub = failingAccept{e.h}
	if _, err := e.pass(); err == nil || isAborted(err) || !strings.Contains(err.Error(), "injected write failure") {
		t.Fatalf("err %v, want the retriable write failure", err)
	}
	wantConds(t, "before task", e.get().Status.StagesStatus[0].BeforeStageTaskStatus[0].Conditions, taskCreated)
	wantNotBound(t, e, "cluster-9")
	e.r.Hub = e.h
	e.ok()
	wantAccepted(t, e, runName+"-before-stage1")
	wantBoundTo(t, e, "cluster-9")
}

// TestStopDeletionStageCases: spec §9.6's stop cases for the deletion stage.
func TestStopDeletionStageCases(t *testing.T) {
	setup := func(t *testing.T) *env {
		e := newEnv(t, "").small(1, fleet.StageConfig{})
		e.member("gone", nil)
		e.binding("gone", 1, fleet.BindingStateUnscheduled)
		e.updateBinding("gone", func(b *fleet.Binding) { b.Finalizers = []string{testFinalizer} })
		e.create()
		e.ok()
		e.available("cluster-0")
		e.ok()
		return e
	}
	t.Run("a terminating binding keeps the stage stopping", func(t *testing.T) {
		e := setup(t)
		e.ok() // deletion starts; the binding is held
		e.setState(fleet.StateStop)
		wantResult(t, "stopping", e.ok(), Result{RequeueAfter: ClusterPollInterval})
		wantConds(t, "deletion stage", e.get().Status.DeletionStageStatus.Conditions, stageStopping)
	})
	t.Run("no binding left is stopped", func(t *testing.T) {
		e := setup(t)
		e.ok()
		e.updateBinding("gone", func(b *fleet.Binding) { b.Finalizers = nil })
		e.setState(fleet.StateStop)
		wantResult(t, "stopped", e.ok(), Result{Blocked: true})
		wantConds(t, "deletion stage", e.get().Status.DeletionStageStatus.Conditions, stageStopped)
		wantConds(t, "run", e.get().Status.Conditions, initOK, runStopped)
	})
	t.Run("a started cluster whose binding is not terminating aborts", func(t *testing.T) {
		e := setup(t)
		e.setState(fleet.StateStop)
		e.mutateStatus(func(st *fleet.UpdateRunStatus) {
			st.DeletionStageStatus.Clusters[0].Conditions = []metav1.Condition{{Type: fleet.ClusterUpdatingConditionStarted,
				Status: "True", ObservedGeneration: 2, Reason: fleet.ClusterUpdatingStartedReason, LastTransitionTime: metav1.NewTime(start)}}
		})
		wantResult(t, "aborted", e.ok(), Result{Blocked: true, Ended: true})
		msg := "cannot continue the updateRun: unexpected behavior which cannot be handled by the controller: the cluster `gone` in the deleting stage is marked as deleting but its corresponding binding is not deleting"
		run := e.get()
		wantConds(t, "run", run.Status.Conditions, runFailed(msg)...)
		wantConds(t, "deletion stage", run.Status.DeletionStageStatus.Conditions,
			cond{fleet.StageUpdatingConditionProgressing, "False", fleet.StageUpdatingFailedReason, StageFailedProgMessage},
			cond{fleet.StageUpdatingConditionSucceeded, "False", fleet.StageUpdatingFailedReason, msg})
	})
}
