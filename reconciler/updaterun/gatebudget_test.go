package updaterun

import (
	"fmt"
	"testing"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// clusterGates plays Prometheus for a gate: every query answers its
// cluster's value, 0 unless bad names one.
type clusterGates struct{ bad map[string]float64 }

func (f *clusterGates) Evaluate(q MetricQuery) (MetricResult, bool) {
	var res MetricResult
	for _, cq := range q.Queries {
		res.Samples = append(res.Samples, MetricValue{Cluster: cq.Cluster, Value: f.bad[cq.Cluster]})
	}
	if len(q.Queries) == 1 && q.Queries[0].Cluster == "" {
		// A query over the stage: one series per cluster, labelled.
		res.Samples = nil
		for _, c := range []string{"cluster-3", "cluster-7"} {
			res.Samples = append(res.Samples, MetricValue{Cluster: c, Value: f.bad[c]})
		}
	}
	return res, true
}

const clusterGateQuery = `sum(rate(errors_total{cluster="$cluster"}[5m]))`

// gateBudgetEnv is the fixture's one stage with a gate after it (query,
// failing at its first evaluation on cluster-3 and cluster-7) and a run
// with a failure policy of budget ("" for none).
func gateBudgetEnv(t *testing.T, ns, query, budget string) *env {
	e := newEnv(t, ns).fixture()
	e.r.Gates = &clusterGates{bad: map[string]float64{"cluster-3": 5, "cluster-7": 2.5}}
	s := gated(0)
	s.Stages[0].AfterStageTasks[0].Metric.Query = query
	e.strategy(s)
	if budget != "" {
		e.run.Spec.FailurePolicy = &fleet.FailurePolicy{MaxAllowedClusterFailures: intOrStr(budget)}
	}
	return e.create()
}

func gateFailedCluster(query, value string) cond {
	return cond{fleet.ClusterUpdatingConditionSucceeded, "False", fleet.ClusterUpdatingFailedReason,
		fmt.Sprintf(MetricGateClusterFailedMessageFmt, gateRequest, query, value, "< 1")}
}

// TestAPerClusterGateFailingWithinTheBudgetCountsItsClusters: a $cluster
// gate that fails on two clusters of a stage that may lose two fails
// exactly those clusters, naming the query and the value; the task is
// done, the stage succeeds and the run ends UpdateRunPartiallySucceeded
// listing them.
func TestAPerClusterGateFailingWithinTheBudgetCountsItsClusters(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			e := gateBudgetEnv(t, f.ns, clusterGateQuery, "2")
			toTheGate(t, e)
			e.passes(5)
			run := e.get()
			wantConds(t, "run", run.Status.Conditions, partiallySucceeded(
				"All stages are completed, 2 cluster(s) failed within the failure budget: cluster-3 (stage all), cluster-7 (stage all)")...)
			stage := run.Status.StagesStatus[0]
			for _, c := range stage.Clusters {
				want := clusterDone
				switch c.ClusterName {
				case "cluster-3":
					want = gateFailedCluster(clusterGateQuery, "5")
				case "cluster-7":
					want = gateFailedCluster(clusterGateQuery, "2.5")
				}
				wantConds(t, c.ClusterName, c.Conditions, clusterStarted, want)
			}
			rec := e.evidence()
			if rec.Verdict != fleet.MetricGateFailed {
				t.Errorf("evidence %+v, want failed", rec)
			}
			wantConds(t, "task", stage.AfterStageTaskStatus[0].Conditions, taskCreated,
				cond{fleet.StageTaskConditionApprovalRequestApproved, "True", fleet.MetricGateFailedWithinBudgetReason,
					rec.Message + "; 2 cluster(s) counted as failed clusters of the stage `all` within maxAllowedClusterFailures 2: cluster-3, cluster-7"})
			wantConds(t, "stage", stage.Conditions, stageDone...)
			if a, _ := e.ar(gateRequest); IsApproved(a) || IsApprovalAccepted(a) {
				t.Error("a failed gate approved its request")
			}
		})
	}
}

// TestAPerClusterGateFailingOverTheBudgetFailsTheRun: over the stage's
// budget the run fails as the budget rules say, the clusters failed.
func TestAPerClusterGateFailingOverTheBudgetFailsTheRun(t *testing.T) {
	e := gateBudgetEnv(t, "", clusterGateQuery, "1")
	wantResult(t, "failed", toTheGate(t, e), Result{Blocked: true, Ended: true})
	run := e.get()
	msg := "cannot continue the updateRun: the failure budget is exceeded: the stage `all` has 2 failed cluster(s), more than maxAllowedClusterFailures 1: cluster-3, cluster-7"
	wantConds(t, "run", run.Status.Conditions, runFailed(msg)...)
	for _, c := range run.Status.StagesStatus[0].Clusters {
		if c.ClusterName == "cluster-3" {
			wantConds(t, c.ClusterName, c.Conditions, clusterStarted, gateFailedCluster(clusterGateQuery, "5"))
		}
	}
	wantConds(t, "task", run.Status.StagesStatus[0].AfterStageTaskStatus[0].Conditions, taskCreated,
		cond{fleet.StageTaskConditionApprovalRequestApproved, "False", fleet.MetricGateFailedReason, e.evidence().Message})
	if got := e.rec.last(); got != "Run/Succeeded/False/UpdateRunFailed/cluster_failure" {
		t.Errorf("metric %s", got)
	}
}

// TestAFailedGateFailsTheRunWithoutCountingClusters: an aggregate
// ($clusters) gate, or a run without a failure policy, fails the run
// naming the query as it always did; no cluster fails.
func TestAFailedGateFailsTheRunWithoutCountingClusters(t *testing.T) {
	for _, tc := range []struct{ name, query, budget string }{
		{"aggregate gate", gateQuery, "2"},
		{"no failure policy", clusterGateQuery, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := gateBudgetEnv(t, "", tc.query, tc.budget)
			wantResult(t, "failed", toTheGate(t, e), Result{Blocked: true, Ended: true})
			want := "cannot continue the updateRun: the metric gate of approval request " + gateRequest + " failed: query `" + tc.query +
				"` returned 5 for cluster cluster-3, 2.5 for cluster cluster-7, want < 1 (1 failing evaluation(s), failure limit 0)"
			run := e.get()
			wantConds(t, "run", run.Status.Conditions, runFailed(want)...)
			for _, c := range run.Status.StagesStatus[0].Clusters {
				wantConds(t, c.ClusterName, c.Conditions, clusterStarted, clusterDone)
			}
		})
	}
}

// TestAPerClusterGateBeforeAStageFailsItsClustersBeforeTheyStart: a
// $cluster gate before the stage that fails within the budget fails its
// clusters before they start: they are never updated, the others are.
func TestAPerClusterGateBeforeAStageFailsItsClustersBeforeTheyStart(t *testing.T) {
	e := newEnv(t, "").fixture()
	e.r.Gates = &clusterGates{bad: map[string]float64{"cluster-3": 5}}
	spec := gated(0)
	spec.Stages[0].BeforeStageTasks, spec.Stages[0].AfterStageTasks = spec.Stages[0].AfterStageTasks, nil
	spec.Stages[0].BeforeStageTasks[0].Metric.Query = clusterGateQuery
	e.strategy(spec)
	e.run.Spec.FailurePolicy = &fleet.FailurePolicy{}
	e.create()
	e.ok()
	stage := e.get().Status.StagesStatus[0]
	wantConds(t, "task", stage.BeforeStageTaskStatus[0].Conditions, taskCreated,
		cond{fleet.StageTaskConditionApprovalRequestApproved, "True", fleet.MetricGateFailedWithinBudgetReason,
			"~; 1 cluster(s) counted as failed clusters of the stage `all` within maxAllowedClusterFailures 1: cluster-3"})
	var others []string
	for _, c := range stage.Clusters {
		if c.ClusterName == "cluster-3" {
			wantConds(t, c.ClusterName, c.Conditions, cond{fleet.ClusterUpdatingConditionSucceeded, "False", fleet.ClusterUpdatingFailedReason,
				fmt.Sprintf(MetricGateClusterFailedMessageFmt, runName+"-before-all", clusterGateQuery, "5", "< 1")})
			continue
		}
		others = append(others, c.ClusterName)
		wantConds(t, c.ClusterName, c.Conditions, clusterStarted)
	}
	wantNotBound(t, e, "cluster-3")
	e.available(others...)
	e.passes(5)
	wantConds(t, "run", e.get().Status.Conditions, partiallySucceeded(
		"All stages are completed, 1 cluster(s) failed within the failure budget: cluster-3 (stage all)")...)
	wantNotBound(t, e, "cluster-3")
}
