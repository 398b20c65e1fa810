package metrics

import (
	"github.com/gitfleet/gitfleet/reconciler/updaterun"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
)

// Recorder is the update-run engine's interface (reconciler/updaterun),
// repeated here so the build fails if Metrics drifts from it.
type Recorder interface {
	RecordStatus(run *fleet.UpdateRun)
	ObserveApprovalLatency(run *fleet.UpdateRun, taskType string, seconds float64)
	ObserveStageClusterUpdatingDuration(run *fleet.UpdateRun, seconds float64)
	DeleteRun(namespace, name string)
}

var _ Recorder = (*Metrics)(nil)

func newMetrics() (*Metrics, *prometheus.Registry, *clock.Fake) {
	reg := prometheus.NewRegistry()
	clk := clock.NewFake(t0)
	return New(reg, clk), reg, clk
}

func TestKubeFleetMetricsHaveUpstreamNamesTypesLabelsAndBuckets(t *testing.T) {
	m, reg, clk := newMetrics()
	r := run("", "example-run", fleet.StateRun, initialized, waiting)
	m.RecordStatus(r)
	m.ObserveApprovalLatency(r, "afterStage", 120)
	m.ObserveStageClusterUpdatingDuration(r, 45)
	clk.Advance(90 * time.Second)
	ns := run("team-a", "web-app-rollout", fleet.StateRun, initialized, progressing)
	m.RecordStatus(ns)

	want := `
# HELP fleet_workload_update_run_status_last_timestamp_seconds Last update timestamp of update run status in seconds
# TYPE fleet_workload_update_run_status_last_timestamp_seconds gauge
fleet_workload_update_run_status_last_timestamp_seconds{condition="Progressing",failureType="none",name="example-run",namespace="",reason="UpdateRunWaiting",state="Run",status="False"} 1.767923346e+09
fleet_workload_update_run_status_last_timestamp_seconds{condition="Progressing",failureType="none",name="web-app-rollout",namespace="team-a",reason="UpdateRunProgressing",state="Run",status="True"} 1.767923436e+09
# HELP fleet_workload_update_run_approval_request_latency_seconds The latency from approval request creation to user approval in seconds
# TYPE fleet_workload_update_run_approval_request_latency_seconds histogram
fleet_workload_update_run_approval_request_latency_seconds_bucket{name="example-run",namespace="",taskType="afterStage",le="60"} 0
fleet_workload_update_run_approval_request_latency_seconds_bucket{name="example-run",namespace="",taskType="afterStage",le="300"} 1
fleet_workload_update_run_approval_request_latency_seconds_bucket{name="example-run",namespace="",taskType="afterStage",le="900"} 1
fleet_workload_update_run_approval_request_latency_seconds_bucket{name="example-run",namespace="",taskType="afterStage",le="1800"} 1
fleet_workload_update_run_approval_request_latency_seconds_bucket{name="example-run",namespace="",taskType="afterStage",le="3600"} 1
fleet_workload_update_run_approval_request_latency_seconds_bucket{name="example-run",namespace="",taskType="afterStage",le="7200"} 1
fleet_workload_update_run_approval_request_latency_seconds_bucket{name="example-run",namespace="",taskType="afterStage",le="21600"} 1
fleet_workload_update_run_approval_request_latency_seconds_bucket{name="example-run",namespace="",taskType="afterStage",le="43200"} 1
fleet_workload_update_run_approval_request_latency_seconds_bucket{name="example-run",namespace="",taskType="afterStage",le="86400"} 1
fleet_workload_update_run_approval_request_latency_seconds_bucket{name="example-run",namespace="",taskType="afterStage",le="+Inf"} 1
fleet_workload_update_run_approval_request_latency_seconds_sum{name="example-run",namespace="",taskType="afterStage"} 120
fleet_workload_update_run_approval_request_latency_seconds_count{name="example-run",namespace="",taskType="afterStage"} 1
# HELP fleet_workload_update_run_stage_cluster_updating_duration_seconds The duration the stage of an update run in seconds without stage tasks execution time
# TYPE fleet_workload_update_run_stage_cluster_updating_duration_seconds histogram
fleet_workload_update_run_stage_cluster_updating_duration_seconds_bucket{name="example-run",namespace="",le="15"} 0
fleet_workload_update_run_stage_cluster_updating_duration_seconds_bucket{name="example-run",namespace="",le="30"} 0
fleet_workload_update_run_stage_cluster_updating_duration_seconds_bucket{name="example-run",namespace="",le="60"} 1
fleet_workload_update_run_stage_cluster_updating_duration_seconds_bucket{name="example-run",namespace="",le="120"} 1
fleet_workload_update_run_stage_cluster_updating_duration_seconds_bucket{name="example-run",namespace="",le="300"} 1
fleet_workload_update_run_stage_cluster_updating_duration_seconds_bucket{name="example-run",namespace="",le="600"} 1
fleet_workload_update_run_stage_cluster_updating_duration_seconds_bucket{name="example-run",namespace="",le="1800"} 1
fleet_workload_update_run_stage_cluster_updating_duration_seconds_bucket{name="example-run",namespace="",le="3600"} 1
fleet_workload_update_run_stage_cluster_updating_duration_seconds_bucket{name="example-run",namespace="",le="+Inf"} 1
fleet_workload_update_run_stage_cluster_updating_duration_seconds_sum{name="example-run",namespace=""} 45
fleet_workload_update_run_stage_cluster_updating_duration_seconds_count{name="example-run",namespace=""} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		UpdateRunStatusLastTimestampSeconds, UpdateRunApprovalRequestLatencySeconds, UpdateRunStageClusterUpdatingDurationSeconds); err != nil {
		t.Error(err)
	}
}

func TestStatusSeriesAreAdditive(t *testing.T) {
	m, reg, clk := newMetrics()
	r := run("", "example-run", fleet.StateRun, initialized, waiting)
	m.RecordStatus(r)
	clk.Advance(time.Minute)
	r.Status.Conditions = []metav1.Condition{initialized, progressing}
	m.RecordStatus(r)
	clk.Advance(time.Minute)
	r.Status.Conditions = []metav1.Condition{initialized, done, succeeded}
	m.RecordStatus(r)
	m.RecordStatus(r) // the same series again: still three

	want := `
# HELP fleet_workload_update_run_status_last_timestamp_seconds Last update timestamp of update run status in seconds
# TYPE fleet_workload_update_run_status_last_timestamp_seconds gauge
fleet_workload_update_run_status_last_timestamp_seconds{condition="Progressing",failureType="none",name="example-run",namespace="",reason="UpdateRunWaiting",state="Run",status="False"} 1.767923346e+09
fleet_workload_update_run_status_last_timestamp_seconds{condition="Progressing",failureType="none",name="example-run",namespace="",reason="UpdateRunProgressing",state="Run",status="True"} 1.767923406e+09
fleet_workload_update_run_status_last_timestamp_seconds{condition="Succeeded",failureType="none",name="example-run",namespace="",reason="UpdateRunSucceeded",state="Run",status="True"} 1.767923466e+09
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), UpdateRunStatusLastTimestampSeconds); err != nil {
		t.Error(err)
	}
}

func TestStatusConditionIsTheFirstAtTheRunsGeneration(t *testing.T) {
	stale := func(c metav1.Condition) metav1.Condition { c.ObservedGeneration = 0; return c }
	cases := []struct {
		name  string
		conds []metav1.Condition
		want  string // type/reason, "" for none
	}{
		{"succeeded wins", []metav1.Condition{initialized, done, succeeded}, "Succeeded/UpdateRunSucceeded"},
		{"progressing before initialized", []metav1.Condition{initialized, waiting}, "Progressing/UpdateRunWaiting"},
		{"initialized only", []metav1.Condition{initialized}, "Initialized/UpdateRunInitializedSuccessfully"},
		{"stale succeeded is skipped", []metav1.Condition{initialized, progressing, stale(succeeded)}, "Progressing/UpdateRunProgressing"},
		{"nothing at this generation", []metav1.Condition{stale(initialized)}, ""},
		{"no conditions", nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if c, ok := updaterun.MetricCondition(run("", "r", fleet.StateRun, tc.conds...)); ok {
				got = c.Type + "/" + c.Reason
			}
			if got != tc.want {
				t.Errorf("StatusCondition = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNoStatusSeriesWithoutAConditionAtTheGeneration(t *testing.T) {
	m, reg, _ := newMetrics()
	m.RecordStatus(run("", "fresh", fleet.StateRun))
	if n := testutil.CollectAndCount(m.runStatus); n != 0 {
		t.Errorf("%d status series for a run without conditions", n)
	}
	_ = reg
}

func TestFailureType(t *testing.T) {
	const userMsg = "cannot continue the updateRun: failed to validate the updateRun: failed to process the request due to a client error: parent placement not found"
	const internalMsg = "cannot continue the updateRun: unexpected behavior which cannot be handled by the controller: no master resourceSnapshot found for placement /p"
	cases := []struct {
		name string
		c    metav1.Condition
		want string
	}{
		{"stuck", cond("Progressing", "False", fleet.UpdateRunStuckReason, "The updateRun is stuck waiting for member2 cluster(s)", 1, 0), FailureTypeInternal},
		{"failed by the user", cond("Succeeded", "False", fleet.UpdateRunFailedReason, userMsg, 1, 0), FailureTypeUser},
		{"failed internally", cond("Succeeded", "False", fleet.UpdateRunFailedReason, internalMsg, 1, 0), FailureTypeInternal},
		{"initialization failed by the user", cond("Initialized", "False", fleet.UpdateRunInitializeFailedReason, userMsg, 1, 0), FailureTypeUser},
		{"initialization failed internally", cond("Initialized", "False", fleet.UpdateRunInitializeFailedReason, "no latest policy snapshot found for placement /p", 1, 0), FailureTypeInternal},
		{"progressing False UpdateRunFailed", cond("Progressing", "False", fleet.UpdateRunFailedReason, "The stages are aborted due to a non-recoverable error", 1, 0), FailureTypeInternal},
		{"waiting", waiting, FailureTypeNone},
		{"stopping", cond("Progressing", "Unknown", fleet.UpdateRunStoppingReason, "", 1, 0), FailureTypeNone},
		{"stopped", cond("Progressing", "False", fleet.UpdateRunStoppedReason, "The update run has been stopped", 1, 0), FailureTypeNone},
		{"succeeded", succeeded, FailureTypeNone},
		{"success's Progressing False", done, FailureTypeNone},
		{"progressing", progressing, FailureTypeNone},
		{"True with a failure reason is no failure", cond("Succeeded", "True", fleet.UpdateRunFailedReason, userMsg, 1, 0), FailureTypeNone},
		{"failed over the failure budget", cond("Succeeded", "False", fleet.UpdateRunFailedReason,
			"cannot continue the updateRun: the failure budget is exceeded: the stage `canary` has 2 failed cluster(s), more than maxAllowedClusterFailures 1: member1, member3", 1, 0), FailureTypeClusters},
		{"partially succeeded", cond("Succeeded", "True", fleet.UpdateRunPartiallySucceededReason,
			"All stages are completed, 1 cluster(s) failed within the failure budget: member3 (stage canary)", 1, 0), FailureTypeNone},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := updaterun.FailureType(tc.c); got != tc.want {
				t.Errorf("FailureType = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestStateLabelDefaultsToInitialize(t *testing.T) {
	m, reg, _ := newMetrics()
	m.RecordStatus(run("", "r", "", initialized))
	want := `
# HELP fleet_workload_update_run_status_last_timestamp_seconds Last update timestamp of update run status in seconds
# TYPE fleet_workload_update_run_status_last_timestamp_seconds gauge
fleet_workload_update_run_status_last_timestamp_seconds{condition="Initialized",failureType="none",name="r",namespace="",reason="UpdateRunInitializedSuccessfully",state="Initialize",status="True"} 1.767923346e+09
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), UpdateRunStatusLastTimestampSeconds); err != nil {
		t.Error(err)
	}
}

func TestDeleteRunRemovesOnlyThatRunsSeries(t *testing.T) {
	m, reg, _ := newMetrics()
	gone := stagedRun()
	kept := stagedRun()
	kept.Namespace = "team-a" // same name, other namespace
	other := stagedRun()
	other.Name = "example-run-2"
	for _, r := range []*fleet.UpdateRun{gone, kept, other} {
		m.RecordStatus(r)
		m.ObserveApprovalLatency(r, "beforeStage", 30)
		m.ObserveStageClusterUpdatingDuration(r, 30)
	}
	m.DeleteRun("", "example-run")

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]int{}
	for _, mf := range mfs {
		for _, metric := range mf.GetMetric() {
			var ns, name string
			hasName := false
			for _, l := range metric.GetLabel() {
				switch l.GetName() {
				case LabelNamespace:
					ns = l.GetValue()
				case LabelName:
					name, hasName = l.GetValue(), true
				}
			}
			if hasName {
				runs[ns+"/"+name]++
			}
		}
	}
	if runs["/example-run"] != 0 {
		t.Errorf("deleted run still has %d series", runs["/example-run"])
	}
	if runs["team-a/example-run"] == 0 || runs["/example-run-2"] == 0 {
		t.Errorf("other runs lost their series: %v", runs)
	}
	if runs["team-a/example-run"] != runs["/example-run-2"] {
		t.Errorf("runs with the same history have different series counts: %v", runs)
	}
	if got := testutil.ToFloat64(m.runs.WithLabelValues(fleet.PhaseProgressing)); got != 2 {
		t.Errorf("Progressing runs = %v after deleting one of three, want 2", got)
	}
}
