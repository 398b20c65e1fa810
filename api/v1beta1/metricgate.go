package v1beta1

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Metric gates are gitfleet's (issue 29; KubeFleet has none: its
// metric-driven auto-approver, PR #344, left the core repository unmerged).
// A Metric task is an approval that PromQL decides: it opens the stage's
// approval request as an Approval task does, evaluates its query against a
// Prometheus every interval, and approves the request itself once enough
// evaluations in a row pass, or fails the stage once too many fail. The
// evidence — every evaluation's time, the value per cluster or series, the
// threshold and the verdict — is the request's status.metricGate, written
// to its approvals/ file in the commit that approves. A person may still
// approve (or reject) the request by merge before the gate decides.

// StageTaskTypeMetric is the type of a metric gate task.
const StageTaskTypeMetric StageTaskType = "Metric"

// The placeholders a metric gate's query may hold.
const (
	// MetricQueryClusterPlaceholder makes the gate run one query per
	// cluster of the stage, with the cluster's name in its place.
	MetricQueryClusterPlaceholder = "$cluster"
	// MetricQueryClustersPlaceholder becomes a regular expression that
	// matches exactly the stage's clusters (`{cluster=~"$clusters"}`).
	MetricQueryClustersPlaceholder = "$clusters"
)

// Defaults of a metric gate.
const (
	DefaultMetricGateInterval = time.Minute
	DefaultMetricGateTimeout  = 30 * time.Minute
)

// MetricGate is the metric block of a Metric task: a PromQL query whose
// every value must satisfy the threshold.
type MetricGate struct {
	// Query is an instant PromQL query. Every sample it returns must
	// satisfy the threshold; a query that returns nothing does not pass.
	// $cluster runs it once per cluster of the stage; $clusters stands for
	// a regular expression matching the stage's clusters.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	Query string `json:"query"`
	// +kubebuilder:validation:Required
	Threshold MetricThreshold `json:"threshold"`
	// Interval is the time between evaluations (default 1m).
	// +kubebuilder:validation:Pattern="^(?:(?:0|[1-9][0-9]*)(\\.[0-9]+)?(?:s|m|h))+$"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Optional
	Interval *metav1.Duration `json:"interval,omitempty"`
	// SuccessesRequired is how many evaluations in a row must pass
	// (default 1); a failing evaluation starts the count again.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Optional
	SuccessesRequired int32 `json:"successesRequired,omitempty"`
	// FailureLimit is how many failing evaluations the gate tolerates: one
	// more fails the stage (default 0, the first failure fails it).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Optional
	FailureLimit int32 `json:"failureLimit,omitempty"`
	// Timeout ends an undecided gate, counted from its first evaluation
	// (default 30m): it approves nothing and waits for a person.
	// +kubebuilder:validation:Pattern="^(?:(?:0|[1-9][0-9]*)(\\.[0-9]+)?(?:s|m|h))+$"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// PrometheusURL names another Prometheus for this gate than
	// `gitfleet serve --prometheus-url`. serve queries it only if it is one
	// of its --prometheus-allowed-url (anyone who can push writes gates);
	// any other URL is an error of every evaluation, and the gate times out.
	// +kubebuilder:validation:Optional
	PrometheusURL string `json:"prometheusURL,omitempty"`
}

// MetricThreshold is `value <operator> threshold`.
type MetricThreshold struct {
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Pattern="^(<|<=|>|>=|==|!=)$"
	Operator string `json:"operator"`
	// Value is a decimal number, written as a string ("0.05").
	// +kubebuilder:validation:Required
	Value string `json:"value"`
}

// String is the threshold as the evidence records it: "< 0.05".
func (t MetricThreshold) String() string { return t.Operator + " " + t.Value }

// Holds reports whether v satisfies the threshold; a threshold that does
// not parse holds for nothing (validation refuses it first).
func (t MetricThreshold) Holds(v float64) bool {
	want, err := strconv.ParseFloat(t.Value, 64)
	if err != nil {
		return false
	}
	switch t.Operator {
	case "<":
		return v < want
	case "<=":
		return v <= want
	case ">":
		return v > want
	case ">=":
		return v >= want
	case "==":
		return v == want
	case "!=":
		return v != want
	}
	return false
}

// IntervalOrDefault, SuccessesOrDefault and TimeoutOrDefault apply the
// defaults of unset fields.
func (g *MetricGate) IntervalOrDefault() time.Duration {
	if g.Interval == nil || g.Interval.Duration <= 0 {
		return DefaultMetricGateInterval
	}
	return g.Interval.Duration
}

func (g *MetricGate) SuccessesOrDefault() int32 {
	if g.SuccessesRequired < 1 {
		return 1
	}
	return g.SuccessesRequired
}

func (g *MetricGate) TimeoutOrDefault() time.Duration {
	if g.Timeout == nil || g.Timeout.Duration <= 0 {
		return DefaultMetricGateTimeout
	}
	return g.Timeout.Duration
}

// MetricGateVerdict is where a metric gate stands.
type MetricGateVerdict string

const (
	MetricGatePending  MetricGateVerdict = "Pending"
	MetricGatePassed   MetricGateVerdict = "Passed"
	MetricGateFailed   MetricGateVerdict = "Failed"
	MetricGateTimedOut MetricGateVerdict = "TimedOut"
	// MetricGateOverridden: a person approved or rejected the request
	// before the gate decided.
	MetricGateOverridden MetricGateVerdict = "Overridden"
)

// MetricEvaluationResult is the outcome of one evaluation.
type MetricEvaluationResult string

const (
	MetricEvaluationPass MetricEvaluationResult = "Pass"
	MetricEvaluationFail MetricEvaluationResult = "Fail"
	// MetricEvaluationError: Prometheus could not be asked or the query
	// returned nothing; it neither passes nor fails (the gate waits).
	MetricEvaluationError MetricEvaluationResult = "Error"
)

// MaxMetricGateEvaluations is how many evaluations the evidence keeps,
// the latest; the counts cover all of them.
const MaxMetricGateEvaluations = 30

// MetricGateRecord is the evidence of a metric gate, on its approval
// request (status.metricGate).
type MetricGateRecord struct {
	// Query is the gate's query as written; PrometheusURL the Prometheus
	// asked.
	Query         string `json:"query"`
	PrometheusURL string `json:"prometheusURL,omitempty"`
	// Threshold is "<operator> <value>".
	Threshold         string            `json:"threshold"`
	SuccessesRequired int32             `json:"successesRequired"`
	FailureLimit      int32             `json:"failureLimit"`
	StartTime         metav1.Time       `json:"startTime"`
	Deadline          metav1.Time       `json:"deadline"`
	Verdict           MetricGateVerdict `json:"verdict"`
	Message           string            `json:"message,omitempty"`
	// SuccessesInARow and Failures count every evaluation, also those no
	// longer listed.
	SuccessesInARow int32 `json:"successesInARow"`
	Failures        int32 `json:"failures"`
	EvaluationCount int32 `json:"evaluationCount"`
	// Evaluations are the latest MaxMetricGateEvaluations, oldest first.
	Evaluations []MetricEvaluation `json:"evaluations,omitempty"`
}

// MetricEvaluation is one evaluation of a gate's query (or queries, one
// per cluster).
type MetricEvaluation struct {
	Time   metav1.Time            `json:"time"`
	Result MetricEvaluationResult `json:"result"`
	Values []MetricSample         `json:"values,omitempty"`
	Error  string                 `json:"error,omitempty"`
}

// MetricSample is one value a query returned: per cluster (the $cluster
// query of that cluster, or the series' cluster label) or per series.
type MetricSample struct {
	Cluster string `json:"cluster,omitempty"`
	Series  string `json:"series,omitempty"`
	Value   string `json:"value"`
}

// Where a sample comes from, as messages name it.
func (s MetricSample) Where() string {
	switch {
	case s.Cluster != "":
		return "cluster " + s.Cluster
	case s.Series != "":
		return s.Series
	}
	return "the query"
}

// Reasons of the approval request's Approved condition and of the task's
// ApprovalRequestApproved condition that a metric gate writes (gitfleet's).
const (
	MetricGatePassedReason   = "MetricGatePassed"
	MetricGatePendingReason  = "MetricGatePending"
	MetricGateFailedReason   = "MetricGateFailed"
	MetricGateTimedOutReason = "MetricGateTimedOut"
	// MetricGateFailedWithinBudgetReason is the task's: a per-cluster gate
	// failed on clusters the stage's failure budget can lose, so it counted
	// them as failed clusters and the stage goes on.
	MetricGateFailedWithinBudgetReason = "MetricGateFailedWithinBudget"
	// MetricGateOverriddenReason is the task's: a person decided.
	MetricGateOverriddenReason = "MetricGateOverriddenByPerson"
)

// validateStageTasks checks the metric blocks of a task list: a Metric
// task needs one, no other type may have one, and a Metric task cannot
// share its list with an Approval task (both would be the same approval
// request).
func validateStageTasks(tasks []StageTask, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	var approval, metric bool
	for i := range tasks {
		t := &tasks[i]
		tp := p.Index(i)
		switch {
		case t.Type == StageTaskTypeMetric && t.Metric == nil:
			errs = append(errs, field.Required(tp.Child("metric"), "a task of type Metric needs a metric block"))
		case t.Type != StageTaskTypeMetric && t.Metric != nil:
			errs = append(errs, field.Forbidden(tp.Child("metric"), fmt.Sprintf("only a task of type Metric has a metric block, not %s", t.Type)))
		case t.Metric != nil:
			errs = append(errs, validateMetricGate(t.Metric, tp.Child("metric"))...)
			if t.WaitTime != nil {
				errs = append(errs, field.Forbidden(tp.Child("waitTime"), "a task of type Metric has no waitTime (use metric.timeout)"))
			}
		}
		approval = approval || t.Type == StageTaskTypeApproval
		metric = metric || t.Type == StageTaskTypeMetric
	}
	if approval && metric {
		errs = append(errs, field.Invalid(p, "Approval, Metric", "a task list cannot hold both an Approval and a Metric task: they would share one approval request"))
	}
	return errs
}

func validateMetricGate(g *MetricGate, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if strings.TrimSpace(g.Query) == "" {
		errs = append(errs, field.Required(p.Child("query"), "a PromQL query"))
	}
	if strings.Contains(strings.ReplaceAll(g.Query, MetricQueryClustersPlaceholder, ""), MetricQueryClusterPlaceholder) &&
		strings.Contains(g.Query, MetricQueryClustersPlaceholder) {
		errs = append(errs, field.Invalid(p.Child("query"), g.Query, "use $cluster (one query per cluster) or $clusters (one query over the stage's clusters), not both"))
	}
	switch g.Threshold.Operator {
	case "<", "<=", ">", ">=", "==", "!=":
	default:
		errs = append(errs, field.NotSupported(p.Child("threshold", "operator"), g.Threshold.Operator, []string{"<", "<=", ">", ">=", "==", "!="}))
	}
	if _, err := strconv.ParseFloat(g.Threshold.Value, 64); err != nil {
		errs = append(errs, field.Invalid(p.Child("threshold", "value"), g.Threshold.Value, "not a decimal number"))
	}
	if g.Interval != nil && g.Interval.Duration <= 0 {
		errs = append(errs, field.Invalid(p.Child("interval"), g.Interval.Duration.String(), "must be positive"))
	}
	if g.Timeout != nil && g.Timeout.Duration <= 0 {
		errs = append(errs, field.Invalid(p.Child("timeout"), g.Timeout.Duration.String(), "must be positive"))
	}
	if g.SuccessesRequired < 0 {
		errs = append(errs, field.Invalid(p.Child("successesRequired"), g.SuccessesRequired, "must be at least 1"))
	}
	if g.FailureLimit < 0 {
		errs = append(errs, field.Invalid(p.Child("failureLimit"), g.FailureLimit, "must be at least 0"))
	}
	if g.PrometheusURL != "" && !strings.HasPrefix(g.PrometheusURL, "http://") && !strings.HasPrefix(g.PrometheusURL, "https://") {
		errs = append(errs, field.Invalid(p.Child("prometheusURL"), g.PrometheusURL, "an http:// or https:// URL"))
	}
	return errs
}
