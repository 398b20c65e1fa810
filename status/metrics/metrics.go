package metrics

import (
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler"
	"github.com/gitfleet/gitfleet/reconciler/updaterun"
)

// Metrics holds every metric gitfleet exports. Its methods are safe for
// concurrent use. It implements the update-run engine's Recorder:
// RecordStatus, ObserveApprovalLatency, ObserveStageClusterUpdatingDuration
// and DeleteRun.
type Metrics struct {
	clock clock.Clock

	runStatus       *prometheus.GaugeVec
	approvalLatency *prometheus.HistogramVec
	stageDuration   *prometheus.HistogramVec

	stageClusters *prometheus.GaugeVec
	runs          *prometheus.GaugeVec
	failed        *prometheus.CounterVec
	pending       *pendingApprovals
	snapshotIndex *prometheus.GaugeVec
	fetchDuration prometheus.Histogram
	fetchErrors   prometheus.Counter
	renderDur     prometheus.Histogram
	renderFails   *prometheus.CounterVec
	pushes        *prometheus.CounterVec
	writebackLag  prometheus.Gauge
	reconcileErrs *prometheus.CounterVec
	conflicts     *prometheus.CounterVec
	commitTime    prometheus.Gauge
	commitInfo    *prometheus.GaugeVec
	snapshots     prometheus.Counter
	sourceReady   *prometheus.GaugeVec
	windowWaits   *windowWaits
	gates         *prometheus.CounterVec

	mu     sync.Mutex
	phases map[runKey]string // current phase of every observed run
	// failedSeen are the clusters counted in failed, per run, so a failure
	// seen again on a later pass is not counted twice.
	failedSeen map[runKey]map[stageCluster]bool
}

type stageCluster struct{ stage, cluster string }

type runKey struct{ namespace, name string }

// New creates the metrics and registers them with reg (nil: not registered,
// for `gitfleet simulate`). clk (nil: the wall clock) stamps the status gauge and ages pending
// approvals, so virtual time gives virtual timestamps.
func New(reg prometheus.Registerer, clk clock.Clock) *Metrics {
	if clk == nil {
		clk = clock.Real{}
	}
	m := &Metrics{
		clock: clk,
		runStatus: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: UpdateRunStatusLastTimestampSeconds,
			Help: "Last update timestamp of update run status in seconds",
		}, []string{LabelNamespace, LabelName, LabelState, LabelCondition, LabelStatus, LabelReason, LabelFailureType}),
		approvalLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    UpdateRunApprovalRequestLatencySeconds,
			Help:    "The latency from approval request creation to user approval in seconds",
			Buckets: ApprovalLatencyBuckets,
		}, []string{LabelNamespace, LabelName, LabelTaskType}),
		stageDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    UpdateRunStageClusterUpdatingDurationSeconds,
			Help:    "The duration the stage of an update run in seconds without stage tasks execution time",
			Buckets: StageUpdatingDurationBuckets,
		}, []string{LabelNamespace, LabelName}),

		stageClusters: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: UpdateRunStageClusters,
			Help: "Clusters of each stage of an update run by state (pending, updating, succeeded, failed, skipped).",
		}, []string{LabelNamespace, LabelName, LabelStage, LabelState}),
		runs: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: UpdateRuns,
			Help: "Update runs by phase.",
		}, []string{LabelPhase}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: UpdateRunFailedClustersTotal,
			Help: "Clusters of an update run that failed (Succeeded=False), by stage: within a failure budget the run goes on without them.",
		}, []string{LabelNamespace, LabelName, LabelStage}),
		pending: newPendingApprovals(clk),
		snapshotIndex: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: ClusterResourceSnapshotIndex,
			Help: "Resource snapshot index each cluster's binding points at; clusters of one placement on different indexes are a version skew.",
		}, []string{LabelPlacement, LabelCluster}),
		fetchDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    GitFetchDurationSeconds,
			Help:    "Duration of fetches from the fleet repository in seconds.",
			Buckets: PipelineDurationBuckets,
		}),
		fetchErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: GitFetchErrorsTotal,
			Help: "Fetches from the fleet repository that failed.",
		}),
		renderDur: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    RenderDurationSeconds,
			Help:    "Duration of rendering a commit into hub content in seconds.",
			Buckets: PipelineDurationBuckets,
		}),
		renderFails: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: RenderFailuresTotal,
			Help: "Commits of the tracked branch that did not render and were skipped, by reason (RenderFailed, RenderTimedOut, RenderMemoryExceeded).",
		}, []string{LabelReason}),
		pushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: StatusPushesTotal,
			Help: "Status commits pushed to the fleet repository by result (success, conflict, error).",
		}, []string{LabelResult}),
		writebackLag: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: StatusWritebackLagSeconds,
			Help: "Time from a status change to the push that published it, for the last push, in seconds.",
		}),
		reconcileErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: ReconcileErrorsTotal,
			Help: "Reconcile passes that ended in an error, by controller.",
		}, []string{LabelController}),
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: HubWriteConflictsTotal,
			Help: "Run passes retried because a hub write lost to a Conflict (another writer came first), by the kind of object written (binding, updaterun, approval, other).",
		}, []string{LabelKind}),
		commitTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: LastProcessedCommitTimestampSeconds,
			Help: "Commit time of the last fleet repository commit gitfleet processed, as a Unix timestamp in seconds.",
		}),
		commitInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: LastProcessedCommitInfo,
			Help: "The last fleet repository commit gitfleet processed; always 1.",
		}, []string{LabelCommit}),
		snapshots: prometheus.NewCounter(prometheus.CounterOpts{
			Name: ResourceSnapshotsTotal,
			Help: "Resource snapshots recorded.",
		}),
		sourceReady: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: SourceReady,
			Help: "Ready condition of the source (gitfleet get sources): 1 while the tracked branch is fetched and its newest hub content renders, 0 while a fetch fails or that commit is refused.",
		}, []string{LabelName}),
		windowWaits: newWindowWaits(),
		gates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: GateEvaluationsTotal,
			Help: "Evaluations of metric gates by result: pass, fail, or error (Prometheus unreachable or no data).",
		}, []string{LabelResult}),
		phases:     map[runKey]string{},
		failedSeen: map[runKey]map[stageCluster]bool{},
	}
	// Series that exist from the start, so dashboards show 0, not "no
	// data": every counter, with each label set known in advance.
	for _, r := range []string{PushSuccess, PushConflict, PushError} {
		m.pushes.WithLabelValues(r)
	}
	for _, c := range reconciler.Controllers {
		m.reconcileErrs.WithLabelValues(c)
	}
	for _, k := range reconciler.ConflictKinds {
		m.conflicts.WithLabelValues(k)
	}
	for _, r := range RenderFailureReasons {
		m.renderFails.WithLabelValues(r)
	}
	for _, p := range Phases {
		m.runs.WithLabelValues(p).Set(0)
	}
	for _, r := range GateResults {
		m.gates.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(m.collectors()...)
	}
	return m
}

func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{
		m.runStatus, m.approvalLatency, m.stageDuration,
		m.stageClusters, m.runs, m.failed, m.pending, m.snapshotIndex,
		m.fetchDuration, m.fetchErrors, m.renderDur, m.renderFails, m.pushes, m.writebackLag,
		m.reconcileErrs, m.conflicts, m.commitTime, m.commitInfo, m.snapshots, m.sourceReady, m.windowWaits.total, m.gates,
	}
}

// RecordStatus emits KubeFleet's status series for the run (spec §7) — the
// first of Succeeded, Progressing, Initialized observed at the run's
// generation, stamped with the current time; nothing when there is none —
// and refreshes gitfleet's run gauges (ObserveRun). The engine calls it at
// the end of every pass. Status series are additive: each distinct label
// set stays until DeleteRun, so a run's history (Waiting, Progressing,
// Succeeded) can be read from them.
func (m *Metrics) RecordStatus(run *fleet.UpdateRun) {
	if c, ok := updaterun.MetricCondition(run); ok {
		m.runStatus.WithLabelValues(run.Namespace, run.Name, runState(run), c.Type, string(c.Status), c.Reason, updaterun.FailureType(c)).
			Set(float64(m.clock.Now().UnixNano()) / 1e9)
	}
	m.ObserveRun(run)
}

// runState is spec.state; an absent state is the API default, Initialize.
func runState(run *fleet.UpdateRun) string {
	if run.Spec.State == "" {
		return string(fleet.StateInitialize)
	}
	return string(run.Spec.State)
}

// ObserveApprovalLatency records how long an approval took (spec §7);
// taskType is beforeStage or afterStage.
// CountGateEvaluation counts one evaluation of a metric gate (the
// engine's updaterun.GateRecorder).
func (m *Metrics) CountGateEvaluation(result fleet.MetricEvaluationResult) {
	m.gates.WithLabelValues(strings.ToLower(string(result))).Inc()
}

// GateResults are the result label values of GateEvaluationsTotal.
var GateResults = []string{"pass", "fail", "error"}

func (m *Metrics) ObserveApprovalLatency(run *fleet.UpdateRun, taskType string, seconds float64) {
	m.approvalLatency.WithLabelValues(run.Namespace, run.Name, taskType).Observe(seconds)
}

// ObserveStageClusterUpdatingDuration records how long a stage's clusters
// took to update, task time excluded (spec §7).
func (m *Metrics) ObserveStageClusterUpdatingDuration(run *fleet.UpdateRun, seconds float64) {
	m.stageDuration.WithLabelValues(run.Namespace, run.Name).Observe(seconds)
}

// DeleteRun removes every series of the run, as KubeFleet does when a run is
// deleted, and takes it out of the phase counts.
func (m *Metrics) DeleteRun(namespace, name string) {
	labels := prometheus.Labels{LabelNamespace: namespace, LabelName: name}
	m.runStatus.DeletePartialMatch(labels)
	m.approvalLatency.DeletePartialMatch(labels)
	m.stageDuration.DeletePartialMatch(labels)
	m.stageClusters.DeletePartialMatch(labels)
	m.failed.DeletePartialMatch(labels)
	m.pending.deleteRun(namespace, name)

	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.phases, runKey{namespace, name})
	delete(m.failedSeen, runKey{namespace, name})
	m.windowWaits.deleteRunLocked(namespace, name)
	m.publishPhasesLocked()
}
