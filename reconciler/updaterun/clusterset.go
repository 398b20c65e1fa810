package updaterun

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// A run's cluster set (spec.clusterSet, gitfleet's): what initialization
// does with picked clusters no stage selects, and what validation does
// when the placement's clusters change under an initialized run. Unset,
// both are KubeFleet's: the run fails.

// ClusterLeftPlacementMessageFmt is the message of the Skipped condition of
// a stage cluster that left the placement under a run that freezes its
// cluster set; it takes the cluster.
const ClusterLeftPlacementMessageFmt = "the cluster `%s` left the placement after the updateRun was initialized; the updateRun goes on without it"

// ClusterRejoinedMessageFmt is the message of the Skipped condition of a
// deletion-stage cluster the placement picked again under a run that
// freezes its cluster set: the run does not delete it, the next run
// updates it. It takes the cluster.
const ClusterRejoinedMessageFmt = "the cluster `%s` joined the placement again after the updateRun was initialized; the updateRun does not delete it"

// unmatchedClustersFmt is KubeFleet's initialization error for picked
// clusters no stage selects (the condition shows up to 10 of them; the
// run's status.unmatchedClusters lists all).
const unmatchedClustersFmt = "some clusters are not placed in any stage, total %d, showing up to 10: %s"

// UnmatchedOverAllowedFmt follows KubeFleet's message when clusterSet's
// unmatched: Allow leaves out fewer clusters than there are; it takes
// maxUnmatched as written and resolved.
const UnmatchedOverAllowedFmt = ", more than clusterSet.maxUnmatched allows (%s: %d)"

// leaveOutUnmatched applies the run's unmatched policy to the picked
// clusters that no stage placed (spec §2.2 step 5, last check). Every one
// of them is recorded in st.UnmatchedClusters, sorted; Fail, and Allow
// over its limit, fail as KubeFleet does.
func (p *pass) leaveOutUnmatched(scheduled, placed map[string]bool, st *fleet.UpdateRunStatus) error {
	var missing []string
	for c := range scheduled {
		if !placed[c] {
			missing = append(missing, c)
		}
	}
	st.UnmatchedClusters = nil
	if len(missing) == 0 {
		return nil
	}
	sort.Strings(missing)
	st.UnmatchedClusters = missing
	cs := p.run.Spec.ClusterSet
	allowed, over := 0, ""
	switch cs.UnmatchedAction() {
	case fleet.UnmatchedClustersIgnore:
		return nil
	case fleet.UnmatchedClustersAllow:
		n, err := intstr.GetScaledValueFromIntOrPercent(cs.MaxUnmatched, len(scheduled), true)
		if err != nil {
			return validationAbort(userErr("invalid clusterSet.maxUnmatched %s: %s", cs.MaxUnmatched.String(), err))
		}
		if allowed = n; len(missing) <= allowed {
			return nil
		}
		over = fmt.Sprintf(UnmatchedOverAllowedFmt, cs.MaxUnmatched.String(), allowed)
	}
	shown := missing
	if len(shown) > 10 {
		shown = shown[:10]
	}
	return validationAbort(userErr(unmatchedClustersFmt, len(missing), strings.Join(shown, ", ")) + over)
}

// freezeClusterSet keeps an initialized run to the clusters it was
// initialized with (clusterSet.whenChanged: Freeze, KubeFleet #845): a
// stage cluster the placement no longer picks is skipped, unless it has
// already finished; clusters picked since are listed as pending, for the
// next run. It replaces validation's comparison of the recorded stages
// with the derived ones (spec §2.3 step 4).
func (p *pass) freezeClusterSet(pl *plan) {
	st := &p.run.Status
	known := make(map[string]bool, len(pl.bindings.names))
	for i := range st.StagesStatus {
		stage := &st.StagesStatus[i]
		for j := range stage.Clusters {
			cs := &stage.Clusters[j]
			known[cs.ClusterName] = true
			if _, picked := pl.bindings.names[cs.ClusterName]; picked || p.skipped(cs) {
				continue
			}
			if s := find(cs.Conditions, fleet.ClusterUpdatingConditionSucceeded); isTrue(s, p.gen) || isFalse(s, p.gen) {
				continue
			}
			p.set(&cs.Conditions, fleet.ClusterUpdatingConditionSkipped, metav1.ConditionTrue,
				fleet.ClusterLeftPlacementReason, fmt.Sprintf(ClusterLeftPlacementMessageFmt, cs.ClusterName))
			p.log.Info("skipped a cluster that left the placement", "stage", stage.StageName, "cluster", cs.ClusterName)
		}
	}
	if del := st.DeletionStageStatus; del != nil {
		for j := range del.Clusters {
			cs := &del.Clusters[j]
			if _, picked := pl.bindings.names[cs.ClusterName]; !picked || p.skipped(cs) ||
				isTrue(find(cs.Conditions, fleet.ClusterUpdatingConditionStarted), p.gen) {
				continue
			}
			p.set(&cs.Conditions, fleet.ClusterUpdatingConditionSkipped, metav1.ConditionTrue,
				fleet.ClusterJoinedPlacementReason, fmt.Sprintf(ClusterRejoinedMessageFmt, cs.ClusterName))
		}
	}
	if p.run.Spec.RetryOf != "" {
		// A retry covers what its retried run left; the rest of the
		// placement's clusters are no concern of it.
		st.PendingClusters = nil
		return
	}
	for _, c := range st.UnmatchedClusters {
		known[c] = true
	}
	var pending []string
	for c := range pl.bindings.names {
		if !known[c] {
			pending = append(pending, c)
		}
	}
	sort.Strings(pending)
	st.PendingClusters = pending
}

// skipped reports whether the run skipped a stage cluster: it counts as
// finished, neither succeeded nor failed.
func (p *pass) skipped(cs *fleet.ClusterUpdatingStatus) bool {
	return isTrue(find(cs.Conditions, fleet.ClusterUpdatingConditionSkipped), p.gen)
}

// frozenDeletions keeps, of the bindings to delete, those of the clusters
// the run's deletion stage lists: under a frozen cluster set a cluster
// that leaves later is the next run's to delete.
func frozenDeletions(toDelete []*fleet.Binding, del *fleet.StageUpdatingStatus) []*fleet.Binding {
	if del == nil {
		return nil
	}
	listed := make(map[string]bool, len(del.Clusters))
	for _, c := range del.Clusters {
		listed[c.ClusterName] = true
	}
	var kept []*fleet.Binding
	for _, b := range toDelete {
		if listed[b.Spec.TargetCluster] {
			kept = append(kept, b)
		}
	}
	return kept
}
