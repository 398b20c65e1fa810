package metrics

import (
	"strconv"
	"strings"
	"time"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// ObserveBindings sets the snapshot index each cluster of a placement is
// bound to (gitfleet_cluster_resource_snapshot_index), replacing the
// placement's previous series so clusters that left disappear. placement is
// the placement's name, or namespace/name for a ResourcePlacement. Bindings
// without a snapshot yet (scheduled, never rolled out) have no series.
func (m *Metrics) ObserveBindings(placement string, bindings []*fleet.Binding) {
	m.snapshotIndex.DeletePartialMatch(map[string]string{LabelPlacement: placement})
	for _, b := range bindings {
		if idx, ok := snapshotIndex(b.Spec.ResourceSnapshotName); ok {
			m.snapshotIndex.WithLabelValues(placement, b.Spec.TargetCluster).Set(float64(idx))
		}
	}
}

// DeletePlacement removes a deleted placement's series.
func (m *Metrics) DeletePlacement(placement string) {
	m.snapshotIndex.DeletePartialMatch(map[string]string{LabelPlacement: placement})
}

// snapshotIndex parses <placement>-<index>-snapshot.
func snapshotIndex(name string) (int, bool) {
	rest, ok := strings.CutSuffix(name, "-snapshot")
	if !ok {
		return 0, false
	}
	i := strings.LastIndexByte(rest, '-')
	if i < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(rest[i+1:])
	return n, err == nil && n >= 0
}

// ObserveGitFetch records a fetch from the fleet repository; a failed one
// also counts in gitfleet_git_fetch_errors_total.
func (m *Metrics) ObserveGitFetch(d time.Duration, err error) {
	m.fetchDuration.Observe(d.Seconds())
	if err != nil {
		m.fetchErrors.Inc()
	}
}

// ObserveRender records how long rendering one commit took.
func (m *Metrics) ObserveRender(d time.Duration) { m.renderDur.Observe(d.Seconds()) }

// RenderFailureReasons are the reasons of a commit's Rendered condition
// that ObserveRenderFailure counts.
var RenderFailureReasons = []string{fleet.RenderFailedReason, fleet.RenderTimedOutReason, fleet.RenderMemoryExceededReason}

// ObserveRenderFailure counts a commit that did not render, by the reason
// of its Rendered condition.
func (m *Metrics) ObserveRenderFailure(reason string) { m.renderFails.WithLabelValues(reason).Inc() }

// ObserveStatusPush counts a status push by result (PushSuccess,
// PushConflict for a push that had to be re-applied on a moved branch,
// PushError) and, on success, sets the write-back lag: the time from the
// oldest status change in the push to the push.
func (m *Metrics) ObserveStatusPush(result string, lag time.Duration) {
	m.pushes.WithLabelValues(result).Inc()
	if result != PushError {
		m.writebackLag.Set(lag.Seconds())
	}
}

// ObserveReconcileError counts a failed reconcile pass of a controller
// (e.g. "updaterun", "scheduler", "snapshotter").
func (m *Metrics) ObserveReconcileError(controller string) {
	m.reconcileErrs.WithLabelValues(controller).Inc()
}

// ObserveWriteConflict counts a run pass retried after its write of an
// object of kind (reconciler.ConflictKind) lost to a Conflict.
func (m *Metrics) ObserveWriteConflict(kind string) {
	m.conflicts.WithLabelValues(kind).Inc()
}

// SetLastProcessedCommit records the commit gitfleet last rendered and
// reconciled; the info series carries only that commit.
func (m *Metrics) SetLastProcessedCommit(commit string, committed time.Time) {
	m.commitTime.Set(float64(committed.Unix()))
	m.commitInfo.Reset()
	m.commitInfo.WithLabelValues(commit).Set(1)
}

// ObserveResourceSnapshot counts a recorded resource snapshot group.
func (m *Metrics) ObserveResourceSnapshot() { m.snapshots.Inc() }

// SetSourceReady records the Ready condition of the source name
// (status/sources/<name>.yaml): 1 when True, 0 when False.
func (m *Metrics) SetSourceReady(name string, ready bool) {
	v := 0.0
	if ready {
		v = 1
	}
	m.sourceReady.WithLabelValues(name).Set(v)
}
