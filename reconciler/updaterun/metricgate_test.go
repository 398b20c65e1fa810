package updaterun

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// fakeGates plays Prometheus: each evaluation takes the next of values (a
// nil entry is an unreachable Prometheus), finished at once unless async.
type fakeGates struct {
	values []*float64
	async  bool
	asked  []MetricQuery
	inFly  map[int32]bool
	// forgotten are the runs the engine said are gone or ended.
	forgotten []hub.Key
}

func (f *fakeGates) Forget(run hub.Key) { f.forgotten = append(f.forgotten, run) }

func v(f float64) *float64 { return &f }

func (f *fakeGates) Evaluate(q MetricQuery) (MetricResult, bool) {
	if f.async && !f.inFly[q.Seq] {
		if f.inFly == nil {
			f.inFly = map[int32]bool{}
		}
		f.inFly[q.Seq] = true
		return MetricResult{}, false
	}
	f.asked = append(f.asked, q)
	if len(f.values) == 0 || f.values[0] == nil {
		if len(f.values) > 0 {
			f.values = f.values[1:]
		}
		return MetricResult{Err: errors.New(`Post "http://prometheus:9090/api/v1/query": connection refused`)}, true
	}
	val := *f.values[0]
	f.values = f.values[1:]
	return MetricResult{Samples: []MetricValue{{Cluster: "cluster-1", Value: val}}}, true
}

const gateQuery = `sum(rate(errors_total{cluster=~"$clusters"}[5m]))`

// gated is one stage with every scheduled cluster, all at once, and a
// metric gate after it: below 1, two evaluations in a row, one minute
// apart, no failure allowed unless failureLimit says so, 10 minutes.
func gated(failureLimit int32) fleet.UpdateStrategySpec {
	return fleet.UpdateStrategySpec{Stages: []fleet.StageConfig{{Name: "all", LabelSelector: selector("group", "prod"), MaxConcurrency: intOrStr("100%"),
		AfterStageTasks: []fleet.StageTask{{Type: fleet.StageTaskTypeMetric, Metric: &fleet.MetricGate{
			Query: gateQuery, Threshold: fleet.MetricThreshold{Operator: "<", Value: "1"},
			Interval: dur(time.Minute), SuccessesRequired: 2, FailureLimit: failureLimit, Timeout: dur(10 * time.Minute)}}}}}}
}

const gateRequest = runName + "-after-all"

// toTheGate rolls the stage out; the pass that finishes it opens the gate
// and evaluates it once.
func toTheGate(t *testing.T, e *env) Result {
	t.Helper()
	e.ok()
	e.available(clusterNames(e.get().Status.StagesStatus[0])...)
	return e.ok()
}

func (e *env) evidence() *fleet.MetricGateRecord {
	e.t.Helper()
	a, ok := e.ar(gateRequest)
	if !ok || a.Status.MetricGate == nil {
		e.t.Fatalf("approval request %s has no metric gate evidence (exists: %v)", gateRequest, ok)
	}
	return a.Status.MetricGate
}

func results(rec *fleet.MetricGateRecord) string {
	var out []string
	for _, ev := range rec.Evaluations {
		out = append(out, string(ev.Result))
	}
	return strings.Join(out, ",")
}

func TestAMetricGateApprovesTheStageAfterEnoughSuccessesInARow(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			e := newEnv(t, f.ns).fixture()
			gates := &fakeGates{values: []*float64{v(0.2), v(0)}}
			e.r.Gates = gates
			e.strategy(gated(0))
			e.create()
			wantResult(t, "first evaluation", toTheGate(t, e), Result{RequeueAfter: time.Minute})
			run := e.get()
			wantConds(t, "run", run.Status.Conditions, initOK, runWaiting("after-stage", "all"))
			wantConds(t, "task", run.Status.StagesStatus[0].AfterStageTaskStatus[0].Conditions, taskCreated,
				cond{fleet.StageTaskConditionApprovalRequestApproved, "False", fleet.MetricGatePendingReason, "~1 of 2 evaluation(s) in a row passed"})
			if rec := e.evidence(); rec.Verdict != fleet.MetricGatePending || results(rec) != "Pass" || rec.Threshold != "< 1" {
				t.Fatalf("evidence %+v, want one passing evaluation, pending", rec)
			}
			if a, _ := e.ar(gateRequest); IsApproved(a) {
				t.Fatal("the request is approved after one of two successes")
			}
			q := gates.asked[0]
			if len(q.Queries) != 1 || !strings.Contains(q.Queries[0].Expr, `cluster=~"cluster-0|cluster-1|`) || q.Seq != 1 {
				t.Errorf("asked %+v, want one query over the stage's clusters", q)
			}

			// Not before the interval.
			e.clk.Advance(30 * time.Second)
			wantResult(t, "between evaluations", e.ok(), Result{RequeueAfter: 30 * time.Second})
			e.clk.Advance(30 * time.Second)
			wantResult(t, "passed", e.ok(), Result{Requeue: true})
			rec := e.evidence()
			if rec.Verdict != fleet.MetricGatePassed || results(rec) != "Pass,Pass" || rec.EvaluationCount != 2 {
				t.Fatalf("evidence %+v, want passed after two passing evaluations", rec)
			}
			if got := rec.Evaluations[1].Values; len(got) != 1 || got[0].Value != "0" || got[0].Cluster != "cluster-1" {
				t.Errorf("second evaluation's values %+v", got)
			}
			a, _ := e.ar(gateRequest)
			wantConds(t, "request", a.Status.Conditions,
				cond{fleet.ApprovalRequestConditionApproved, "True", fleet.MetricGatePassedReason, "2 evaluation(s) in a row of query `" + gateQuery + "` held < 1"},
				cond{fleet.ApprovalRequestConditionApprovalAccepted, "True", fleet.ApprovalRequestApprovalAcceptedReason, ApprovalAcceptedMessage})
			run = e.get()
			wantConds(t, "task", run.Status.StagesStatus[0].AfterStageTaskStatus[0].Conditions, taskCreated,
				cond{fleet.StageTaskConditionApprovalRequestApproved, "True", fleet.MetricGatePassedReason, rec.Message})
			wantConds(t, "stage", run.Status.StagesStatus[0].Conditions, stageDone...)
		})
	}
}

func TestAMetricGateFailsTheRunNamingTheQueryAndTheValue(t *testing.T) {
	e := newEnv(t, "").fixture()
	e.r.Gates = &fakeGates{values: []*float64{v(0), v(7.5)}}
	e.strategy(gated(0))
	e.create()
	toTheGate(t, e)
	e.clk.Advance(time.Minute)
	wantResult(t, "failed", e.ok(), Result{Blocked: true, Ended: true})
	want := "the metric gate of approval request " + gateRequest + " failed: query `" + gateQuery +
		"` returned 7.5 for cluster cluster-1, want < 1 (1 failing evaluation(s), failure limit 0)"
	run := e.get()
	wantConds(t, "run", run.Status.Conditions, runFailed("~"+want)...)
	a, _ := e.ar(gateRequest)
	if IsApproved(a) || IsApprovalAccepted(a) {
		t.Error("a failed gate approved its request")
	}
	if rec := e.evidence(); rec.Verdict != fleet.MetricGateFailed || results(rec) != "Pass,Fail" {
		t.Errorf("evidence %+v, want failed", rec)
	}
}

func TestAFlappingMetricStartsTheSuccessesAgain(t *testing.T) {
	e := newEnv(t, "").fixture()
	e.r.Gates = &fakeGates{values: []*float64{v(0), v(3), v(0), v(0)}}
	e.strategy(gated(1))
	e.create()
	toTheGate(t, e)
	for i := 0; i < 2; i++ {
		e.clk.Advance(time.Minute)
		wantResult(t, "pending", e.ok(), Result{RequeueAfter: time.Minute})
	}
	if rec := e.evidence(); rec.SuccessesInARow != 1 || rec.Failures != 1 || rec.Verdict != fleet.MetricGatePending {
		t.Fatalf("after pass, fail, pass: %+v, want 1 in a row, 1 failure, pending", rec)
	}
	e.clk.Advance(time.Minute)
	wantResult(t, "passed", e.ok(), Result{Requeue: true})
	if rec := e.evidence(); rec.Verdict != fleet.MetricGatePassed || results(rec) != "Pass,Fail,Pass,Pass" {
		t.Errorf("evidence %+v, want passed after pass, fail, pass, pass", rec)
	}
}

func TestAnUnreachablePrometheusTimesTheGateOutAndAPersonDecides(t *testing.T) {
	for _, tc := range []struct {
		name  string
		gates MetricEvaluator
		err   string
	}{
		{"prometheus down", &fakeGates{values: make([]*float64, 20)}, "connection refused"},
		{"no prometheus configured", nil, MetricGateNoPrometheusMessage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "").fixture()
			e.r.Gates = tc.gates
			e.strategy(gated(0))
			e.create()
			wantResult(t, "error", toTheGate(t, e), Result{RequeueAfter: time.Minute})
			for i := 0; i < 9; i++ {
				e.clk.Advance(time.Minute)
				e.ok()
			}
			e.clk.Advance(time.Minute)
			wantResult(t, "timed out", e.ok(), Result{RequeueAfter: ApprovalPollInterval, Blocked: true})
			rec := e.evidence()
			if rec.Verdict != fleet.MetricGateTimedOut || rec.EvaluationCount != 10 || !strings.Contains(rec.Message, tc.err) {
				t.Fatalf("evidence %+v, want timed out after 10 errors naming %q", rec, tc.err)
			}
			wantConds(t, "task", e.get().Status.StagesStatus[0].AfterStageTaskStatus[0].Conditions, taskCreated,
				cond{fleet.StageTaskConditionApprovalRequestApproved, "False", fleet.MetricGateTimedOutReason, "~the metric gate timed out after 10m0s undecided"})
			e.clk.Advance(time.Hour)
			wantResult(t, "still waiting", e.ok(), Result{RequeueAfter: ApprovalPollInterval, Blocked: true})
			if a, _ := e.ar(gateRequest); IsApproved(a) {
				t.Fatal("a timed-out gate approved its request")
			}

			e.approve(gateRequest)
			wantResult(t, "approved by a person", e.ok(), Result{Requeue: true})
			rec = e.evidence()
			if rec.Verdict != fleet.MetricGateOverridden || rec.Message != "approved by a person before the gate decided" {
				t.Errorf("evidence %+v, want overridden by a person", rec)
			}
			wantConds(t, "task", e.get().Status.StagesStatus[0].AfterStageTaskStatus[0].Conditions, taskCreated,
				cond{fleet.StageTaskConditionApprovalRequestApproved, "True", fleet.MetricGateOverriddenReason, rec.Message})
		})
	}
}

func TestAPersonRejectingAGatedRequestFailsTheRun(t *testing.T) {
	e := newEnv(t, "").fixture()
	e.r.Gates = &fakeGates{values: []*float64{v(0), v(0)}}
	e.strategy(gated(0))
	e.create()
	toTheGate(t, e)
	a, _ := e.ar(gateRequest)
	a.Annotations = map[string]string{fleet.ApprovedByAnnotation: "Alice <alice@example.com> (merge commit 0123456789ab)"}
	a.Status.Conditions = append(a.Status.Conditions, metav1.Condition{Type: fleet.ApprovalRequestConditionApproved, Status: metav1.ConditionFalse,
		ObservedGeneration: a.Generation, Reason: "Rejected", Message: "error rate too high in eastus", LastTransitionTime: metav1.NewTime(e.clk.Now())})
	if err := e.h.ApplyApprovalRequestStatus(e.ctx, a); err != nil {
		t.Fatal(err)
	}
	wantResult(t, "rejected", e.ok(), Result{Blocked: true, Ended: true})
	wantConds(t, "run", e.get().Status.Conditions, runFailed("~the approval request "+gateRequest+" was rejected (Rejected: error rate too high in eastus)")...)
}

func TestAnEvaluationInFlightDoesNotBlockTheRun(t *testing.T) {
	e := newEnv(t, "").fixture()
	e.r.Gates = &fakeGates{values: []*float64{v(0), v(0)}, async: true}
	e.strategy(gated(0))
	e.create()
	wantResult(t, "asked", toTheGate(t, e), Result{RequeueAfter: time.Minute})
	if rec := e.evidence(); rec.EvaluationCount != 0 {
		t.Fatalf("evidence %+v before the evaluation finished", rec)
	}
	wantResult(t, "woken by the evaluator", e.ok(), Result{RequeueAfter: time.Minute})
	if rec := e.evidence(); rec.EvaluationCount != 1 {
		t.Fatalf("evidence %+v, want the finished evaluation", rec)
	}
}

func TestMetricQueriesExpandOverTheStagesClusters(t *testing.T) {
	clusters := []string{"member-1", "member.2"}
	for _, tc := range []struct{ query, want string }{
		{`sum(up{cluster=~"$clusters"})`, `sum(up{cluster=~"member-1|member\\.2"})`},
		{`up{cluster="$cluster"}`, `up{cluster="member-1"};up{cluster="member.2"}`},
		{`sum(up)`, `sum(up)`},
	} {
		var got []string
		for _, q := range MetricQueries(&fleet.MetricGate{Query: tc.query}, clusters) {
			got = append(got, q.Expr)
		}
		if strings.Join(got, ";") != tc.want {
			t.Errorf("%s: got %q, want %q", tc.query, got, tc.want)
		}
	}
}

func TestAMetricGateBeforeAStageHoldsItsClustersUntilItPasses(t *testing.T) {
	e := newEnv(t, "").fixture()
	gates := &fakeGates{values: []*float64{v(0)}}
	e.r.Gates = gates
	spec := gated(0)
	spec.Stages[0].BeforeStageTasks, spec.Stages[0].AfterStageTasks = spec.Stages[0].AfterStageTasks, nil
	spec.Stages[0].BeforeStageTasks[0].Metric.SuccessesRequired = 1
	spec.Stages[0].BeforeStageTasks[0].Metric.Query = `up{cluster="$cluster"}`
	e.strategy(spec)
	e.create()
	wantResult(t, "passed before the stage", e.ok(), Result{RequeueAfter: ClusterPollInterval})
	const name = runName + "-before-all"
	a, ok := e.ar(name)
	if !ok || !IsApprovalAccepted(a) || a.Status.MetricGate == nil || a.Status.MetricGate.Verdict != fleet.MetricGatePassed {
		t.Fatalf("request %s: %+v, want passed and accepted", name, a)
	}
	if q := gates.asked[0].Queries; len(q) != 10 || q[0].Expr != `up{cluster="cluster-0"}` || q[0].Cluster != "cluster-0" {
		t.Errorf("asked %+v, want one query per cluster of the stage", q)
	}
	wantConds(t, "stage", e.get().Status.StagesStatus[0].Conditions, stageStarted)
}

// The evaluator keeps state per run (evaluations in flight, results not
// yet read); the engine tells it to drop a run's when the run ends or is
// deleted, never while the run goes on.
func TestTheGatesOfAnEndedOrDeletedRunAreForgotten(t *testing.T) {
	t.Run("failed by its gate", func(t *testing.T) {
		e := newEnv(t, "").fixture()
		gates := &fakeGates{values: []*float64{v(0), v(7.5)}}
		e.r.Gates = gates
		e.strategy(gated(0))
		e.create()
		toTheGate(t, e)
		if len(gates.forgotten) != 0 {
			t.Fatalf("forgot %v while the gate is pending", gates.forgotten)
		}
		e.clk.Advance(time.Minute)
		wantResult(t, "failed", e.ok(), Result{Blocked: true, Ended: true})
		if !slices.Equal(gates.forgotten, []hub.Key{e.key()}) {
			t.Errorf("forgot %v, want the failed run %v", gates.forgotten, e.key())
		}
	})
	t.Run("succeeded", func(t *testing.T) {
		e := newEnv(t, "").fixture()
		gates := &fakeGates{values: []*float64{v(0), v(0)}}
		e.r.Gates = gates
		e.strategy(gated(0))
		e.create()
		toTheGate(t, e)
		e.clk.Advance(time.Minute)
		for i := 0; i < 5 && len(gates.forgotten) == 0; i++ {
			e.ok()
		}
		if c := find(e.get().Status.Conditions, fleet.StagedUpdateRunConditionSucceeded); !isTrue(c, e.get().Generation) {
			t.Fatalf("the run did not succeed: %s", condsString(e.get().Status.Conditions))
		}
		if !slices.Contains(gates.forgotten, e.key()) {
			t.Errorf("forgot %v, want the run that succeeded", gates.forgotten)
		}
	})
	t.Run("deleted while its gate is pending", func(t *testing.T) {
		e := newEnv(t, "").fixture()
		gates := &fakeGates{values: []*float64{v(0), v(0)}, async: true}
		e.r.Gates = gates
		e.strategy(gated(0))
		e.create()
		toTheGate(t, e)
		e.h.DeleteUpdateRun(e.key())
		wantResult(t, "deleted", e.ok(), Result{})
		if !slices.Equal(gates.forgotten, []hub.Key{e.key()}) {
			t.Errorf("forgot %v, want the deleted run", gates.forgotten)
		}
		wantResult(t, "gone", e.ok(), Result{})
		if len(gates.forgotten) != 2 || gates.forgotten[1] != e.key() {
			t.Errorf("forgot %v, want the run that no longer exists forgotten again", gates.forgotten)
		}
	})
}
