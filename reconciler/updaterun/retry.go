package updaterun

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
)

// A retry (spec.retryOf, gitfleet's; AKS #5733) rolls out what a finished
// run rolled out — its resource snapshot, its strategy snapshot, the same
// override snapshots — to exactly the clusters that did not succeed in
// it: failed, skipped, or never reached. It is refused when that is no
// longer what those clusters should get: the placement has a newer
// resource snapshot, another apply strategy, or other overrides for them.
// A retry deletes nothing: its deletion stage is empty.

// retry is the run a retry retries and the clusters it retries.
type retry struct {
	of       *fleet.UpdateRun
	clusters map[string]bool
}

// Retry refusals: terminal initialization errors (user errors), each
// naming the retried run.
const (
	RetryNotFoundFmt         = "the retried updateRun `%s` is not found"
	RetryOtherPlacementFmt   = "the retried updateRun `%s` is of placement `%s`, not `%s`"
	RetryOtherStrategyFmt    = "the retried updateRun `%s` used strategy `%s`, not `%s`: a retry uses the retried run's strategy"
	RetryNotInitializedFmt   = "the retried updateRun `%s` was never initialized: there is nothing to retry"
	RetryNotFinishedFmt      = "the retried updateRun `%s` has not finished: retry it once it has succeeded or failed"
	RetryNothingFmt          = "every cluster of the retried updateRun `%s` succeeded: there is nothing to retry"
	RetryOtherIndexFmt       = "resourceSnapshotIndex `%s` is not the retried updateRun `%s`'s `%s`: a retry rolls out the same snapshot"
	RetrySnapshotOutdatedFmt = "the retried updateRun `%s` rolled out resource snapshot index `%s`, but the latest of placement `%s` is `%s`: " +
		"its clusters should get the latest, start a new updateRun"
	RetryApplyStrategyFmt = "the applyStrategy of placement `%s` changed since the retried updateRun `%s` (latest: %s, retried: %s): " +
		"its clusters should get the latest, start a new updateRun"
	RetryOverridesFmt = "the overrides of cluster `%s` changed since the retried updateRun `%s`: its clusters should get the latest, start a new updateRun"
)

// retriedRun reads and checks the run spec.retryOf names; nil when the run
// retries nothing.
func (p *pass) retriedRun() (*retry, error) {
	name := p.run.Spec.RetryOf
	if name == "" {
		return nil, nil
	}
	o, err := p.r.Hub.GetUpdateRun(p.ctx, hub.Key{Namespace: p.run.Namespace, Name: name})
	if hub.IsNotFound(err) {
		return nil, validationAbort(userErr(RetryNotFoundFmt, name))
	}
	if err != nil {
		return nil, fmt.Errorf("reading the retried update run %s: %w", name, err)
	}
	switch {
	case o.Spec.PlacementName != p.run.Spec.PlacementName:
		return nil, validationAbort(userErr(RetryOtherPlacementFmt, name, o.Spec.PlacementName, p.run.Spec.PlacementName))
	case o.Spec.StagedUpdateStrategyName != p.run.Spec.StagedUpdateStrategyName:
		return nil, validationAbort(userErr(RetryOtherStrategyFmt, name, o.Spec.StagedUpdateStrategyName, p.run.Spec.StagedUpdateStrategyName))
	case !statusIs(find(o.Status.Conditions, fleet.StagedUpdateRunConditionInitialized), metav1.ConditionTrue) || o.Status.StagedUpdateStrategySnapshot == nil:
		return nil, validationAbort(userErr(RetryNotInitializedFmt, name))
	}
	if c := find(o.Status.Conditions, fleet.StagedUpdateRunConditionSucceeded); !statusIs(c, metav1.ConditionTrue) && !statusIs(c, metav1.ConditionFalse) {
		return nil, validationAbort(userErr(RetryNotFinishedFmt, name))
	}
	if idx := p.run.Spec.ResourceSnapshotIndex; idx != "" && idx != o.Status.ResourceSnapshotIndexUsed {
		return nil, validationAbort(userErr(RetryOtherIndexFmt, idx, name, o.Status.ResourceSnapshotIndexUsed))
	}
	r := &retry{of: o, clusters: map[string]bool{}}
	for _, c := range RetriedClusters(o) {
		r.clusters[c] = true
	}
	if len(r.clusters) == 0 {
		return nil, validationAbort(userErr(RetryNothingFmt, name))
	}
	return r, nil
}

// RetriedClusters are the clusters a retry of run covers: the clusters of
// its update stages that did not succeed, sorted.
func RetriedClusters(run *fleet.UpdateRun) []string {
	var out []string
	for _, s := range run.Status.StagesStatus {
		for _, c := range s.Clusters {
			if !statusIs(find(c.Conditions, fleet.ClusterUpdatingConditionSucceeded), metav1.ConditionTrue) {
				out = append(out, c.ClusterName)
			}
		}
	}
	sort.Strings(out)
	return out
}

// statusIs reads a finished run's condition whatever generation it was
// observed at: a finished run ignores later state changes and is never
// re-stamped.
func statusIs(c *metav1.Condition, s metav1.ConditionStatus) bool { return c != nil && c.Status == s }

// scope keeps the selected bindings of the retried clusters, and no
// binding to delete.
func (r *retry) scope(selected, toDelete []*fleet.Binding) ([]*fleet.Binding, []*fleet.Binding) {
	if r == nil {
		return selected, toDelete
	}
	return scopeTo(r.clusters, selected), nil
}

// retryScope is scope for an initialized retry: its clusters are those it
// recorded, in its stages or left unmatched.
func (p *pass) retryScope(selected, toDelete []*fleet.Binding) ([]*fleet.Binding, []*fleet.Binding) {
	if p.run.Spec.RetryOf == "" {
		return selected, toDelete
	}
	st := &p.run.Status
	recorded := map[string]bool{}
	for _, s := range st.StagesStatus {
		for _, c := range s.Clusters {
			recorded[c.ClusterName] = true
		}
	}
	for _, c := range st.UnmatchedClusters {
		recorded[c] = true
	}
	return scopeTo(recorded, selected), nil
}

func scopeTo(clusters map[string]bool, bindings []*fleet.Binding) []*fleet.Binding {
	var kept []*fleet.Binding
	for _, b := range bindings {
		if clusters[b.Spec.TargetCluster] {
			kept = append(kept, b)
		}
	}
	return kept
}

// recordStrategyOf freezes the strategy: the retried run's snapshot for a
// retry, else the strategy's (spec §2.2 step 4).
func (p *pass) recordStrategyOf(r *retry, st *fleet.UpdateRunStatus) error {
	if r == nil {
		return p.recordStrategy(st)
	}
	st.StagedUpdateStrategySnapshot = r.of.Status.StagedUpdateStrategySnapshot.DeepCopy()
	fleet.SetDefaultsUpdateStrategySpec(st.StagedUpdateStrategySnapshot)
	StripApprovalWaitTimes(st.StagedUpdateStrategySnapshot)
	return nil
}

// recordResourceSnapshotOf resolves the resource snapshot (spec §2.2 step
// 6): a retry's is the retried run's, refused unless it is still the
// placement's latest and rolled out with the same apply strategy.
func (p *pass) recordResourceSnapshotOf(r *retry, placement *fleet.Placement, st *fleet.UpdateRunStatus) error {
	if r == nil {
		return p.recordResourceSnapshot(placement, st)
	}
	pk := p.placementKey()
	want := r.of.Status.ResourceSnapshotIndexUsed
	all, err := p.r.Hub.ListResourceSnapshots(p.ctx, pk)
	if err != nil {
		return fmt.Errorf("listing the resource snapshots of placement %s: %w", keyString(pk), err)
	}
	latest, ok := resourcesnapshot.Of(all).Latest()
	if !ok {
		return validationAbort(unexpectedErr("no master resourceSnapshot found for placement %s", keyString(pk)))
	}
	if got := latest.Master.Labels[fleet.ResourceIndexLabel]; got != want {
		return validationAbort(userErr(RetrySnapshotOutdatedFmt, r.of.Name, want, keyString(pk), got))
	}
	if !equality.Semantic.DeepEqual(st.AppliedStrategy, r.of.Status.AppliedStrategy) {
		return validationAbort(userErr(RetryApplyStrategyFmt, keyString(pk), r.of.Name,
			formatApplyStrategy(st.AppliedStrategy), formatApplyStrategy(r.of.Status.AppliedStrategy)))
	}
	st.ResourceSnapshotIndexUsed = want
	return nil
}

// checkRetriedOverrides refuses a retry whose clusters would get other
// override snapshots than the retried run froze for them.
func (p *pass) checkRetriedOverrides(r *retry, st *fleet.UpdateRunStatus) error {
	if r == nil {
		return nil
	}
	was := map[string]*fleet.ClusterUpdatingStatus{}
	for i := range r.of.Status.StagesStatus {
		for j := range r.of.Status.StagesStatus[i].Clusters {
			c := &r.of.Status.StagesStatus[i].Clusters[j]
			was[c.ClusterName] = c
		}
	}
	for _, s := range st.StagesStatus {
		for _, c := range s.Clusters {
			w := was[c.ClusterName]
			if w == nil {
				continue
			}
			if !equality.Semantic.DeepEqual(w.ClusterResourceOverrideSnapshots, c.ClusterResourceOverrideSnapshots) ||
				!equality.Semantic.DeepEqual(w.ResourceOverrideSnapshots, c.ResourceOverrideSnapshots) {
				return validationAbort(userErr(RetryOverridesFmt, c.ClusterName, r.of.Name))
			}
		}
	}
	return nil
}
