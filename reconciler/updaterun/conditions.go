package updaterun

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/condmsg"
)

// Condition messages (spec §2.4, §3.1, §3.2, §4). They are copied verbatim
// from KubeFleet: users, dashboards and seeds match on them.
const (
	InitializedSucceededMessage = "The UpdateRun initialized successfully"
	RunProgressingMessage       = "The update run is making progress"
	// RunWaitingMessageFmt takes "before-stage"/"after-stage" and the stage.
	RunWaitingMessageFmt = "The updateRun is waiting for %s tasks in stage %s to complete"
	// RunStuckMessageFmt takes StuckClustersString(...) and the stage.
	RunStuckMessageFmt      = "The updateRun is stuck waiting for %s cluster(s) in stage %s to finish updating, please check placement status for potential errors"
	RunStoppingMessage      = "The update run is the process of stopping, waiting for all the updating/deleting clusters to finish updating before completing the stop process"
	RunStoppedMessage       = "The update run has been stopped"
	RunSucceededProgMessage = "All stages are completed"
	RunSucceededMessage     = "All stages are completed successfully"
	RunFailedProgMessage    = "The stages are aborted due to a non-recoverable error"

	StageStartedMessage           = "Clusters in the stage started updating"
	StageWaitingBeforeMessage     = "Not all before-stage tasks are completed, waiting for approval"
	StageWaitingAfterMessage      = "All clusters in the stage are updated, waiting for after-stage tasks to complete"
	StageStoppingMessage          = "Waiting for all the updating clusters to finish updating before completing the stop process"
	StageStoppedMessage           = "All the updating clusters have finished updating, the stage is now stopped, waiting to be resumed"
	StageSucceededProgMessage     = "All clusters in the stage are updated and after-stage tasks are completed"
	StageSucceededMessage         = "Stage update completed successfully"
	StageFailedProgMessage        = "Stage update aborted due to a non-recoverable error"
	StageSkippedNoClustersMessage = "Stage skipped because it has no clusters"

	ClusterStartedMessage   = "Cluster update started"
	ClusterSucceededMessage = "Cluster update completed successfully"

	TaskApprovalRequestCreatedMessage  = "ApprovalRequest object is created"
	TaskApprovalRequestApprovedMessage = "ApprovalRequest object is approved"
	TaskWaitTimeElapsedMessage         = "Wait time elapsed"
	// TaskWaitTimeNotElapsedMessageFmt takes the RFC 3339 end of the wait
	// (gitfleet, deliberate difference 6).
	TaskWaitTimeNotElapsedMessageFmt = "Wait time ends at %s"
	// TaskApprovalIgnoredMessageFmt explains an Approved condition written
	// at the wrong observedGeneration (gitfleet, deliberate difference 5);
	// it takes the condition's observedGeneration and the request's
	// generation (twice).
	TaskApprovalIgnoredMessageFmt = "Approved condition ignored: its observedGeneration %d does not match the approval request's generation %d; set observedGeneration: %d"
	// TaskApprovalFileRejectedMessageFmt reports a person's edit of the
	// approval request that was not taken (gitfleet, with deliberate
	// difference 5): it takes the request's rejected-change note.
	TaskApprovalFileRejectedMessageFmt = "Approval request not taken: %s"

	ApprovalAcceptedMessage = "The approval request has been approved and cannot be reverted"

	// RolloutStartedMessageFmt takes the snapshot index actually used
	// (gitfleet, deliberate difference 7) and the run name.
	RolloutStartedMessageFmt = "Detected the new changes on the resources and started the rollout process, resourceSnapshotIndex: %s, updateRun: %s"
)

// Failure types of the status metric (spec §7).
const (
	FailureTypeNone          = "none"
	FailureTypeUserError     = "user_error"
	FailureTypeInternalError = "internal_error"
)

// FailureType classifies a run condition for the status metric (spec §7):
// a stuck run is an internal error; a failed run or failed initialization
// is a user error when its message carries the client-error marker, and a
// cluster failure (gitfleet's) when its failure budget was exceeded.
func FailureType(cond metav1.Condition) string {
	if cond.Status != metav1.ConditionFalse {
		return FailureTypeNone
	}
	switch cond.Reason {
	case fleet.UpdateRunStuckReason:
		return FailureTypeInternalError
	case fleet.UpdateRunResourceSnapshotRejectedReason:
		return FailureTypeUserError
	case fleet.UpdateRunFailedReason, fleet.UpdateRunInitializeFailedReason:
		if strings.Contains(cond.Message, budgetExceededMsg) {
			return FailureTypeClusterFailure
		}
		if strings.Contains(cond.Message, userErrorMsg) {
			return FailureTypeUserError
		}
		return FailureTypeInternalError
	}
	return FailureTypeNone
}

// MetricCondition picks the condition the status metric reports (spec §7):
// the first of Succeeded, Progressing, Initialized observed at the run's
// generation.
func MetricCondition(run *fleet.UpdateRun) (metav1.Condition, bool) {
	for _, t := range []string{
		fleet.StagedUpdateRunConditionSucceeded,
		fleet.StagedUpdateRunConditionProgressing,
		fleet.StagedUpdateRunConditionInitialized,
	} {
		if c := meta.FindStatusCondition(run.Status.Conditions, t); c != nil && c.ObservedGeneration == run.Generation {
			return *c, true
		}
	}
	return metav1.Condition{}, false
}

// StuckClustersString lists up to three stuck clusters for the Stuck
// message, with "..." when there are more.
func StuckClustersString(clusters []string) string {
	if len(clusters) <= 3 {
		return strings.Join(clusters, ", ")
	}
	return strings.Join(clusters[:3], ", ") + "..."
}

// isTrue and isFalse evaluate a condition at a generation, the way KubeFleet
// does: a condition observed at another generation does not count.
func isTrue(c *metav1.Condition, gen int64) bool {
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == gen
}

func isFalse(c *metav1.Condition, gen int64) bool {
	return c != nil && c.Status == metav1.ConditionFalse && c.ObservedGeneration == gen
}

func find(conds []metav1.Condition, t string) *metav1.Condition {
	return meta.FindStatusCondition(conds, t)
}

// set writes a condition with SetStatusCondition semantics: the transition
// time is the pass's clock reading, and changes only when the status does.
func (p *pass) set(conds *[]metav1.Condition, t string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: t, Status: status, ObservedGeneration: p.gen,
		LastTransitionTime: metav1.NewTime(p.now), Reason: reason, Message: msg,
	})
}

// ---- run ----

func (p *pass) markRunProgressing() {
	p.set(&p.run.Status.Conditions, fleet.StagedUpdateRunConditionProgressing, metav1.ConditionTrue,
		fleet.UpdateRunProgressingReason, RunProgressingMessage)
}

// markRunProgressingUnlessWaitingOrStuck avoids flapping the transition time
// of a run that is waiting or stuck (True then False again in one pass).
func (p *pass) markRunProgressingUnlessWaitingOrStuck() {
	c := find(p.run.Status.Conditions, fleet.StagedUpdateRunConditionProgressing)
	if isFalse(c, p.gen) && (c.Reason == fleet.UpdateRunWaitingReason || c.Reason == fleet.UpdateRunStuckReason) {
		return
	}
	p.markRunProgressing()
}

func (p *pass) markRunWaiting(taskKind, stage string) {
	p.set(&p.run.Status.Conditions, fleet.StagedUpdateRunConditionProgressing, metav1.ConditionFalse,
		fleet.UpdateRunWaitingReason, fmt.Sprintf(RunWaitingMessageFmt, taskKind, stage))
}

func (p *pass) markRunStuck(stage string, clusters []string) {
	p.set(&p.run.Status.Conditions, fleet.StagedUpdateRunConditionProgressing, metav1.ConditionFalse,
		fleet.UpdateRunStuckReason, fmt.Sprintf(RunStuckMessageFmt, StuckClustersString(clusters), stage))
}

func (p *pass) markRunStopping() {
	p.set(&p.run.Status.Conditions, fleet.StagedUpdateRunConditionProgressing, metav1.ConditionUnknown,
		fleet.UpdateRunStoppingReason, RunStoppingMessage)
}

func (p *pass) markRunStopped() {
	p.set(&p.run.Status.Conditions, fleet.StagedUpdateRunConditionProgressing, metav1.ConditionFalse,
		fleet.UpdateRunStoppedReason, RunStoppedMessage)
}

func (p *pass) markRunSucceeded() {
	p.set(&p.run.Status.Conditions, fleet.StagedUpdateRunConditionProgressing, metav1.ConditionFalse,
		fleet.UpdateRunSucceededReason, RunSucceededProgMessage)
	p.set(&p.run.Status.Conditions, fleet.StagedUpdateRunConditionSucceeded, metav1.ConditionTrue,
		fleet.UpdateRunSucceededReason, RunSucceededMessage)
}

func (p *pass) markRunFailed(msg string) {
	p.set(&p.run.Status.Conditions, fleet.StagedUpdateRunConditionProgressing, metav1.ConditionFalse,
		fleet.UpdateRunFailedReason, RunFailedProgMessage)
	p.set(&p.run.Status.Conditions, fleet.StagedUpdateRunConditionSucceeded, metav1.ConditionFalse,
		fleet.UpdateRunFailedReason, condmsg.Cap(msg))
}

// ---- stage ----

func (p *pass) startTime(s *fleet.StageUpdatingStatus) {
	if s.StartTime == nil {
		t := metav1.NewTime(p.now)
		s.StartTime = &t
	}
}

func (p *pass) endTime(s *fleet.StageUpdatingStatus) {
	if s.EndTime == nil {
		t := metav1.NewTime(p.now)
		s.EndTime = &t
	}
}

func (p *pass) markStageStarted(s *fleet.StageUpdatingStatus) {
	p.startTime(s)
	p.set(&s.Conditions, fleet.StageUpdatingConditionProgressing, metav1.ConditionTrue,
		fleet.StageUpdatingStartedReason, StageStartedMessage)
}

func (p *pass) markStageWaiting(s *fleet.StageUpdatingStatus, msg string) {
	p.set(&s.Conditions, fleet.StageUpdatingConditionProgressing, metav1.ConditionFalse,
		fleet.StageUpdatingWaitingReason, msg)
}

func (p *pass) markStageStopping(s *fleet.StageUpdatingStatus) {
	p.set(&s.Conditions, fleet.StageUpdatingConditionProgressing, metav1.ConditionUnknown,
		fleet.StageUpdatingStoppingReason, StageStoppingMessage)
}

func (p *pass) markStageStopped(s *fleet.StageUpdatingStatus) {
	p.set(&s.Conditions, fleet.StageUpdatingConditionProgressing, metav1.ConditionFalse,
		fleet.StageUpdatingStoppedReason, StageStoppedMessage)
}

func (p *pass) markStageSucceeded(s *fleet.StageUpdatingStatus) {
	p.endTime(s)
	p.set(&s.Conditions, fleet.StageUpdatingConditionProgressing, metav1.ConditionFalse,
		fleet.StageUpdatingSucceededReason, StageSucceededProgMessage)
	p.set(&s.Conditions, fleet.StageUpdatingConditionSucceeded, metav1.ConditionTrue,
		fleet.StageUpdatingSucceededReason, StageSucceededMessage)
}

func (p *pass) markStageFailed(s *fleet.StageUpdatingStatus, msg string) {
	p.endTime(s)
	p.set(&s.Conditions, fleet.StageUpdatingConditionProgressing, metav1.ConditionFalse,
		fleet.StageUpdatingFailedReason, StageFailedProgMessage)
	p.set(&s.Conditions, fleet.StageUpdatingConditionSucceeded, metav1.ConditionFalse,
		fleet.StageUpdatingFailedReason, condmsg.Cap(msg))
}

func (p *pass) markStageSkipped(s *fleet.StageUpdatingStatus) {
	p.startTime(s)
	p.endTime(s)
	p.set(&s.Conditions, fleet.StageUpdatingConditionProgressing, metav1.ConditionFalse,
		fleet.StageUpdatingSkippedNoClustersReason, StageSkippedNoClustersMessage)
	p.set(&s.Conditions, fleet.StageUpdatingConditionSucceeded, metav1.ConditionTrue,
		fleet.StageUpdatingSkippedNoClustersReason, StageSkippedNoClustersMessage)
}

// ---- cluster ----

// markClusterStarted, markClusterSucceeded and markClusterFailed log each
// cluster's start and end at info level: an operator follows a rollout
// cluster by cluster in the log as in the status file.
func (p *pass) markClusterStarted(stage string, c *fleet.ClusterUpdatingStatus) {
	p.set(&c.Conditions, fleet.ClusterUpdatingConditionStarted, metav1.ConditionTrue,
		fleet.ClusterUpdatingStartedReason, ClusterStartedMessage)
	p.log.Info("cluster update started", "stage", stage, "cluster", c.ClusterName)
}

func (p *pass) markClusterSucceeded(stage string, c *fleet.ClusterUpdatingStatus) {
	p.set(&c.Conditions, fleet.ClusterUpdatingConditionSucceeded, metav1.ConditionTrue,
		fleet.ClusterUpdatingSucceededReason, ClusterSucceededMessage)
	p.log.Info("cluster update finished", "stage", stage, "cluster", c.ClusterName)
}

func (p *pass) markClusterFailed(stage string, c *fleet.ClusterUpdatingStatus, msg string) {
	p.set(&c.Conditions, fleet.ClusterUpdatingConditionSucceeded, metav1.ConditionFalse,
		fleet.ClusterUpdatingFailedReason, condmsg.Cap(msg))
	p.log.Warn("cluster update failed", "stage", stage, "cluster", c.ClusterName, "err", msg)
}

func (p *pass) markRunWaitingForWindow(w fleet.WindowWait, stage string) {
	p.set(&p.run.Status.Conditions, fleet.StagedUpdateRunConditionProgressing, metav1.ConditionFalse,
		fleet.UpdateRunWaitingReason, fmt.Sprintf(RunWaitingForWindowMessageFmt, w.String(), stage))
}
