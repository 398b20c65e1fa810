package metrics

import "github.com/prometheus/client_golang/prometheus"

// ForgeAPIErrorsTotal counts failed forge API calls (approval pull
// requests, commit statuses, comments). gitfleet retries them; they never
// hold up a rollout.
const ForgeAPIErrorsTotal = "gitfleet_forge_api_errors_total"

// Labels of ForgeAPIErrorsTotal.
const (
	LabelOperation = "operation"
	LabelClass     = "class"
)

// RollbackPullRequestsTotal counts the rollback proposals of failed runs
// by outcome: RollbackOpened (a pull request opened) or RollbackNoTarget
// (nothing to roll back to, none opened).
const RollbackPullRequestsTotal = "gitfleet_rollback_pull_requests_total"

// LabelOutcome is RollbackPullRequestsTotal's label, and its values.
const (
	LabelOutcome     = "outcome"
	RollbackOpened   = "opened"
	RollbackNoTarget = "no_target"
)

// Forge counts the forge's failures and rollback pull requests. It has its
// own registration because only a serve with --forge talks to a forge.
type Forge struct {
	errors    *prometheus.CounterVec
	rollbacks *prometheus.CounterVec
}

// NewForge creates the forge metrics and registers them with reg (nil: not
// registered). Each pair of operations and classes (the callers' names for
// them) is exported at 0 from the start.
func NewForge(reg prometheus.Registerer, operations, classes []string) *Forge {
	f := &Forge{errors: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: ForgeAPIErrorsTotal,
		Help: "Forge API calls that failed and will be retried, by operation (pull_request, withdraw, commit_status, comment, rollback) and class (unreachable, unauthorized, forbidden, not_found, rate_limited, rejected, server_error, other).",
	}, []string{LabelOperation, LabelClass}),
		rollbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: RollbackPullRequestsTotal,
			Help: "Rollback pull requests of failed runs, by outcome (opened; no_target: nothing to roll back to, none opened).",
		}, []string{LabelOutcome})}
	for _, o := range []string{RollbackOpened, RollbackNoTarget} {
		f.rollbacks.WithLabelValues(o)
	}
	for _, op := range operations {
		for _, class := range classes {
			f.errors.WithLabelValues(op, class)
		}
	}
	if reg != nil {
		reg.MustRegister(f.errors, f.rollbacks)
	}
	return f
}

// ObserveError counts one failed call.
func (f *Forge) ObserveError(operation, class string) {
	f.errors.WithLabelValues(operation, class).Inc()
}

// ObserveRollback counts one rollback proposal's outcome.
func (f *Forge) ObserveRollback(outcome string) {
	f.rollbacks.WithLabelValues(outcome).Inc()
}
