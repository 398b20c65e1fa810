package gitops

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/updaterun"
)

// failureBudget is what the approval pull request says of a run with a
// failure policy (README "When clusters fail"): how long a cluster may
// take, and per stage how many clusters may fail and which did.
type failureBudget struct {
	MaxWaitMinutes int
	Stages         []stageBudget
}

type stageBudget struct {
	Name string
	// Budget is the resolved budget as the engine's messages say it
	// ("1", "1 (10% of 10 clusters)").
	Budget string
	Failed []string
}

// failureBudgetOf reads a run's budget and its failed clusters; nil for a
// run without a failure policy.
func failureBudgetOf(run *fleet.UpdateRun) *failureBudget {
	policy := run.Spec.FailurePolicy
	snap := run.Status.StagedUpdateStrategySnapshot
	if policy == nil || snap == nil {
		return nil
	}
	fb := &failureBudget{MaxWaitMinutes: int(updaterun.MaxWaitPerCluster(policy).Minutes())}
	for i, s := range run.Status.StagesStatus {
		if i >= len(snap.Stages) {
			break
		}
		n := len(s.Clusters)
		allowed, _, err := updaterun.StageBudget(policy, &snap.Stages[i], n)
		if err != nil {
			continue
		}
		sb := stageBudget{Name: s.StageName, Budget: updaterun.BudgetString(updaterun.BudgetValue(policy, &snap.Stages[i]), allowed, n)}
		for _, c := range s.Clusters {
			if sc := meta.FindStatusCondition(c.Conditions, fleet.ClusterUpdatingConditionSucceeded); sc != nil && sc.Status == metav1.ConditionFalse {
				sb.Failed = append(sb.Failed, c.ClusterName)
			}
		}
		fb.Stages = append(fb.Stages, sb)
	}
	return fb
}

// write adds the body's "Failure budget" section.
func (fb *failureBudget) write(w func(format string, args ...any)) {
	if fb == nil {
		return
	}
	w("\n### Failure budget\n\n")
	w("A cluster not available within %d minutes of its start fails; a stage goes on while no more of its clusters fail than it may lose.\n\n", fb.MaxWaitMinutes)
	w("| stage | may fail | failed |\n|---|---|---|\n")
	for _, s := range fb.Stages {
		failed := "none"
		if len(s.Failed) > 0 {
			failed = strings.Join(s.Failed, ", ")
		}
		w("| %s | %s | %s |\n", s.Name, s.Budget, failed)
	}
}
