package metrics

import "github.com/gitfleet/gitfleet/reconciler/updaterun"

// Metric names, in one place. The fleet_ ones are KubeFleet's (spec §7) and
// must not change; the gitfleet_ ones follow Prometheus naming rules (base
// units, _total counters, _seconds durations).
const (
	UpdateRunStatusLastTimestampSeconds          = "fleet_workload_update_run_status_last_timestamp_seconds"
	UpdateRunApprovalRequestLatencySeconds       = "fleet_workload_update_run_approval_request_latency_seconds"
	UpdateRunStageClusterUpdatingDurationSeconds = "fleet_workload_update_run_stage_cluster_updating_duration_seconds"
	UpdateRunStageClusters                       = "gitfleet_update_run_stage_clusters"
	UpdateRuns                                   = "gitfleet_update_runs"
	UpdateRunFailedClustersTotal                 = "gitfleet_update_run_failed_clusters_total"
	ApprovalRequestPendingSeconds                = "gitfleet_approval_request_pending_seconds"
	ClusterResourceSnapshotIndex                 = "gitfleet_cluster_resource_snapshot_index"
	GitFetchDurationSeconds                      = "gitfleet_git_fetch_duration_seconds"
	GitFetchErrorsTotal                          = "gitfleet_git_fetch_errors_total"
	RenderDurationSeconds                        = "gitfleet_render_duration_seconds"
	RenderFailuresTotal                          = "gitfleet_render_failures_total"
	StatusPushesTotal                            = "gitfleet_status_pushes_total"
	StatusWritebackLagSeconds                    = "gitfleet_status_writeback_lag_seconds"
	ReconcileErrorsTotal                         = "gitfleet_reconcile_errors_total"
	HubWriteConflictsTotal                       = "gitfleet_hub_write_conflicts_total"
	LastProcessedCommitTimestampSeconds          = "gitfleet_last_processed_commit_timestamp_seconds"
	LastProcessedCommitInfo                      = "gitfleet_last_processed_commit_info"
	ResourceSnapshotsTotal                       = "gitfleet_resource_snapshots_total"
	SourceReady                                  = "gitfleet_source_ready"
	GateEvaluationsTotal                         = "gitfleet_gate_evaluations_total"
)

// Label names. KubeFleet's camelCase ones (failureType, taskType) are kept
// as upstream spells them, although Prometheus style is snake_case:
// compatibility with existing KubeFleet queries wins.
const (
	LabelNamespace   = "namespace"
	LabelName        = "name"
	LabelState       = "state"
	LabelCondition   = "condition"
	LabelStatus      = "status"
	LabelReason      = "reason"
	LabelFailureType = "failureType"
	LabelTaskType    = "taskType"
	// LabelTaskTypeSnake is gitfleet's own spelling of the task type label.
	LabelTaskTypeSnake = "task_type"
	LabelStage         = "stage"
	LabelPhase         = "phase"
	LabelPlacement     = "placement"
	LabelCluster       = "cluster"
	LabelResult        = "result"
	LabelController    = "controller"
	LabelKind          = "kind"
	LabelCommit        = "commit"
)

// failureType label values (spec §7).
const (
	FailureTypeNone     = updaterun.FailureTypeNone
	FailureTypeUser     = updaterun.FailureTypeUserError
	FailureTypeInternal = updaterun.FailureTypeInternalError
	// FailureTypeClusters is gitfleet's: more clusters failed than the
	// run's failure budget allows (README "When clusters fail").
	FailureTypeClusters = updaterun.FailureTypeClusterFailure
)

// Cluster states of gitfleet_update_run_stage_clusters.
const (
	ClusterPending   = "pending"
	ClusterUpdating  = "updating"
	ClusterSucceeded = "succeeded"
	ClusterFailed    = "failed"
	// ClusterSkipped left the placement under a run that froze its
	// cluster set.
	ClusterSkipped = "skipped"
)

// Results of gitfleet_status_pushes_total.
const (
	PushSuccess  = "success"
	PushConflict = "conflict"
	PushError    = "error"
)

// Buckets of the KubeFleet histograms (spec §7), and of gitfleet's timing
// histograms: a fetch or a render takes from milliseconds to a minute.
var (
	ApprovalLatencyBuckets       = []float64{60, 300, 900, 1800, 3600, 7200, 21600, 43200, 86400}
	StageUpdatingDurationBuckets = []float64{15, 30, 60, 120, 300, 600, 1800, 3600}
	PipelineDurationBuckets      = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
)

// Names lists every metric this package registers.
var Names = []string{
	UpdateRunStatusLastTimestampSeconds,
	UpdateRunApprovalRequestLatencySeconds,
	UpdateRunStageClusterUpdatingDurationSeconds,
	UpdateRunStageClusters,
	UpdateRuns,
	UpdateRunFailedClustersTotal,
	ApprovalRequestPendingSeconds,
	ClusterResourceSnapshotIndex,
	GitFetchDurationSeconds,
	GitFetchErrorsTotal,
	RenderDurationSeconds,
	RenderFailuresTotal,
	StatusPushesTotal,
	StatusWritebackLagSeconds,
	ReconcileErrorsTotal,
	HubWriteConflictsTotal,
	LastProcessedCommitTimestampSeconds,
	LastProcessedCommitInfo,
	ResourceSnapshotsTotal,
	SourceReady,
	WindowWaitSecondsTotal,
	GateEvaluationsTotal,
}
