package updaterun

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// Metric gates (gitfleet's, api/v1beta1/metricgate.go). The engine never
// queries Prometheus itself: a pass asks a MetricEvaluator, which answers
// at once with a finished evaluation or starts one and, when it is done,
// asks for another pass of the run (as an approval event would). All the
// gate's timing is the engine's clock, so the fake clock drives it in tests.

// Messages of metric gates (gitfleet's), on the request's evidence, its
// Approved condition, the task's ApprovalRequestApproved condition and a
// failed run.
const (
	MetricGatePassedMessageFmt     = "%d evaluation(s) in a row of query `%s` held %s"
	MetricGatePendingMessageFmt    = "%d of %d evaluation(s) in a row passed, %d failing (failure limit %d); last evaluation: %s"
	MetricGateFailedMessageFmt     = "query `%s` returned %s, want %s (%d failing evaluation(s), failure limit %d)"
	MetricGateTimedOutMessageFmt   = "the metric gate timed out after %s undecided (%d of %d evaluation(s) in a row passed; last evaluation: %s): nothing is approved until a person approves the request"
	MetricGateNoPrometheusMessage  = "no Prometheus to ask: gitfleet serve --prometheus-url is not set and the gate names no prometheusURL"
	MetricGateRunFailedMessageFmt  = "the metric gate of approval request %s failed: %s"
	MetricGateOverriddenMessageFmt = "%s by %s before the gate decided"
	RequestRejectedMessageFmt      = "the approval request %s was rejected (%s: %s)"
	// MetricGateClusterFailedMessageFmt takes the request, the query, the
	// cluster's failing values and the threshold.
	MetricGateClusterFailedMessageFmt = "the metric gate of approval request %s failed on this cluster: query `%s` returned %s, want %s"
	// MetricGateWithinBudgetMessageFmt takes the gate's message, the count,
	// the stage, the budget (BudgetString) and the clusters.
	MetricGateWithinBudgetMessageFmt = "%s; %d cluster(s) counted as failed clusters of the stage `%s` within maxAllowedClusterFailures %s: %s"
)

// MetricEvaluator evaluates the queries of metric gates.
type MetricEvaluator interface {
	// Evaluate returns the finished evaluation q, or false while it runs.
	// The first call for a q starts it; when it finishes the evaluator
	// asks for a pass of q.Run. A result is returned once, then forgotten.
	Evaluate(q MetricQuery) (MetricResult, bool)
}

// GateForgetter is the optional part of a MetricEvaluator that keeps
// state per run (evaluations in flight, results not yet read): Forget
// drops a run's once the run is deleted or has ended, when no pass will
// ever read them.
type GateForgetter interface {
	Forget(run hub.Key)
}

// forgetGates tells the evaluator that run is gone or done.
func (r *Reconciler) forgetGates(run hub.Key) {
	if f, ok := r.Gates.(GateForgetter); ok {
		f.Forget(run)
	}
}

// MetricQuery is one evaluation of a gate: one query, or one per cluster.
type MetricQuery struct {
	Run     hub.Key
	Request string // the approval request's name
	Seq     int32  // the evaluation's number, from 1
	// PrometheusURL is the gate's override, "" for the evaluator's own.
	PrometheusURL string
	Queries       []ClusterQuery
}

// ClusterQuery is a PromQL expression; Cluster names the cluster a
// $cluster query was written for ("" for a query over the stage).
type ClusterQuery struct {
	Cluster string
	Expr    string
}

// MetricResult is what Prometheus returned: every sample of every query,
// or the error that kept it from answering.
type MetricResult struct {
	Samples []MetricValue
	Err     error
}

// MetricValue is one sample: Cluster is the $cluster query's cluster or
// the series' cluster label; Series names other series by their labels.
type MetricValue struct {
	Cluster string
	Series  string
	Value   float64
}

// GateRecorder is the optional part of a Recorder that counts metric gate
// evaluations (gitfleet_gate_evaluations_total).
type GateRecorder interface {
	CountGateEvaluation(result fleet.MetricEvaluationResult)
}

// MetricQueries expands a gate's query over a stage's clusters: $clusters
// becomes a regular expression matching exactly them, $cluster one query
// per cluster; any other query is asked as written.
func MetricQueries(g *fleet.MetricGate, clusters []string) []ClusterQuery {
	q := g.Query
	if strings.Contains(q, fleet.MetricQueryClustersPlaceholder) {
		quoted := make([]string, len(clusters))
		for i, c := range clusters {
			// Inside a PromQL string literal a backslash is escaped.
			quoted[i] = strings.ReplaceAll(regexp.QuoteMeta(c), `\`, `\\`)
		}
		return []ClusterQuery{{Expr: strings.ReplaceAll(q, fleet.MetricQueryClustersPlaceholder, strings.Join(quoted, "|"))}}
	}
	if strings.Contains(q, fleet.MetricQueryClusterPlaceholder) {
		out := make([]ClusterQuery, len(clusters))
		for i, c := range clusters {
			out[i] = ClusterQuery{Cluster: c, Expr: strings.ReplaceAll(q, fleet.MetricQueryClusterPlaceholder, c)}
		}
		return out
	}
	return []ClusterQuery{{Expr: q}}
}

// NewMetricGateRecord starts the evidence of a gate at now.
func NewMetricGateRecord(g *fleet.MetricGate, now time.Time) *fleet.MetricGateRecord {
	return &fleet.MetricGateRecord{
		Query:             g.Query,
		PrometheusURL:     g.PrometheusURL,
		Threshold:         g.Threshold.String(),
		SuccessesRequired: g.SuccessesOrDefault(),
		FailureLimit:      g.FailureLimit,
		StartTime:         metav1.NewTime(now),
		Deadline:          metav1.NewTime(now.Add(g.TimeoutOrDefault())),
		Verdict:           fleet.MetricGatePending,
	}
}

// StepMetricGate advances a pending gate at now: it times the gate out
// past its deadline, or, when an evaluation is due, asks ev for it and
// records it with the verdict it leads to. changed says rec changed;
// after is when the gate wants the next look (0 once it decided).
func StepMetricGate(g *fleet.MetricGate, rec *fleet.MetricGateRecord, now time.Time, ev MetricEvaluator, q MetricQuery, counter GateRecorder) (changed bool, after time.Duration) {
	if rec.Verdict != fleet.MetricGatePending {
		return false, 0
	}
	if !now.Before(rec.Deadline.Time) {
		rec.Verdict = fleet.MetricGateTimedOut
		rec.Message = fmt.Sprintf(MetricGateTimedOutMessageFmt, rec.Deadline.Sub(rec.StartTime.Time), rec.SuccessesInARow, rec.SuccessesRequired, lastEvaluation(rec))
		return true, 0
	}
	interval := g.IntervalOrDefault()
	due := rec.StartTime.Time
	if n := len(rec.Evaluations); n > 0 {
		due = rec.Evaluations[n-1].Time.Add(interval)
	}
	if now.Before(due) {
		return false, minDuration(due.Sub(now), rec.Deadline.Sub(now))
	}
	q.Seq = rec.EvaluationCount + 1
	var res MetricResult
	if ev == nil {
		res.Err = fmt.Errorf("%s", MetricGateNoPrometheusMessage)
	} else if r, ok := ev.Evaluate(q); ok {
		res = r
	} else {
		// The evaluator asks for a pass when it is done; this is the
		// fallback.
		return false, minDuration(interval, rec.Deadline.Sub(now))
	}
	e := judge(g, res, now)
	if counter != nil {
		counter.CountGateEvaluation(e.Result)
	}
	rec.EvaluationCount++
	switch e.Result {
	case fleet.MetricEvaluationPass:
		rec.SuccessesInARow++
	case fleet.MetricEvaluationFail:
		rec.SuccessesInARow = 0
		rec.Failures++
	default:
		rec.SuccessesInARow = 0
	}
	rec.Evaluations = append(rec.Evaluations, e)
	if n := len(rec.Evaluations); n > fleet.MaxMetricGateEvaluations {
		rec.Evaluations = append(rec.Evaluations[:0:0], rec.Evaluations[n-fleet.MaxMetricGateEvaluations:]...)
	}
	switch {
	case rec.Failures > rec.FailureLimit:
		rec.Verdict = fleet.MetricGateFailed
		rec.Message = fmt.Sprintf(MetricGateFailedMessageFmt, rec.Query, failingValues(g, e), rec.Threshold, rec.Failures, rec.FailureLimit)
		return true, 0
	case rec.SuccessesInARow >= rec.SuccessesRequired:
		rec.Verdict = fleet.MetricGatePassed
		rec.Message = fmt.Sprintf(MetricGatePassedMessageFmt, rec.SuccessesInARow, rec.Query, rec.Threshold)
		return true, 0
	}
	rec.Message = fmt.Sprintf(MetricGatePendingMessageFmt, rec.SuccessesInARow, rec.SuccessesRequired, rec.Failures, rec.FailureLimit, lastEvaluation(rec))
	return true, minDuration(interval, rec.Deadline.Sub(now))
}

// judge turns what Prometheus returned into an evaluation: it passes when
// every sample holds the threshold, and errs when there is no sample.
func judge(g *fleet.MetricGate, res MetricResult, now time.Time) fleet.MetricEvaluation {
	e := fleet.MetricEvaluation{Time: metav1.NewTime(now), Result: fleet.MetricEvaluationPass}
	if res.Err != nil {
		e.Result, e.Error = fleet.MetricEvaluationError, res.Err.Error()
		return e
	}
	if len(res.Samples) == 0 {
		e.Result, e.Error = fleet.MetricEvaluationError, "the query returned no data"
		return e
	}
	for _, s := range res.Samples {
		e.Values = append(e.Values, fleet.MetricSample{Cluster: s.Cluster, Series: s.Series, Value: strconv.FormatFloat(s.Value, 'g', -1, 64)})
		if !g.Threshold.Holds(s.Value) {
			e.Result = fleet.MetricEvaluationFail
		}
	}
	return e
}

// failingValues names the samples of e that do not hold the threshold.
func failingValues(g *fleet.MetricGate, e fleet.MetricEvaluation) string {
	var out []string
	for _, s := range e.Values {
		v, err := strconv.ParseFloat(s.Value, 64)
		if err == nil && !g.Threshold.Holds(v) {
			out = append(out, fmt.Sprintf("%s for %s", s.Value, s.Where()))
		}
	}
	return strings.Join(out, ", ")
}

// lastEvaluation says what the latest evaluation found, for messages.
func lastEvaluation(rec *fleet.MetricGateRecord) string {
	n := len(rec.Evaluations)
	if n == 0 {
		return "none"
	}
	e := rec.Evaluations[n-1]
	if e.Result == fleet.MetricEvaluationError {
		return fmt.Sprintf("%s at %s: %s", e.Result, e.Time.UTC().Format(time.RFC3339), e.Error)
	}
	vals := make([]string, len(e.Values))
	for i, s := range e.Values {
		vals[i] = fmt.Sprintf("%s=%s", s.Where(), s.Value)
	}
	return fmt.Sprintf("%s at %s (%s)", e.Result, e.Time.UTC().Format(time.RFC3339), strings.Join(vals, ", "))
}

func minDuration(a, b time.Duration) time.Duration {
	if b < a {
		return b
	}
	return a
}

// metricGate decides a Metric task's request that no person decided: it
// steps the gate, writes the evidence to the request, and reports the
// request approved (by the gate), still pending (after: when to look
// again; 0 once it timed out and waits for a person), or an error that
// fails the stage; a failed per-cluster gate the failure budget absorbs
// instead marks the task done (countGateFailures).
func (p *pass) metricGate(task *fleet.StageTaskStatus, ar *fleet.ApprovalRequest, g *fleet.MetricGate, stage *fleet.StageUpdatingStatus) (approved bool, after time.Duration, err error) {
	rec := ar.Status.MetricGate
	changed := false
	if rec == nil {
		rec = NewMetricGateRecord(g, p.now)
		ar.Status.MetricGate = rec
		changed = true
	}
	clusters := make([]string, len(stage.Clusters))
	for i, c := range stage.Clusters {
		clusters[i] = c.ClusterName
	}
	q := MetricQuery{Run: p.key(), Request: ar.Name, PrometheusURL: g.PrometheusURL, Queries: MetricQueries(g, clusters)}
	counter, _ := p.r.Metrics.(GateRecorder)
	stepped, after := StepMetricGate(g, rec, p.now, p.r.Gates, q, counter)
	changed = changed || stepped
	switch rec.Verdict {
	case fleet.MetricGatePassed:
		p.setOnRequest(ar, metav1.ConditionTrue, fleet.MetricGatePassedReason, rec.Message)
		p.log.Info("metric gate passed", "approval_request", ar.Name, "message", rec.Message)
		return true, 0, nil // the caller accepts and writes the request
	case fleet.MetricGateFailed:
		p.setOnRequest(ar, metav1.ConditionFalse, fleet.MetricGateFailedReason, rec.Message)
		if err := p.r.Hub.UpdateApprovalRequestStatus(p.ctx, ar); err != nil {
			return false, 0, fmt.Errorf("recording the metric gate of approval request %s: %w", ar.Name, err)
		}
		p.set(&task.Conditions, fleet.StageTaskConditionApprovalRequestApproved, metav1.ConditionFalse, fleet.MetricGateFailedReason, rec.Message)
		p.log.Info("metric gate failed", "approval_request", ar.Name, "message", rec.Message)
		if counted, err := p.countGateFailures(task, ar, g, rec, stage); counted {
			return false, 0, err
		}
		return false, 0, abortf("%s", fmt.Sprintf(MetricGateRunFailedMessageFmt, ar.Name, rec.Message))
	}
	if changed {
		if err := p.r.Hub.UpdateApprovalRequestStatus(p.ctx, ar); err != nil {
			return false, 0, fmt.Errorf("recording the metric gate of approval request %s: %w", ar.Name, err)
		}
	}
	if rec.Verdict == fleet.MetricGateTimedOut {
		p.set(&task.Conditions, fleet.StageTaskConditionApprovalRequestApproved, metav1.ConditionFalse, fleet.MetricGateTimedOutReason, rec.Message)
		return false, 0, nil
	}
	p.set(&task.Conditions, fleet.StageTaskConditionApprovalRequestApproved, metav1.ConditionFalse, fleet.MetricGatePendingReason, rec.Message)
	return false, after, nil
}

// setOnRequest sets the request's Approved condition as the gate decided
// it, at the request's generation.
func (p *pass) setOnRequest(ar *fleet.ApprovalRequest, status metav1.ConditionStatus, reason, msg string) {
	p.set(&ar.Status.Conditions, fleet.ApprovalRequestConditionApproved, status, reason, msg)
	// The request's own generation, not the run's.
	find(ar.Status.Conditions, fleet.ApprovalRequestConditionApproved).ObservedGeneration = ar.Generation
}

// personDecided records, on the evidence of a gate that had not decided,
// that a person approved its request or rejected it.
func personDecided(ar *fleet.ApprovalRequest, what string) {
	rec := ar.Status.MetricGate
	if rec == nil || (rec.Verdict != fleet.MetricGatePending && rec.Verdict != fleet.MetricGateTimedOut) {
		return
	}
	by := ar.Annotations[fleet.ApprovedByAnnotation]
	if by == "" {
		by = "a person"
	}
	rec.Verdict = fleet.MetricGateOverridden
	rec.Message = fmt.Sprintf(MetricGateOverriddenMessageFmt, what, by)
}

// isRejected reports whether a person rejected the request: Approved=False
// at its generation, with a reason that is not the gate's.
func isRejected(ar *fleet.ApprovalRequest) (*metav1.Condition, bool) {
	c := find(ar.Status.Conditions, fleet.ApprovalRequestConditionApproved)
	if c == nil || c.Status != metav1.ConditionFalse || c.ObservedGeneration != ar.Generation || strings.HasPrefix(c.Reason, "MetricGate") {
		return nil, false
	}
	return c, true
}

// countGateFailures lets the failure budget decide a failed per-cluster
// ($cluster) gate of a run with a failure policy (issue 29): the clusters
// whose values failed the last evaluation fail, as any failed cluster of
// the stage; over the stage's budget the run fails as the budget rules
// say, within it the task is done and the stage goes on. counted is false
// when the gate fails the run as it always did: an aggregate query, no
// failure policy, or no cluster of the stage to name.
func (p *pass) countGateFailures(task *fleet.StageTaskStatus, ar *fleet.ApprovalRequest, g *fleet.MetricGate, rec *fleet.MetricGateRecord, stage *fleet.StageUpdatingStatus) (counted bool, err error) {
	idx := slices.IndexFunc(p.run.Status.StagesStatus, func(s fleet.StageUpdatingStatus) bool { return s.StageName == stage.StageName })
	if p.run.Spec.FailurePolicy == nil || !perClusterQuery(g) || idx < 0 || len(rec.Evaluations) == 0 {
		return false, nil
	}
	values := map[string][]string{}
	for _, s := range rec.Evaluations[len(rec.Evaluations)-1].Values {
		if v, err := strconv.ParseFloat(s.Value, 64); err == nil && s.Cluster != "" && !g.Threshold.Holds(v) {
			values[s.Cluster] = append(values[s.Cluster], s.Value)
		}
	}
	var failed []string
	for i := range stage.Clusters {
		cs := &stage.Clusters[i]
		vals, ok := values[cs.ClusterName]
		if !ok || isFalse(find(cs.Conditions, fleet.ClusterUpdatingConditionSucceeded), p.gen) {
			continue // already failed: it counts once, with its first cause
		}
		p.markClusterFailed(stage.StageName, cs, fmt.Sprintf(MetricGateClusterFailedMessageFmt, ar.Name, rec.Query, strings.Join(vals, ", "), rec.Threshold))
		failed = append(failed, cs.ClusterName)
	}
	if len(failed) == 0 {
		return false, nil
	}
	b, err := p.stageBudget(idx)
	if err != nil {
		return true, abortf("%s", err)
	}
	for i := range stage.Clusters {
		b.failedCluster(&stage.Clusters[i], p.gen)
	}
	if b.exceeded() {
		return true, b.exceededErr()
	}
	p.set(&task.Conditions, fleet.StageTaskConditionApprovalRequestApproved, metav1.ConditionTrue, fleet.MetricGateFailedWithinBudgetReason,
		fmt.Sprintf(MetricGateWithinBudgetMessageFmt, rec.Message, len(failed), stage.StageName, BudgetString(b.value, b.budget, b.n), strings.Join(failed, ", ")))
	p.log.Info("metric gate failed within the failure budget", "approval_request", ar.Name, "clusters", failed)
	return true, nil
}

// perClusterQuery reports whether a gate runs one query per cluster.
func perClusterQuery(g *fleet.MetricGate) bool {
	return !strings.Contains(g.Query, fleet.MetricQueryClustersPlaceholder) && strings.Contains(g.Query, fleet.MetricQueryClusterPlaceholder)
}
