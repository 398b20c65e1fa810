package plan

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// clusterSet fills in what a run covers beyond its stages (spec.clusterSet
// and spec.retryOf): the run it retries and the clusters it leaves out,
// leaves to the next run or skips.
func clusterSet(r *fleet.UpdateRun, run *Run) {
	run.RetryOf = r.Spec.RetryOf
	run.Unmatched = r.Status.UnmatchedClusters
	run.Pending = r.Status.PendingClusters
	for _, s := range r.Status.StagesStatus {
		for _, c := range s.Clusters {
			if meta.IsStatusConditionTrue(c.Conditions, fleet.ClusterUpdatingConditionSkipped) {
				run.Skipped = append(run.Skipped, c.ClusterName)
			}
		}
	}
}

// clusterSetLines say, one line each, what the run retries and which
// clusters it does not update; none for a run that covers its placement.
func clusterSetLines(r Run) []string {
	var out []string
	if r.RetryOf != "" {
		out = append(out, fmt.Sprintf("retries %s: its resource snapshot and strategy, on exactly its clusters that did not succeed", r.RetryOf))
	}
	if len(r.Unmatched) > 0 {
		out = append(out, fmt.Sprintf("no stage selects %d cluster(s): %s", len(r.Unmatched), strings.Join(r.Unmatched, ", ")))
	}
	if len(r.Pending) > 0 {
		out = append(out, fmt.Sprintf("joined after initialization, left to the next run: %s", strings.Join(r.Pending, ", ")))
	}
	if len(r.Skipped) > 0 {
		out = append(out, fmt.Sprintf("left the placement, skipped (a run with retryOf: %s takes them): %s", r.Name, strings.Join(r.Skipped, ", ")))
	}
	return out
}
