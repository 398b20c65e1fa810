package updaterun

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// A run's failure policy (issue 26, README "When clusters fail"): with
// spec.failurePolicy a cluster that is not done within
// maxWaitTimePerClusterMinutes of its start fails, and each stage may lose
// up to its budget of clusters (the stage's own maxAllowedClusterFailures,
// else the run's) and go on. Without one nothing here applies and a run
// behaves exactly as KubeFleet's.

// Messages of a failure policy (gitfleet's; KubeFleet PR #925 has no
// controller yet).
const (
	// ClusterOverdueMessageFmt takes the cluster, the stage, the minutes and
	// what the binding says.
	ClusterOverdueMessageFmt = "the cluster `%s` in the stage `%s` did not finish updating within maxWaitTimePerClusterMinutes %d: %s"
	// BudgetExceededMessageFmt takes the stage, the failed count, the
	// budget (BudgetString) and the failed clusters.
	BudgetExceededMessageFmt = "the failure budget is exceeded: the stage `%s` has %d failed cluster(s), more than maxAllowedClusterFailures %s: %s"
	// RunPartiallySucceededMessageFmt takes the failed count and the failed
	// clusters with their stages.
	RunPartiallySucceededMessageFmt = "All stages are completed, %d cluster(s) failed within the failure budget: %s"
)

// budgetExceededMsg marks a run failed over its budget (FailureType).
const budgetExceededMsg = "the failure budget is exceeded"

// FailureTypeClusterFailure is the failureType of a run failed because
// more clusters failed than its budget allows: neither a user's mistake
// nor gitfleet's, the fleet's (gitfleet's own value).
const FailureTypeClusterFailure = "cluster_failure"

// StageBudget is how many clusters of a stage of n clusters may fail: the
// stage's own maxAllowedClusterFailures, else the run's, else 1 (KubeFleet
// PR #925's default); a percentage is ceil(p·n) (Azure Fleet's rounding).
// ok is false for a run without a failure policy.
func StageBudget(policy *fleet.FailurePolicy, stage *fleet.StageConfig, n int) (budget int, ok bool, err error) {
	if policy == nil {
		return 0, false, nil
	}
	v := BudgetValue(policy, stage)
	budget, err = intstr.GetScaledValueFromIntOrPercent(&v, n, true)
	if err != nil {
		return 0, true, fmt.Errorf("invalid maxAllowedClusterFailures: %w", err)
	}
	return max(budget, 0), true, nil
}

// BudgetValue is the maxAllowedClusterFailures in force for a stage, as
// written (stage, then run, then the default).
func BudgetValue(policy *fleet.FailurePolicy, stage *fleet.StageConfig) intstr.IntOrString {
	switch {
	case stage != nil && stage.MaxAllowedClusterFailures != nil:
		return *stage.MaxAllowedClusterFailures
	case policy.MaxAllowedClusterFailures != nil:
		return *policy.MaxAllowedClusterFailures
	}
	return intstr.FromInt32(fleet.DefaultMaxAllowedClusterFailures)
}

// BudgetString says a stage's budget as the messages and the plan show it:
// "1", or "1 (10% of 10 clusters)".
func BudgetString(v intstr.IntOrString, budget, n int) string {
	if v.Type == intstr.String {
		return fmt.Sprintf("%d (%s of %d clusters)", budget, v.StrVal, n)
	}
	return fmt.Sprint(budget)
}

// MaxWaitPerCluster is how long a started cluster may take under a
// failure policy (maxWaitTimePerClusterMinutes, default 5).
func MaxWaitPerCluster(policy *fleet.FailurePolicy) time.Duration {
	return time.Duration(maxWaitMinutes(policy)) * time.Minute
}

func maxWaitMinutes(policy *fleet.FailurePolicy) int32 {
	if policy.MaxWaitTimePerClusterMinutes != nil {
		return *policy.MaxWaitTimePerClusterMinutes
	}
	return fleet.DefaultMaxWaitTimePerClusterMinutes
}

// stageBudget tracks one stage's failures during a pass; nil for a run
// without a failure policy, and every method is a no-op then.
type stageBudget struct {
	stage  string
	value  intstr.IntOrString
	budget int
	n      int
	failed []string
}

// stageBudget is the budget of update stage idx, nil without a policy.
func (p *pass) stageBudget(idx int) (*stageBudget, error) {
	st := &p.run.Status
	cfg := &st.StagedUpdateStrategySnapshot.Stages[idx]
	n := len(st.StagesStatus[idx].Clusters)
	budget, ok, err := StageBudget(p.run.Spec.FailurePolicy, cfg, n)
	if !ok || err != nil {
		return nil, err
	}
	return &stageBudget{stage: cfg.Name, value: BudgetValue(p.run.Spec.FailurePolicy, cfg), budget: budget, n: n}, nil
}

// failedCluster reports whether a cluster failed under the budget, and
// counts it: such a cluster is done, it neither blocks nor fails the run.
func (b *stageBudget) failedCluster(cs *fleet.ClusterUpdatingStatus, gen int64) bool {
	if b == nil || !isFalse(find(cs.Conditions, fleet.ClusterUpdatingConditionSucceeded), gen) {
		return false
	}
	b.failed = append(b.failed, cs.ClusterName)
	return true
}

// exceeded reports whether the stage lost more clusters than it may: it
// then starts no more clusters.
func (b *stageBudget) exceeded() bool { return b != nil && len(b.failed) > b.budget }

// exceededErr is the terminal error of a stage over its budget.
func (b *stageBudget) exceededErr() error {
	return abortf(BudgetExceededMessageFmt, b.stage, len(b.failed), BudgetString(b.value, b.budget, b.n), strings.Join(b.failed, ", "))
}

// failIfOverdue fails an in-flight cluster that is past the run's
// maxWaitTimePerClusterMinutes, with what its binding says, and counts it.
// It reports whether it did.
func (p *pass) failIfOverdue(b *stageBudget, bnd *fleet.Binding, cs *fleet.ClusterUpdatingStatus, started *metav1.Condition, cause error) bool {
	if b == nil {
		return false
	}
	policy := p.run.Spec.FailurePolicy
	if p.now.Sub(started.LastTransitionTime.Time) < MaxWaitPerCluster(policy) {
		return false
	}
	why := bindingReport(bnd)
	if cause != nil {
		why = cause.Error() + "; " + why
	}
	p.markClusterFailed(b.stage, cs, fmt.Sprintf(ClusterOverdueMessageFmt, cs.ClusterName, b.stage, maxWaitMinutes(policy), why))
	b.failed = append(b.failed, cs.ClusterName)
	return true
}

// bindingReport says why a binding is not done: its first False delivery
// condition at the binding's generation, else the first one missing.
func bindingReport(b *fleet.Binding) string {
	types := []string{fleet.ResourceBindingOverridden, fleet.ResourceBindingWorkSynchronized,
		fleet.ResourceBindingApplied, fleet.ResourceBindingAvailable}
	for _, t := range types {
		if c := find(b.Status.Conditions, t); isFalse(c, b.Generation) {
			return fmt.Sprintf("binding %s has %s=False (%s): %s", objRef(b), t, c.Reason, c.Message)
		}
	}
	for _, t := range types {
		if !isTrue(find(b.Status.Conditions, t), b.Generation) {
			return fmt.Sprintf("binding %s has no %s condition for its generation %d", objRef(b), t, b.Generation)
		}
	}
	return fmt.Sprintf("binding %s reports no failure", objRef(b))
}

// clusterDone reports whether a stage cluster is finished: succeeded, or
// skipped (a frozen run's cluster that left), or failed under the run's
// failure policy.
func (p *pass) clusterDone(cs *fleet.ClusterUpdatingStatus) bool {
	s := find(cs.Conditions, fleet.ClusterUpdatingConditionSucceeded)
	return isTrue(s, p.gen) || p.skipped(cs) || (p.run.Spec.FailurePolicy != nil && isFalse(s, p.gen))
}

// markPartialSuccess turns a finished run's Succeeded condition into
// UpdateRunPartiallySucceeded when clusters failed within the budget,
// naming them.
func (p *pass) markPartialSuccess() {
	if p.run.Spec.FailurePolicy == nil {
		return
	}
	var failed []string
	for _, s := range p.run.Status.StagesStatus {
		for i := range s.Clusters {
			if isFalse(find(s.Clusters[i].Conditions, fleet.ClusterUpdatingConditionSucceeded), p.gen) {
				failed = append(failed, fmt.Sprintf("%s (stage %s)", s.Clusters[i].ClusterName, s.StageName))
			}
		}
	}
	if len(failed) == 0 {
		return
	}
	p.set(&p.run.Status.Conditions, fleet.StagedUpdateRunConditionSucceeded, metav1.ConditionTrue,
		fleet.UpdateRunPartiallySucceededReason, fmt.Sprintf(RunPartiallySucceededMessageFmt, len(failed), strings.Join(failed, ", ")))
}
