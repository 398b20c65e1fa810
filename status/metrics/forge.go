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

// Forge counts the forge's failures. It has its own registration because
// only a serve with --forge talks to a forge.
type Forge struct {
	errors *prometheus.CounterVec
}

// NewForge creates the forge metrics and registers them with reg (nil: not
// registered). Each pair of operations and classes (the callers' names for
// them) is exported at 0 from the start.
func NewForge(reg prometheus.Registerer, operations, classes []string) *Forge {
	f := &Forge{errors: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: ForgeAPIErrorsTotal,
		Help: "Forge API calls that failed and will be retried, by operation (pull_request, withdraw, commit_status, comment) and class (unreachable, unauthorized, forbidden, not_found, rate_limited, rejected, server_error, other).",
	}, []string{LabelOperation, LabelClass})}
	for _, op := range operations {
		for _, class := range classes {
			f.errors.WithLabelValues(op, class)
		}
	}
	if reg != nil {
		reg.MustRegister(f.errors)
	}
	return f
}

// ObserveError counts one failed call.
func (f *Forge) ObserveError(operation, class string) {
	f.errors.WithLabelValues(operation, class).Inc()
}
