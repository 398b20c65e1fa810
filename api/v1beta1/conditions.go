package v1beta1

// Condition types of a run (spec §2.4).
const (
	StagedUpdateRunConditionInitialized = "Initialized"
	StagedUpdateRunConditionProgressing = "Progressing"
	StagedUpdateRunConditionSucceeded   = "Succeeded"
)

// Condition types of a stage (spec §3.1).
const (
	StageUpdatingConditionProgressing = "Progressing"
	StageUpdatingConditionSucceeded   = "Succeeded"
)

// Condition types of a cluster in a stage (spec §3.2).
const (
	ClusterUpdatingConditionStarted   = "Started"
	ClusterUpdatingConditionSucceeded = "Succeeded"
)

// Condition types of a stage task (spec §1.4).
const (
	StageTaskConditionApprovalRequestCreated  = "ApprovalRequestCreated"
	StageTaskConditionApprovalRequestApproved = "ApprovalRequestApproved"
	StageTaskConditionWaitTimeElapsed         = "WaitTimeElapsed"
)

// Condition types of an approval request (spec §1.5).
const (
	ApprovalRequestConditionApproved         = "Approved"
	ApprovalRequestConditionApprovalAccepted = "ApprovalAccepted"
)

// Condition types of a binding (spec §1.6).
const (
	ResourceBindingRolloutStarted   = "RolloutStarted"
	ResourceBindingOverridden       = "Overridden"
	ResourceBindingWorkSynchronized = "WorkSynchronized"
	ResourceBindingApplied          = "Applied"
	ResourceBindingAvailable        = "Available"
	ResourceBindingDiffReported     = "DiffReported"
	// ResourceBindingPruneSkipped is gitfleet's own: True while objects that
	// left the binding's snapshot stay on the member because they are
	// annotated prune: disabled; its message names them.
	ResourceBindingPruneSkipped = "PruneSkipped"
)

// Condition type of a scheduling policy snapshot.
const PolicySnapshotScheduled = "Scheduled"

// Run condition reasons (spec §2.4).
const (
	UpdateRunInitializeSucceededReason = "UpdateRunInitializedSuccessfully"
	UpdateRunInitializeFailedReason    = "UpdateRunInitializedFailed"
	UpdateRunProgressingReason         = "UpdateRunProgressing"
	UpdateRunWaitingReason             = "UpdateRunWaiting"
	UpdateRunStuckReason               = "UpdateRunStuck"
	UpdateRunStoppingReason            = "UpdateRunStopping"
	UpdateRunStoppedReason             = "UpdateRunStopped"
	UpdateRunSucceededReason           = "UpdateRunSucceeded"
	UpdateRunFailedReason              = "UpdateRunFailed"
)

// Stage condition reasons (spec §3.1).
const (
	StageUpdatingStartedReason           = "StageUpdatingStarted"
	StageUpdatingWaitingReason           = "StageUpdatingWaiting"
	StageUpdatingStoppingReason          = "StageUpdatingStopping"
	StageUpdatingStoppedReason           = "StageUpdatingStopped"
	StageUpdatingSucceededReason         = "StageUpdatingSucceeded"
	StageUpdatingFailedReason            = "StageUpdatingFailed"
	StageUpdatingSkippedNoClustersReason = "StageUpdatingSkippedNoClusters"
)

// Cluster condition reasons (spec §3.2).
const (
	ClusterUpdatingStartedReason   = "ClusterUpdatingStarted"
	ClusterUpdatingSucceededReason = "ClusterUpdatingSucceeded"
	ClusterUpdatingFailedReason    = "ClusterUpdatingFailed"
)

// Task condition reasons (spec §3.9, §4).
const (
	StageTaskApprovalRequestCreatedReason  = "StageTaskApprovalRequestCreated"
	StageTaskApprovalRequestApprovedReason = "StageTaskApprovalRequestApproved"
	AfterStageTaskWaitTimeElapsedReason    = "AfterStageTaskWaitTimeElapsed"
	// AfterStageTaskWaitTimeNotElapsedReason is gitfleet's (deliberate
	// difference 6): WaitTimeElapsed=False with the end of the wait.
	AfterStageTaskWaitTimeNotElapsedReason = "AfterStageTaskWaitTimeNotElapsed"
	// StageTaskApprovalIgnoredReason is gitfleet's (deliberate difference 5):
	// an Approved condition at the wrong observedGeneration, explained.
	StageTaskApprovalIgnoredReason = "StageTaskApprovalRequestApprovalIgnored"
)

// Approval request reasons.
const (
	ApprovalRequestApprovalAcceptedReason = "ApprovalRequestApprovalAccepted"
	// Reasons `kubectl fleet approve` (and `gitfleet approve`) write.
	ClusterApprovalRequestApprovedReason = "ClusterApprovalRequestApproved"
	ApprovalRequestApprovedReason        = "ApprovalRequestApproved"
)

// Binding condition reasons.
const (
	RolloutStartedReason = "RolloutStarted"

	// Non-terminal False reasons of the delivery layer (spec §3.5, §5.3).
	OverriddenPendingReason       = "OverriddenPending"
	WorkNotSynchronizedYetReason  = "WorkNotSynchronizedYet"
	ApplyPendingReason            = "ApplyPending"
	ResourceNotAvailableYetReason = "ResourceNotAvailableYet"
	SyncWorkFailedReason          = "SyncWorkFailed"

	// The reasons of KubeFleet's work generator for a binding whose Works
	// it has just changed, before the member reports on them: Applied=False
	// ApplyInProgress, or DiffReported=False DiffReportInProgress under
	// ReportDiff (its condition.WorkApplyInProcess, WorkDiffReportInProcess).
	// The engine waits on them (README, deliberate differences, 31).
	ApplyInProgressReason      = "ApplyInProgress"
	DiffReportInProgressReason = "DiffReportInProgress"
)
