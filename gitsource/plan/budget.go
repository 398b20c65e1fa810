package plan

import (
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/updaterun"
)

// FailureBudget is how many clusters of a stage may fail in a run with a
// failure policy (README "When clusters fail"), and which ones the preview
// saw fail.
type FailureBudget struct {
	// Allowed is the budget resolved for the stage's clusters; Of is
	// maxAllowedClusterFailures as written (the stage's, else the run's).
	Allowed  int    `json:"allowed"`
	Of       string `json:"maxAllowedClusterFailures"`
	Clusters int    `json:"clusters"`
	// Failed are the clusters that failed in the preview (the simulated
	// members' gitfleet.io/sim-* annotations, the run's deadline).
	Failed []string `json:"failed,omitempty"`
	// Exceeded is true when more failed than allowed: the run fails.
	Exceeded bool `json:"exceeded,omitempty"`
	// MaxWaitTimePerClusterMinutes is how long a cluster may take.
	MaxWaitTimePerClusterMinutes int32 `json:"maxWaitTimePerClusterMinutes"`
}

// failureBudget is a stage's budget in run r; nil without a failure policy.
func failureBudget(r *fleet.UpdateRun, spec *fleet.StageConfig, st *fleet.StageUpdatingStatus) *FailureBudget {
	policy := r.Spec.FailurePolicy
	if policy == nil {
		return nil
	}
	n := len(st.Clusters)
	allowed, _, err := updaterun.StageBudget(policy, spec, n)
	if err != nil {
		return nil
	}
	v := updaterun.BudgetValue(policy, spec)
	b := &FailureBudget{Allowed: allowed, Of: v.String(), Clusters: n,
		MaxWaitTimePerClusterMinutes: int32(updaterun.MaxWaitPerCluster(policy).Minutes())}
	for _, c := range st.Clusters {
		if s := meta.FindStatusCondition(c.Conditions, fleet.ClusterUpdatingConditionSucceeded); s != nil && s.Status == metav1.ConditionFalse {
			b.Failed = append(b.Failed, c.ClusterName)
		}
	}
	b.Exceeded = len(b.Failed) > b.Allowed
	return b
}

// writeBudgets says, under a run's stage table, what each stage may lose
// and what the preview used: "member7 may fail without stopping the run:
// budget 1 of 10%".
func writeBudgets(w io.Writer, r Run) {
	for _, s := range r.Stages {
		b := s.FailureBudget
		if b == nil {
			continue
		}
		budget := fmt.Sprintf("budget %d of %s", b.Allowed, b.Of)
		if !strings.HasSuffix(b.Of, "%") {
			budget = fmt.Sprintf("budget %d", b.Allowed)
		}
		where := fmt.Sprintf("stage %s (%d cluster(s), %d used, a cluster fails after %dm)", s.Name, b.Clusters, len(b.Failed), b.MaxWaitTimePerClusterMinutes)
		switch {
		case b.Exceeded:
			fmt.Fprintf(w, "  %s fail the run: over the %s in %s\n", strings.Join(b.Failed, ", "), budget, where)
		case len(b.Failed) > 0:
			fmt.Fprintf(w, "  %s may fail without stopping the run: %s in %s\n", strings.Join(b.Failed, ", "), budget, where)
		default:
			fmt.Fprintf(w, "  failure %s in %s\n", budget, where)
		}
	}
}
