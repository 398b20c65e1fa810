package updaterun

import (
	"k8s.io/apimachinery/pkg/util/intstr"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// MaxConcurrency is how many clusters of a stage of size clusters may be in
// flight at once (spec §3.3): an int as given (it may exceed the stage), a
// percentage of the stage rounded down; never less than 1. Nil means the
// API default, 1.
func MaxConcurrency(mc *intstr.IntOrString, clusters int) (int, error) {
	if mc == nil {
		return 1, nil
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(mc, clusters, false)
	if err != nil {
		return 0, err
	}
	if n < 1 {
		n = 1
	}
	return n, nil
}

func stageMaxConcurrency(st *fleet.UpdateRunStatus, i int) (int, error) {
	return MaxConcurrency(st.StagedUpdateStrategySnapshot.Stages[i].MaxConcurrency, len(st.StagesStatus[i].Clusters))
}
