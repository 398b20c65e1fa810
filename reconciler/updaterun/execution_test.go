package updaterun

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// wantClusterStates checks each cluster of a stage: "" not started,
// "started", "done", "failed".
func wantClusterStates(t *testing.T, where string, s fleet.StageUpdatingStatus, states ...string) {
	t.Helper()
	if len(s.Clusters) != len(states) {
		t.Fatalf("%s: %d clusters, want %d", where, len(s.Clusters), len(states))
	}
	for i, st := range states {
		c := s.Clusters[i]
		at := fmt.Sprintf("%s cluster %s", where, c.ClusterName)
		switch st {
		case "":
			wantConds(t, at, c.Conditions)
		case "started":
			wantConds(t, at, c.Conditions, clusterStarted)
		case "done":
			wantConds(t, at, c.Conditions, clusterStarted, clusterDone)
		case "failed":
			wantConds(t, at, c.Conditions, clusterStarted,
				cond{fleet.ClusterUpdatingConditionSucceeded, "False", fleet.ClusterUpdatingFailedReason, ""})
		}
	}
}

func wantResult(t *testing.T, where string, got, want Result) {
	t.Helper()
	if got != want {
		t.Errorf("%s: result %+v, want %+v", where, got, want)
	}
}

func wantBoundTo(t *testing.T, e *env, cluster string) {
	t.Helper()
	b := e.getBinding(cluster)
	if b.Spec.State != fleet.BindingStateBound || b.Spec.ResourceSnapshotName != placementName+"-0-snapshot" {
		t.Errorf("binding of %s: state %s snapshot %q, want Bound %s-0-snapshot", cluster, b.Spec.State, b.Spec.ResourceSnapshotName, placementName)
	}
	if !deepEqual(b.Spec.ApplyStrategy, fleet.DefaultApplyStrategy(nil)) {
		t.Errorf("binding of %s: apply strategy %+v", cluster, b.Spec.ApplyStrategy)
	}
	if b.Spec.ResourceOverrideSnapshots != nil || b.Spec.ClusterResourceOverrideSnapshots != nil {
		t.Errorf("binding of %s: override snapshots recorded, gitfleet has none", cluster)
	}
	rs := find(b.Status.Conditions, fleet.ResourceBindingRolloutStarted)
	if !isTrue(rs, b.Generation) || rs.Reason != fleet.RolloutStartedReason ||
		rs.Message != fmt.Sprintf(RolloutStartedMessageFmt, "0", runName) {
		t.Errorf("binding of %s: RolloutStarted %+v at generation %d", cluster, rs, b.Generation)
	}
}

func wantNotBound(t *testing.T, e *env, cluster string) {
	t.Helper()
	b := e.getBinding(cluster)
	if b.Spec.State == fleet.BindingStateBound || find(b.Status.Conditions, fleet.ResourceBindingRolloutStarted) != nil {
		t.Errorf("binding of %s was touched: state %s conditions%s", cluster, b.Spec.State, condsString(b.Status.Conditions))
	}
}

func wantAR(t *testing.T, e *env, name, stage, taskType string) *fleet.ApprovalRequest {
	t.Helper()
	a, ok := e.ar(name)
	if !ok {
		t.Fatalf("approval request %s does not exist", name)
	}
	if a.Spec.TargetUpdateRun != runName || a.Spec.TargetStage != stage {
		t.Errorf("approval request %s spec %+v", name, a.Spec)
	}
	want := map[string]string{
		fleet.TargetUpdatingStageNameLabel: stage, fleet.TargetUpdateRunLabel: runName,
		fleet.TaskTypeLabel: taskType, fleet.IsLatestUpdateRunApprovalLabel: "true",
	}
	if !deepEqual(a.Labels, want) {
		t.Errorf("approval request %s labels %v, want %v", name, a.Labels, want)
	}
	if a.Namespace != e.ns || a.Kind != fleet.ApprovalRequestKind(e.ns) {
		t.Errorf("approval request %s is %s in %q", name, a.Kind, e.ns)
	}
	return a
}

func wantAccepted(t *testing.T, e *env, name string) {
	t.Helper()
	a, _ := e.ar(name)
	wantConds(t, name, a.Status.Conditions,
		cond{fleet.ApprovalRequestConditionApproved, "True", fleet.ClusterApprovalRequestApprovedReason, ""},
		cond{fleet.ApprovalRequestConditionApprovalAccepted, "True", fleet.ApprovalRequestApprovalAcceptedReason, ApprovalAcceptedMessage})
	if c := find(a.Status.Conditions, fleet.ApprovalRequestConditionApprovalAccepted); c.ObservedGeneration != a.Generation {
		t.Errorf("%s: ApprovalAccepted observed generation %d, want %d", name, c.ObservedGeneration, a.Generation)
	}
}

// rollStage makes each cluster of the running stage available in turn;
// with maxConcurrency 1 every completion starts the next cluster.
func rollStage(t *testing.T, e *env, idx int, clusters []string) {
	t.Helper()
	for i, c := range clusters {
		wantBoundTo(t, e, c)
		states := make([]string, len(clusters))
		for j := range states {
			switch {
			case j < i:
				states[j] = "done"
			case j == i:
				states[j] = "started"
			}
		}
		wantClusterStates(t, fmt.Sprintf("before %s is available", c), e.get().Status.StagesStatus[idx], states...)
		if i+1 < len(clusters) {
			wantNotBound(t, e, clusters[i+1])
		}
		e.available(c)
		e.ok()
	}
}

var (
	stage1Clusters   = []string{"cluster-9", "cluster-7", "cluster-5", "cluster-3", "cluster-1"}
	stage2Clusters   = []string{"cluster-0", "cluster-2", "cluster-4", "cluster-6", "cluster-8"}
	deletionClusters = []string{"unscheduled-cluster-0", "unscheduled-cluster-1", "unscheduled-cluster-2"}
)

// TestRunRollsOutStageByStageWithApprovalsAndWaits is spec §9.4 1–11.
func TestRunRollsOutStageByStageWithApprovalsAndWaits(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			e := newEnv(t, f.ns).fixture().create()

			// 1. Initialized, waiting for the before-stage approval of stage1.
			wantResult(t, "first pass", e.ok(), Result{RequeueAfter: ApprovalPollInterval, Blocked: true})
			run := e.get()
			if !controllerutil.ContainsFinalizer(run, fleet.UpdateRunFinalizer) {
				t.Errorf("finalizers %v", run.Finalizers)
			}
			wantConds(t, "run", run.Status.Conditions, initOK, runWaiting("before-stage", "stage1"))
			if got := clusterNames(run.Status.StagesStatus[0]); !slices.Equal(got, stage1Clusters) {
				t.Errorf("stage1 clusters %v", got)
			}
			if got := clusterNames(run.Status.StagesStatus[1]); !slices.Equal(got, stage2Clusters) {
				t.Errorf("stage2 clusters %v", got)
			}
			if got := clusterNames(*run.Status.DeletionStageStatus); !slices.Equal(got, deletionClusters) {
				t.Errorf("deletion stage clusters %v", got)
			}
			if run.Status.PolicySnapshotIndexUsed != "1" || run.Status.PolicyObservedClusterCount != 10 || run.Status.ResourceSnapshotIndexUsed != "0" {
				t.Errorf("recorded policy %q/%d resource %q", run.Status.PolicySnapshotIndexUsed, run.Status.PolicyObservedClusterCount, run.Status.ResourceSnapshotIndexUsed)
			}
			s1 := run.Status.StagesStatus[0]
			wantConds(t, "stage1", s1.Conditions, stageWaitPre)
			wantConds(t, "stage1 before task", s1.BeforeStageTaskStatus[0].Conditions, taskCreated)
			if s1.BeforeStageTaskStatus[0].ApprovalRequestName != runName+"-before-stage1" ||
				s1.AfterStageTaskStatus[1].ApprovalRequestName != runName+"-after-stage1" ||
				s1.AfterStageTaskStatus[0].ApprovalRequestName != "" {
				t.Errorf("stage1 task names %+v %+v", s1.BeforeStageTaskStatus, s1.AfterStageTaskStatus)
			}
			wantAR(t, e, runName+"-before-stage1", "stage1", fleet.BeforeStageTaskLabelValue)
			if got := e.rec.last(); got != "Run/Progressing/False/UpdateRunWaiting/none" {
				t.Errorf("metric %s", got)
			}

			// 2. Nothing moves while unapproved.
			e.clk.Advance(time.Minute)
			wantResult(t, "unapproved", e.ok(), Result{RequeueAfter: ApprovalPollInterval, Blocked: true})
			wantNotBound(t, e, "cluster-9")
			if e.get().Status.StagesStatus[0].StartTime != nil {
				t.Error("stage1 started before approval")
			}

			// 3–4. Approval accepted, cluster-9 bound and started.
			e.approve(runName + "-before-stage1")
			wantResult(t, "approved", e.ok(), Result{RequeueAfter: ClusterPollInterval})
			wantAccepted(t, e, runName+"-before-stage1")
			run = e.get()
			s1 = run.Status.StagesStatus[0]
			wantConds(t, "stage1 before task", s1.BeforeStageTaskStatus[0].Conditions, taskCreated, taskApproved)
			wantConds(t, "stage1", s1.Conditions, stageStarted)
			wantConds(t, "run", run.Status.Conditions, initOK, runProgressing)
			if s1.StartTime == nil || !s1.StartTime.Time.Equal(e.clk.Now()) {
				t.Errorf("stage1 start time %v", s1.StartTime)
			}
			if e.rec.approvals[fleet.BeforeStageTaskLabelValue] != 1 {
				t.Errorf("approval latency observations %v", e.rec.approvals)
			}

			// 5–6. One cluster at a time; the last completion makes the stage wait.
			rollStage(t, e, 0, stage1Clusters)
			run = e.get()
			s1 = run.Status.StagesStatus[0]
			wantClusterStates(t, "stage1", s1, "done", "done", "done", "done", "done")
			wantConds(t, "stage1", s1.Conditions, stageWaitPost)
			wantConds(t, "run", run.Status.Conditions, initOK, runWaiting("after-stage", "stage1"))
			waitEnds := e.clk.Now().Add(4 * time.Second).UTC().Format(time.RFC3339)
			wantConds(t, "stage1 timed wait", s1.AfterStageTaskStatus[0].Conditions,
				cond{fleet.StageTaskConditionWaitTimeElapsed, "False", fleet.AfterStageTaskWaitTimeNotElapsedReason, "Wait time ends at " + waitEnds})
			wantConds(t, "stage1 after approval", s1.AfterStageTaskStatus[1].Conditions, taskCreated)
			wantAR(t, e, runName+"-after-stage1", "stage1", fleet.AfterStageTaskLabelValue)

			// 7. Approved before the wait elapsed: the stage still waits.
			e.approve(runName + "-after-stage1")
			e.clk.Advance(time.Second)
			wantResult(t, "approved, waiting", e.ok(), Result{RequeueAfter: 3 * time.Second})
			s1 = e.get().Status.StagesStatus[0]
			wantConds(t, "stage1", s1.Conditions, stageWaitPost)
			wantConds(t, "stage1 after approval", s1.AfterStageTaskStatus[1].Conditions, taskCreated, taskApproved)
			e.clk.Advance(3 * time.Second)
			wantResult(t, "wait elapsed", e.ok(), Result{Requeue: true})
			run = e.get()
			s1 = run.Status.StagesStatus[0]
			wantConds(t, "stage1", s1.Conditions, stageDone...)
			wantConds(t, "stage1 timed wait", s1.AfterStageTaskStatus[0].Conditions, waitElapsed)
			if s1.EndTime == nil {
				t.Error("stage1 has no end time")
			}
			wantConds(t, "run", run.Status.Conditions, initOK, runProgressing)
			if e.rec.durations != 1 {
				t.Errorf("stage durations observed %d", e.rec.durations)
			}

			// 8. stage2 waits for its before-stage approval.
			wantResult(t, "stage2 before", e.ok(), Result{RequeueAfter: ApprovalPollInterval, Blocked: true})
			run = e.get()
			wantConds(t, "run", run.Status.Conditions, initOK, runWaiting("before-stage", "stage2"))
			wantConds(t, "stage2", run.Status.StagesStatus[1].Conditions, stageWaitPre)
			wantAR(t, e, runName+"-before-stage2", "stage2", fleet.BeforeStageTaskLabelValue)
			wantNotBound(t, e, "cluster-0")
			if run.Status.StagesStatus[1].StartTime != nil {
				t.Error("stage2 started before approval")
			}

			// 9. stage2 one by one.
			e.approve(runName + "-before-stage2")
			e.ok()
			rollStage(t, e, 1, stage2Clusters)
			s2 := e.get().Status.StagesStatus[1]
			wantConds(t, "stage2", s2.Conditions, stageWaitPost)
			wantConds(t, "stage2 after approval", s2.AfterStageTaskStatus[0].Conditions, taskCreated)

			// 10. [Approval, TimedWait] done → deletion stage starts.
			e.approve(runName + "-after-stage2")
			e.clk.Advance(4 * time.Second)
			wantResult(t, "stage2 done", e.ok(), Result{Requeue: true})
			wantConds(t, "stage2", e.get().Status.StagesStatus[1].Conditions, stageDone...)
			wantAccepted(t, e, runName+"-after-stage2")
			if e.rec.approvals[fleet.BeforeStageTaskLabelValue] != 2 || e.rec.approvals[fleet.AfterStageTaskLabelValue] != 2 {
				t.Errorf("approval latency observations %v", e.rec.approvals)
			}
			wantResult(t, "deletion stage", e.ok(), Result{RequeueAfter: ClusterPollInterval})
			run = e.get()
			wantConds(t, "run", run.Status.Conditions, initOK, runProgressing)
			wantConds(t, "deletion stage", run.Status.DeletionStageStatus.Conditions, stageStarted)
			wantClusterStates(t, "deletion stage", *run.Status.DeletionStageStatus, "started", "started", "started")

			// 11. Bindings gone → deletion stage and run succeed.
			for _, c := range deletionClusters {
				if e.bindingExists(c) {
					t.Errorf("binding of %s not deleted", c)
				}
			}
			wantResult(t, "succeeded", e.ok(), Result{Blocked: true, Ended: true})
			run = e.get()
			wantConds(t, "run", run.Status.Conditions, runSucceeded...)
			wantConds(t, "deletion stage", run.Status.DeletionStageStatus.Conditions, stageDone...)
			wantClusterStates(t, "deletion stage", *run.Status.DeletionStageStatus, "done", "done", "done")
			if e.rec.durations != 2 {
				t.Errorf("stage durations observed %d, want 2", e.rec.durations)
			}
			for _, want := range []string{"Run/Progressing/False/UpdateRunWaiting/none", "Run/Progressing/True/UpdateRunProgressing/none"} {
				if !slices.Contains(e.rec.statuses, want) {
					t.Errorf("metric %s not recorded: %v", want, e.rec.statuses)
				}
			}
			if got := e.rec.last(); got != "Run/Succeeded/True/UpdateRunSucceeded/none" {
				t.Errorf("last metric %s", got)
			}
			// Terminal: further passes change nothing.
			before := e.get()
			wantResult(t, "after success", e.ok(), Result{Blocked: true, Ended: true})
			if e.get().ResourceVersion != before.ResourceVersion {
				t.Error("a finished run was written again")
			}
		})
	}
}
