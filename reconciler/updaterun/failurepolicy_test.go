package updaterun

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// budgetEnv is small(n) with a stage of maxConcurrency maxConc and
// maxAllowedClusterFailures stageBudget ("" for none), and a run with a
// failure policy of runBudget ("" for the default) and a 5-minute wait.
func budgetEnv(t *testing.T, ns string, n int, maxConc, runBudget, stageBudget string) *env {
	stage := fleet.StageConfig{MaxConcurrency: intOrStr(maxConc)}
	if stageBudget != "" {
		stage.MaxAllowedClusterFailures = intOrStr(stageBudget)
	}
	e := newEnv(t, ns).small(n, stage)
	five := int32(5)
	e.run.Spec.FailurePolicy = &fleet.FailurePolicy{MaxWaitTimePerClusterMinutes: &five}
	if runBudget != "" {
		e.run.Spec.FailurePolicy.MaxAllowedClusterFailures = intOrStr(runBudget)
	}
	return e.create()
}

// passes runs passes until the run is blocked (finished), allowing the
// retriable errors of clusters whose delivery fails.
func (e *env) passes(max int) {
	e.t.Helper()
	for i := 0; i < max; i++ {
		res, err := e.pass()
		if isAborted(err) {
			e.t.Fatalf("pass %d aborted: %v", i, err)
		}
		if res.Blocked {
			return
		}
	}
}

// applyFailed plays a member whose apply fails.
func (e *env) applyFailed(clusters ...string) {
	for _, c := range clusters {
		e.setBindingCondition(c, fleet.ResourceBindingApplied, metav1.ConditionFalse, "ApplyFailed")
	}
}

func clusterOverdue(cluster, why string) cond {
	return cond{fleet.ClusterUpdatingConditionSucceeded, "False", fleet.ClusterUpdatingFailedReason,
		fmt.Sprintf("~"+ClusterOverdueMessageFmt, cluster, "stage1", 5, why)}
}

func partiallySucceeded(msg string) []cond {
	return []cond{initOK,
		{fleet.StagedUpdateRunConditionProgressing, "False", fleet.UpdateRunSucceededReason, RunSucceededProgMessage},
		{fleet.StagedUpdateRunConditionSucceeded, "True", fleet.UpdateRunPartiallySucceededReason, msg}}
}

// TestFailureBudgetLetsARunPartiallySucceed: a cluster whose apply keeps
// failing is retried until maxWaitTimePerClusterMinutes, then fails with
// its binding's reason; within the budget the run finishes,
// Succeeded=True UpdateRunPartiallySucceeded naming it, and its binding
// stays as the run left it.
func TestFailureBudgetLetsARunPartiallySucceed(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			e := budgetEnv(t, f.ns, 4, "4", "1", "")
			e.ok()
			e.available("cluster-0", "cluster-1", "cluster-3")
			e.applyFailed("cluster-2")
			for i := 0; i < 3; i++ {
				// The deadline deals with the failing cluster, not the
				// controller's error backoff: the run polls it.
				wantResult(t, "before the deadline", e.ok(), Result{RequeueAfter: ClusterPollInterval})
			}
			wantClusterStates(t, "stage1", e.get().Status.StagesStatus[0], "done", "done", "started", "done")
			e.r.StuckThreshold = time.Minute
			e.clk.Advance(5*time.Minute - time.Second)
			// Stuck, yet not blocked: the deadline will move it.
			wantResult(t, "a second before the deadline", e.ok(), Result{RequeueAfter: ClusterPollInterval})
			wantConds(t, "run", e.get().Status.Conditions, initOK, cond{fleet.StagedUpdateRunConditionProgressing, "False", fleet.UpdateRunStuckReason, ""})
			e.clk.Advance(time.Second)
			e.passes(5)
			run := e.get()
			wantConds(t, "run", run.Status.Conditions, partiallySucceeded(
				"All stages are completed, 1 cluster(s) failed within the failure budget: cluster-2 (stage stage1)")...)
			wantConds(t, "cluster-2", run.Status.StagesStatus[0].Clusters[2].Conditions, clusterStarted,
				clusterOverdue("cluster-2", "the cluster updating encountered an error at stage `stage1`, updateRun := `test-run`; binding "))
			if msg := find(run.Status.StagesStatus[0].Clusters[2].Conditions, fleet.ClusterUpdatingConditionSucceeded).Message; !strings.Contains(msg, "has Applied=False (ApplyFailed)") {
				t.Errorf("the failed cluster's message does not say why: %q", msg)
			}
			wantConds(t, "stage1", run.Status.StagesStatus[0].Conditions, stageDone...)
			wantBoundTo(t, e, "cluster-2")
			if got := e.rec.last(); got != "Run/Succeeded/True/UpdateRunPartiallySucceeded/none" {
				t.Errorf("metric %s", got)
			}
		})
	}
}

// TestFailureBudgetExceededStopsStartingClusters: over its budget a stage
// starts no more clusters, lets the in-flight ones finish, then fails the
// run naming the failed clusters and the budget.
func TestFailureBudgetExceededStopsStartingClusters(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			e := budgetEnv(t, f.ns, 5, "2", "0", "")
			e.ok() // cluster-0 and cluster-1 start
			e.clk.Advance(time.Minute)
			e.available("cluster-1")
			e.ok() // cluster-1 done, cluster-2 starts
			e.clk.Advance(4 * time.Minute)
			e.ok() // cluster-0 is overdue: over budget; cluster-2 is still in flight
			run := e.get()
			wantClusterStates(t, "stage1", run.Status.StagesStatus[0], "failed", "done", "started", "", "")
			if c := find(run.Status.Conditions, fleet.StagedUpdateRunConditionSucceeded); c != nil {
				t.Fatalf("the run finished with a cluster in flight: %v", c)
			}
			e.ok()
			wantNotBound(t, e, "cluster-3")

			e.available("cluster-2")
			wantResult(t, "in-flight cluster done", e.ok(), Result{Blocked: true, Ended: true})
			run = e.get()
			msg := "cannot continue the updateRun: the failure budget is exceeded: the stage `stage1` has 1 failed cluster(s), more than maxAllowedClusterFailures 0: cluster-0"
			wantConds(t, "run", run.Status.Conditions, runFailed(msg)...)
			wantClusterStates(t, "stage1", run.Status.StagesStatus[0], "failed", "done", "done", "", "")
			wantConds(t, "stage1", run.Status.StagesStatus[0].Conditions,
				cond{fleet.StageUpdatingConditionProgressing, "False", fleet.StageUpdatingFailedReason, StageFailedProgMessage},
				cond{fleet.StageUpdatingConditionSucceeded, "False", fleet.StageUpdatingFailedReason, msg})
			wantNotBound(t, e, "cluster-3")
			wantNotBound(t, e, "cluster-4")
			wantBoundTo(t, e, "cluster-0")
			if got := e.rec.last(); got != "Run/Succeeded/False/UpdateRunFailed/cluster_failure" {
				t.Errorf("metric %s", got)
			}
		})
	}
}

// TestFailureBudgetOfAStage: a stage's own maxAllowedClusterFailures
// overrides the run's, both ways, and percentages are ceil(p·N).
func TestFailureBudgetOfAStage(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		n                      int
		runBudget, stageBudget string
		failing                int
		wantBudget             string // "" = within the budget
	}{
		{"stage allows what the run does not", 4, "0", "1", 1, ""},
		{"stage refuses what the run allows", 4, "3", "0", 1, "0"},
		{"default budget is 1", 4, "", "", 1, ""},
		{"default budget is 1, not 2", 4, "", "", 2, "1"},
		{"15% of 10 is 2", 10, "15%", "", 2, ""},
		{"15% of 10 is 2, not 3", 10, "15%", "", 3, "2 (15% of 10 clusters)"},
		{"1% of 10 rounds up to 1", 10, "1%", "", 1, ""},
		{"0% allows none", 10, "0%", "", 1, "0 (0% of 10 clusters)"},
		{"stage percentage", 4, "0", "50%", 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := budgetEnv(t, "", tc.n, "100%", tc.runBudget, tc.stageBudget)
			e.ok()
			var failing []string
			for i := 0; i < tc.n; i++ {
				if i < tc.failing {
					failing = append(failing, fmt.Sprintf("cluster-%d", i))
				} else {
					e.available(fmt.Sprintf("cluster-%d", i))
				}
			}
			e.passes(3)
			e.clk.Advance(5 * time.Minute)
			e.passes(5)
			run := e.get()
			if tc.wantBudget == "" {
				var named []string
				for _, c := range failing {
					named = append(named, c+" (stage stage1)")
				}
				wantConds(t, "run", run.Status.Conditions, partiallySucceeded(fmt.Sprintf(RunPartiallySucceededMessageFmt, tc.failing, strings.Join(named, ", ")))...)
				return
			}
			wantConds(t, "run", run.Status.Conditions, runFailed(fmt.Sprintf("cannot continue the updateRun: "+BudgetExceededMessageFmt,
				"stage1", tc.failing, tc.wantBudget, strings.Join(failing, ", ")))...)
		})
	}
}

// TestStageBudgetRounding is the budget's arithmetic: Azure Fleet's
// ceil(p·N) for a percentage, the stage's value before the run's.
func TestStageBudgetRounding(t *testing.T) {
	for _, tc := range []struct {
		run, stage string
		n, want    int
	}{
		{"1", "", 10, 1}, {"", "", 10, 1}, {"0", "", 10, 0}, {"7", "", 3, 7},
		{"10%", "", 10, 1}, {"10%", "", 11, 2}, {"10%", "", 9, 1}, {"33%", "", 3, 1}, {"34%", "", 3, 2},
		{"100%", "", 5, 5}, {"0%", "", 5, 0}, {"50%", "", 0, 0}, {"5", "25%", 4, 1}, {"25%", "2", 4, 2},
	} {
		policy := &fleet.FailurePolicy{}
		if tc.run != "" {
			policy.MaxAllowedClusterFailures = intOrStr(tc.run)
		}
		stage := &fleet.StageConfig{}
		if tc.stage != "" {
			stage.MaxAllowedClusterFailures = intOrStr(tc.stage)
		}
		got, ok, err := StageBudget(policy, stage, tc.n)
		if err != nil || !ok || got != tc.want {
			t.Errorf("run %q stage %q of %d clusters: budget %d %v %v, want %d", tc.run, tc.stage, tc.n, got, ok, err, tc.want)
		}
	}
	if _, ok, _ := StageBudget(nil, &fleet.StageConfig{MaxAllowedClusterFailures: intOrStr("3")}, 10); ok {
		t.Error("a stage budget without a run failure policy took effect")
	}
}

// TestNoFailurePolicyIgnoresTheStageBudget: a stage's budget without a run
// failure policy changes nothing: a slow cluster leaves the run Stuck and
// never fails it.
func TestNoFailurePolicyIgnoresTheStageBudget(t *testing.T) {
	e := newEnv(t, "").small(2, fleet.StageConfig{MaxConcurrency: intOrStr("2"), MaxAllowedClusterFailures: intOrStr("1")}).create()
	e.ok()
	e.available("cluster-1")
	e.clk.Advance(time.Hour)
	res := e.ok()
	if !res.Blocked {
		t.Errorf("a stuck run without a failure policy is blocked: %+v", res)
	}
	run := e.get()
	wantClusterStates(t, "stage1", run.Status.StagesStatus[0], "started", "done")
	wantConds(t, "run", run.Status.Conditions, initOK, cond{fleet.StagedUpdateRunConditionProgressing, "False", fleet.UpdateRunStuckReason, ""})
}

// TestAStoppedRunDoesNotWaitForADeadCluster: a stopping run under a failure
// policy fails an in-flight cluster at its deadline instead of waiting for
// it forever, and is Stopped; resumed, the stage goes on within its budget.
func TestAStoppedRunDoesNotWaitForADeadCluster(t *testing.T) {
	e := budgetEnv(t, "", 3, "2", "1", "")
	e.ok() // cluster-0 and cluster-1 start
	e.available("cluster-1")
	e.setState(fleet.StateStop)
	e.ok()
	run := e.get()
	wantClusterStates(t, "stage1", run.Status.StagesStatus[0], "started", "done", "")
	wantConds(t, "run", run.Status.Conditions, initOK, runStopping)
	e.clk.Advance(5 * time.Minute)
	wantResult(t, "at the deadline", e.ok(), Result{Blocked: true})
	run = e.get()
	wantClusterStates(t, "stage1", run.Status.StagesStatus[0], "failed", "done", "")
	wantConds(t, "run", run.Status.Conditions, initOK, runStopped)
	wantNotBound(t, e, "cluster-2")

	e.setState(fleet.StateRun)
	e.ok()
	e.available("cluster-2")
	e.passes(5)
	wantConds(t, "run", e.get().Status.Conditions, partiallySucceeded(
		"All stages are completed, 1 cluster(s) failed within the failure budget: cluster-0 (stage stage1)")...)
}
