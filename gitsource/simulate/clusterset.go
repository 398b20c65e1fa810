package simulate

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// notUpdated names the placement's clusters a finished run did not update
// (spec.clusterSet): skipped because they left, left out because no stage
// selects them, pending because they joined after initialization; "" when
// it updated all of them.
func notUpdated(r *fleet.UpdateRun) string {
	var skipped []string
	for _, s := range r.Status.StagesStatus {
		for _, c := range s.Clusters {
			if meta.IsStatusConditionTrue(c.Conditions, fleet.ClusterUpdatingConditionSkipped) {
				skipped = append(skipped, c.ClusterName)
			}
		}
	}
	var parts []string
	for _, p := range []struct {
		what     string
		clusters []string
	}{
		{"skipped (left the placement)", skipped},
		{"left out (no stage selects them)", r.Status.UnmatchedClusters},
		{"pending (joined after initialization)", r.Status.PendingClusters},
	} {
		if len(p.clusters) > 0 {
			parts = append(parts, p.what+": "+strings.Join(p.clusters, ", "))
		}
	}
	return strings.Join(parts, "; ")
}
