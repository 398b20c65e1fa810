package metrics

import (
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// populate feeds every metric at least one series.
func populate(m *Metrics) {
	r := stagedRun()
	m.RecordStatus(r)
	m.ObserveApprovalLatency(r, "beforeStage", 300)
	m.ObserveStageClusterUpdatingDuration(r, 60)
	m.ObserveBindings("example-placement", []*fleet.Binding{bound("member1", "example-placement-1-snapshot")})
	m.ObserveGitFetch(200*time.Millisecond, errors.New("timeout"))
	m.ObserveRender(50 * time.Millisecond)
	m.ObserveRenderFailure(fleet.RenderFailedReason)
	m.ObserveStatusPush(PushSuccess, 3*time.Second)
	m.ObserveReconcileError("updaterun")
	m.SetLastProcessedCommit("0123456789abcdef0123456789abcdef01234567", t0)
	m.ObserveResourceSnapshot()
	m.SetSourceReady("main", false)
}

func bound(cluster, snapshot string) *fleet.Binding {
	return &fleet.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: "example-placement-" + cluster, Labels: map[string]string{fleet.PlacementTrackingLabel: "example-placement"}},
		Spec:       fleet.ResourceBindingSpec{State: fleet.BindingStateBound, TargetCluster: cluster, ResourceSnapshotName: snapshot},
	}
}

func TestNamesListsEveryRegisteredMetric(t *testing.T) {
	m, reg, _ := newMetrics()
	populate(m)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, mf := range mfs {
		got = append(got, mf.GetName())
	}
	want := append([]string(nil), Names...)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("registered:\n%s\nNames:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// kubeFleetCamelCase is the one lint problem we accept, and only on
// KubeFleet's metrics: their failureType/taskType labels are upstream's.
const kubeFleetCamelCase = "label names should be written in 'snake_case' not 'camelCase'"

func TestMetricsAreLintClean(t *testing.T) {
	m, reg, _ := newMetrics()
	populate(m)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	accepted := 0
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "fleet_workload_update_run_") && p.Text == kubeFleetCamelCase {
			accepted++
			continue
		}
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	// status gauge (failureType) and approval histogram (taskType); if this
	// drops, upstream's labels were changed.
	if accepted != 2 {
		t.Errorf("accepted %d camelCase problems, want exactly the 2 of KubeFleet's labels", accepted)
	}
}

func TestPhase(t *testing.T) {
	failed := cond("Succeeded", "False", fleet.UpdateRunFailedReason, "x", 1, 0)
	cases := []struct {
		name  string
		conds []metav1.Condition
		want  string
	}{
		{"new", nil, fleet.PhaseInitializing},
		{"initialization failed", []metav1.Condition{cond("Initialized", "False", fleet.UpdateRunInitializeFailedReason, "x", 1, 0)}, fleet.PhaseInitFailed},
		{"initialized, state Initialize", []metav1.Condition{initialized}, fleet.PhaseInitialized},
		{"waiting", []metav1.Condition{initialized, waiting}, fleet.PhaseWaiting},
		{"progressing", []metav1.Condition{initialized, progressing}, fleet.PhaseProgressing},
		{"stuck", []metav1.Condition{initialized, cond("Progressing", "False", fleet.UpdateRunStuckReason, "", 1, 0)}, fleet.PhaseStuck},
		{"stopping", []metav1.Condition{initialized, cond("Progressing", "Unknown", fleet.UpdateRunStoppingReason, "", 1, 0)}, fleet.PhaseStopping},
		{"stopped", []metav1.Condition{initialized, cond("Progressing", "False", fleet.UpdateRunStoppedReason, "", 1, 0)}, fleet.PhaseStopped},
		{"succeeded", []metav1.Condition{initialized, done, succeeded}, fleet.PhaseSucceeded},
		{"failed", []metav1.Condition{initialized, cond("Progressing", "False", fleet.UpdateRunFailedReason, "", 1, 0), failed}, fleet.PhaseFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := run("", "r", fleet.StateRun, tc.conds...).Phase(); got != tc.want {
				t.Errorf("Phase = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRunsByPhaseCountsEachRunOnce(t *testing.T) {
	m, _, _ := newMetrics()
	a := run("", "a", fleet.StateRun, initialized, waiting)
	b := run("", "b", fleet.StateRun, initialized, waiting)
	m.RecordStatus(a)
	m.RecordStatus(b)
	m.RecordStatus(a)
	phase := func(p string) float64 { return testutil.ToFloat64(m.runs.WithLabelValues(p)) }
	if phase(fleet.PhaseWaiting) != 2 {
		t.Fatalf("Waiting = %v, want 2", phase(fleet.PhaseWaiting))
	}
	a.Status.Conditions = []metav1.Condition{initialized, done, succeeded}
	m.RecordStatus(a)
	if phase(fleet.PhaseWaiting) != 1 || phase(fleet.PhaseSucceeded) != 1 {
		t.Errorf("Waiting = %v, Succeeded = %v, want 1 and 1", phase(fleet.PhaseWaiting), phase(fleet.PhaseSucceeded))
	}
	if n := testutil.CollectAndCount(m.runs); n != len(Phases) {
		t.Errorf("%d phase series, want one per phase (%d)", n, len(Phases))
	}
}

func TestStageClustersByState(t *testing.T) {
	m, reg, _ := newMetrics()
	m.ObserveRun(stagedRun())
	want := `
# HELP gitfleet_update_run_stage_clusters Clusters of each stage of an update run by state (pending, updating, succeeded, failed, skipped).
# TYPE gitfleet_update_run_stage_clusters gauge
gitfleet_update_run_stage_clusters{name="example-run",namespace="",stage="canary",state="failed"} 0
gitfleet_update_run_stage_clusters{name="example-run",namespace="",stage="canary",state="pending"} 1
gitfleet_update_run_stage_clusters{name="example-run",namespace="",stage="canary",state="skipped"} 0
gitfleet_update_run_stage_clusters{name="example-run",namespace="",stage="canary",state="succeeded"} 1
gitfleet_update_run_stage_clusters{name="example-run",namespace="",stage="canary",state="updating"} 1
gitfleet_update_run_stage_clusters{name="example-run",namespace="",stage="kubernetes-fleet.io/deleteStage",state="failed"} 0
gitfleet_update_run_stage_clusters{name="example-run",namespace="",stage="kubernetes-fleet.io/deleteStage",state="pending"} 0
gitfleet_update_run_stage_clusters{name="example-run",namespace="",stage="kubernetes-fleet.io/deleteStage",state="skipped"} 0
gitfleet_update_run_stage_clusters{name="example-run",namespace="",stage="kubernetes-fleet.io/deleteStage",state="succeeded"} 0
gitfleet_update_run_stage_clusters{name="example-run",namespace="",stage="kubernetes-fleet.io/deleteStage",state="updating"} 0
gitfleet_update_run_stage_clusters{name="example-run",namespace="",stage="prod",state="failed"} 0
gitfleet_update_run_stage_clusters{name="example-run",namespace="",stage="prod",state="pending"} 1
gitfleet_update_run_stage_clusters{name="example-run",namespace="",stage="prod",state="skipped"} 0
gitfleet_update_run_stage_clusters{name="example-run",namespace="",stage="prod",state="succeeded"} 0
gitfleet_update_run_stage_clusters{name="example-run",namespace="",stage="prod",state="updating"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), UpdateRunStageClusters); err != nil {
		t.Error(err)
	}
}

func TestPendingApprovalAgeGrowsUntilApproved(t *testing.T) {
	m, reg, clk := newMetrics()
	r := stagedRun()
	m.ObserveRun(r)
	clk.Advance(10 * time.Minute) // created at t0+5m: 5 minutes old now
	want := `
# HELP gitfleet_approval_request_pending_seconds Age of each approval request the run is waiting on, from its creation, in seconds.
# TYPE gitfleet_approval_request_pending_seconds gauge
gitfleet_approval_request_pending_seconds{name="example-run",namespace="",stage="prod",task_type="beforeStage"} 300
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), ApprovalRequestPendingSeconds); err != nil {
		t.Fatal(err)
	}

	task := &r.Status.StagesStatus[1].BeforeStageTaskStatus[0]
	task.Conditions = append(task.Conditions, cond("ApprovalRequestApproved", "True", fleet.StageTaskApprovalRequestApprovedReason, "", 1, 10*time.Minute))
	m.ObserveRun(r)
	if n := testutil.CollectAndCount(m.pending); n != 0 {
		t.Errorf("%d pending approval series after approval", n)
	}
}

func TestPendingApprovalsEndWithTheRun(t *testing.T) {
	m, _, _ := newMetrics()
	r := stagedRun()
	m.ObserveRun(r)
	r.Status.Conditions = append(r.Status.Conditions, cond("Succeeded", "False", fleet.UpdateRunFailedReason, "x", 1, 0))
	m.ObserveRun(r)
	if n := testutil.CollectAndCount(m.pending); n != 0 {
		t.Errorf("a failed run still waits on %d approvals", n)
	}
	m.ObserveRun(stagedRun())
	m.DeleteRun("", "example-run")
	if n := testutil.CollectAndCount(m.pending); n != 0 {
		t.Errorf("a deleted run still waits on %d approvals", n)
	}
}

func TestSnapshotIndexPerClusterShowsVersionSkew(t *testing.T) {
	m, reg, _ := newMetrics()
	m.ObserveBindings("example-placement", []*fleet.Binding{
		bound("member1", "example-placement-1-snapshot"),
		bound("member2", "example-placement-0-snapshot"),
		bound("member3", ""), // scheduled, never rolled out
		bound("member4", "example-placement-12-snapshot"),
	})
	m.ObserveBindings("team-a/web", []*fleet.Binding{bound("member1", "web-3-snapshot")})
	// member4 leaves: its series goes.
	m.ObserveBindings("example-placement", []*fleet.Binding{
		bound("member1", "example-placement-1-snapshot"),
		bound("member2", "example-placement-1-snapshot"),
	})
	want := `
# HELP gitfleet_cluster_resource_snapshot_index Resource snapshot index each cluster's binding points at; clusters of one placement on different indexes are a version skew.
# TYPE gitfleet_cluster_resource_snapshot_index gauge
gitfleet_cluster_resource_snapshot_index{cluster="member1",placement="example-placement"} 1
gitfleet_cluster_resource_snapshot_index{cluster="member2",placement="example-placement"} 1
gitfleet_cluster_resource_snapshot_index{cluster="member1",placement="team-a/web"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), ClusterResourceSnapshotIndex); err != nil {
		t.Error(err)
	}
	m.DeletePlacement("team-a/web")
	if n := testutil.CollectAndCount(m.snapshotIndex); n != 2 {
		t.Errorf("%d series after deleting a placement, want 2", n)
	}
}

func TestSnapshotIndexParsesMasterNames(t *testing.T) {
	cases := map[string]int{"p-0-snapshot": 0, "my-app-17-snapshot": 17}
	for name, want := range cases {
		if got, ok := snapshotIndex(name); !ok || got != want {
			t.Errorf("snapshotIndex(%q) = %d, %v", name, got, ok)
		}
	}
	for _, bad := range []string{"", "p-0", "p-x-snapshot", "snapshot"} {
		if got, ok := snapshotIndex(bad); ok {
			t.Errorf("snapshotIndex(%q) = %d, want no index", bad, got)
		}
	}
}

func TestPipelineMetrics(t *testing.T) {
	m, reg, _ := newMetrics()
	m.ObserveGitFetch(300*time.Millisecond, nil)
	m.ObserveGitFetch(2*time.Second, errors.New("unreachable"))
	m.ObserveRender(40 * time.Millisecond)
	m.ObserveStatusPush(PushSuccess, 2*time.Second)
	m.ObserveStatusPush(PushConflict, 5*time.Second)
	m.ObserveStatusPush(PushError, time.Hour) // a failed push publishes nothing: lag stays
	m.ObserveReconcileError("updaterun")
	m.ObserveReconcileError("updaterun")
	m.ObserveWriteConflict("binding")
	m.ObserveResourceSnapshot()
	m.SetLastProcessedCommit("aaaaaaa", t0)
	m.SetLastProcessedCommit("bbbbbbb", t0.Add(time.Minute))
	m.SetSourceReady("main", false) // a refused commit, then its fix
	m.SetSourceReady("main", true)
	m.SetSourceReady("release.v2", false)

	want := `
# HELP gitfleet_git_fetch_errors_total Fetches from the fleet repository that failed.
# TYPE gitfleet_git_fetch_errors_total counter
gitfleet_git_fetch_errors_total 1
# HELP gitfleet_status_pushes_total Status commits pushed to the fleet repository by result (success, conflict, error).
# TYPE gitfleet_status_pushes_total counter
gitfleet_status_pushes_total{result="conflict"} 1
gitfleet_status_pushes_total{result="error"} 1
gitfleet_status_pushes_total{result="success"} 1
# HELP gitfleet_status_writeback_lag_seconds Time from a status change to the push that published it, for the last push, in seconds.
# TYPE gitfleet_status_writeback_lag_seconds gauge
gitfleet_status_writeback_lag_seconds 5
# HELP gitfleet_reconcile_errors_total Reconcile passes that ended in an error, by controller.
# TYPE gitfleet_reconcile_errors_total counter
gitfleet_reconcile_errors_total{controller="commit"} 0
gitfleet_reconcile_errors_total{controller="eviction"} 0
gitfleet_reconcile_errors_total{controller="placement"} 0
gitfleet_reconcile_errors_total{controller="scheduler"} 0
gitfleet_reconcile_errors_total{controller="updaterun"} 2
# HELP gitfleet_hub_write_conflicts_total Run passes retried because a hub write lost to a Conflict (another writer came first), by the kind of object written (binding, updaterun, approval, other).
# TYPE gitfleet_hub_write_conflicts_total counter
gitfleet_hub_write_conflicts_total{kind="approval"} 0
gitfleet_hub_write_conflicts_total{kind="binding"} 1
gitfleet_hub_write_conflicts_total{kind="other"} 0
gitfleet_hub_write_conflicts_total{kind="updaterun"} 0
# HELP gitfleet_resource_snapshots_total Resource snapshots recorded.
# TYPE gitfleet_resource_snapshots_total counter
gitfleet_resource_snapshots_total 1
# HELP gitfleet_last_processed_commit_timestamp_seconds Commit time of the last fleet repository commit gitfleet processed, as a Unix timestamp in seconds.
# TYPE gitfleet_last_processed_commit_timestamp_seconds gauge
gitfleet_last_processed_commit_timestamp_seconds 1.767923406e+09
# HELP gitfleet_last_processed_commit_info The last fleet repository commit gitfleet processed; always 1.
# TYPE gitfleet_last_processed_commit_info gauge
gitfleet_last_processed_commit_info{commit="bbbbbbb"} 1
# HELP gitfleet_source_ready Ready condition of the source (gitfleet get sources): 1 while the tracked branch is fetched and its newest hub content renders, 0 while a fetch fails or that commit is refused.
# TYPE gitfleet_source_ready gauge
gitfleet_source_ready{name="main"} 1
gitfleet_source_ready{name="release.v2"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		GitFetchErrorsTotal, StatusPushesTotal, StatusWritebackLagSeconds, ReconcileErrorsTotal, HubWriteConflictsTotal,
		ResourceSnapshotsTotal, LastProcessedCommitTimestampSeconds, LastProcessedCommitInfo, SourceReady); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.fetchDuration); n != 1 {
		t.Errorf("fetch histogram has %d series", n)
	}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == GitFetchDurationSeconds && mf.GetMetric()[0].GetHistogram().GetSampleCount() != 2 {
			t.Errorf("fetch histogram counted %d fetches, want 2", mf.GetMetric()[0].GetHistogram().GetSampleCount())
		}
	}
}

func TestNewWithoutRegistererOrClockWorks(t *testing.T) {
	m := New(nil, nil) // simulate: unregistered, wall clock
	m.RecordStatus(run("", "r", fleet.StateRun, initialized))
	m.DeleteRun("", "r")
	if n := testutil.CollectAndCount(m.runStatus); n != 0 {
		t.Errorf("%d series left", n)
	}
}

// The approval before the deletion stage (a strategy's deleteStage) is a
// pending approval like a stage's, labelled with the deletion stage.
func TestPendingApprovalOfTheDeletionStage(t *testing.T) {
	m, reg, clk := newMetrics()
	r := stagedRun()
	r.Status.StagesStatus[1].BeforeStageTaskStatus = nil
	r.Status.DeletionStageStatus.BeforeStageTaskStatus = []fleet.StageTaskStatus{{Type: fleet.StageTaskTypeApproval,
		ApprovalRequestName: "example-run-before-delete-stage",
		Conditions:          []metav1.Condition{cond("ApprovalRequestCreated", "True", fleet.StageTaskApprovalRequestCreatedReason, "", 1, 5*time.Minute)}}}
	m.ObserveRun(r)
	clk.Advance(10 * time.Minute)
	want := `
# HELP gitfleet_approval_request_pending_seconds Age of each approval request the run is waiting on, from its creation, in seconds.
# TYPE gitfleet_approval_request_pending_seconds gauge
gitfleet_approval_request_pending_seconds{name="example-run",namespace="",stage="kubernetes-fleet.io/deleteStage",task_type="beforeStage"} 300
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), ApprovalRequestPendingSeconds); err != nil {
		t.Fatal(err)
	}
}

// TestFailedClustersAreCountedOnce: a failed cluster is counted when it
// first shows up failed, not again on later passes; every stage has a
// series from the start; the run's deletion removes them.
func TestFailedClustersAreCountedOnce(t *testing.T) {
	m, reg, _ := newMetrics()
	r := stagedRun()
	m.ObserveRun(r)
	failed := cond("Succeeded", "False", fleet.ClusterUpdatingFailedReason, "the cluster `member3` in the stage `canary` did not finish updating within maxWaitTimePerClusterMinutes 5: …", 1, 7*time.Minute)
	r.Status.StagesStatus[0].Clusters[1].Conditions = append(r.Status.StagesStatus[0].Clusters[1].Conditions, failed)
	m.ObserveRun(r)
	m.ObserveRun(r)
	want := `
# HELP gitfleet_update_run_failed_clusters_total Clusters of an update run that failed (Succeeded=False), by stage: within a failure budget the run goes on without them.
# TYPE gitfleet_update_run_failed_clusters_total counter
gitfleet_update_run_failed_clusters_total{name="example-run",namespace="",stage="canary"} 1
gitfleet_update_run_failed_clusters_total{name="example-run",namespace="",stage="prod"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), UpdateRunFailedClustersTotal); err != nil {
		t.Error(err)
	}
	m.DeleteRun("", "example-run")
	if n := testutil.CollectAndCount(m.failed); n != 0 {
		t.Errorf("%d series left after the run's deletion", n)
	}
	m.ObserveRun(r)
	if got := testutil.ToFloat64(m.failed.WithLabelValues("", "example-run", "canary")); got != 1 {
		t.Errorf("a run observed again after its deletion counts %v failures, want 1", got)
	}
}
