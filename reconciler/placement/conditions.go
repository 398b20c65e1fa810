package placement

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// The condition vocabulary of KubeFleet's placement controller
// (pkg/utils/condition, pkg/controllers/placement), so a placement status
// written by gitfleet reads like KubeFleet's.

// resourceCondition is one of the rollout condition types, in the order
// KubeFleet evaluates them.
type resourceCondition int

const (
	rolloutStarted resourceCondition = iota
	overridden
	workSynchronized
	applied
	available
	diffReported
	totalConditions
)

var (
	condTypesForApply      = []resourceCondition{rolloutStarted, overridden, workSynchronized, applied, available}
	condTypesForReportDiff = []resourceCondition{rolloutStarted, overridden, workSynchronized, diffReported}
)

// suffix is the condition type of a cluster's status (and the binding's),
// and the suffix of the placement-level type.
func (c resourceCondition) suffix() string {
	return [...]string{"RolloutStarted", "Overridden", "WorkSynchronized", "Applied", "Available", "DiffReported"}[c]
}

const (
	scheduledSuffix = "Scheduled"

	// Per-cluster Scheduled reason.
	scheduleSucceededReason = "Scheduled"
	scheduleFailedReason    = "ScheduleFailed"
	// Placement-level Scheduled while the scheduler has not caught up.
	schedulingUnknownReason  = "SchedulePending"
	schedulingUnknownMessage = "Scheduling has not completed"

	rolloutControlledByExternalControllerReason = "RolloutControlledByExternalController"
	externalMixedMessage                        = "Rollout is controlled by an external controller and different resource snapshot versions are observed across clusters"
	externalNoneMessage                         = "Rollout is controlled by an external controller and no resource snapshot name is observed across clusters, probably rollout has not started yet"
	externalClusterUnknownMessage               = "Rollout is controlled by an external controller and cluster %s is in RolloutStarted Unknown state"

	overrideNotSpecifiedReason  = "NoOverrideSpecified"
	overrideNotSpecifiedMessage = "No override rules are configured for the selected resources"
)

// typeFor is the placement-level condition type: prefixed with
// ClusterResourcePlacement or ResourcePlacement.
func typeFor(p *fleet.Placement, suffix string) string {
	return fleet.PlacementKind(p.Namespace) + suffix
}

func cond(t string, s metav1.ConditionStatus, reason, message string, gen int64) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: message, ObservedGeneration: gen}
}

// unknownPerCluster is KubeFleet's UnknownPerClusterCondition.
func (c resourceCondition) unknownPerCluster(gen int64) metav1.Condition {
	t := [...][2]string{
		{"RolloutStartedUnknown", "In the process of deciding whether to roll out some version of the resources or not"},
		{"OverriddenPending", "In the process of overriding the selected resources if there is any override defined"},
		{"WorkSynchronizedUnknown", "In the process of creating or updating the work object(s) in the hub cluster"},
		{"ApplyPending", "In the process of applying the resources on the member cluster"},
		{"ResourceAvailableUnknown", "The availability of the selected resources is unknown yet "},
		{"DiffReportingPending", "Diff reporting has just started; its status is not yet to be known"},
	}[c]
	return cond(c.suffix(), metav1.ConditionUnknown, t[0], t[1], gen)
}

// placementCondition is KubeFleet's {Unknown,False,True}{Cluster,}ResourcePlacementCondition:
// the summary of one condition type over clusterCount clusters.
func (c resourceCondition) placementCondition(p *fleet.Placement, status metav1.ConditionStatus, clusterCount int) metav1.Condition {
	type text struct{ reason, format string }
	var table [totalConditions]text
	switch status {
	case metav1.ConditionUnknown:
		table = [...]text{
			{"RolloutStartedUnknown", "There are still %d cluster(s) in the process of deciding whether to roll out the latest resources or not"},
			{"OverriddenPending", "There are still %d cluster(s) in the process of overriding the selected resources if there is any override defined"},
			{"WorkSynchronizedUnknown", "There are still %d cluster(s) in the process of creating or updating the work object(s) in the hub cluster"},
			{"ApplyPending", "There are still %d cluster(s) in the process of applying the resources on the member cluster"},
			{"ResourceAvailableUnknown", "There are still %d cluster(s) in the process of checking the availability of the selected resources"},
			{"DiffReportingPending", "There are still %d cluster(s) in the process of checking for configuration differences"},
		}
	case metav1.ConditionFalse:
		table = [...]text{
			{"RolloutNotStartedYet", "The rollout is being blocked by the rollout strategy in %d cluster(s)"},
			{"OverriddenFailed", "Failed to override resources in %d cluster(s)"},
			{"WorkNotSynchronizedYet", "There are %d cluster(s) which have not finished creating or updating work(s) yet"},
			{"ApplyFailed", "Failed to apply resources to %d cluster(s), please check the `failedPlacements` status"},
			{"ResourceNotAvailableYet", "The selected resources in %d cluster(s) are still not available yet"},
			{"DiffReportingIncompleteOrFailed", "Diff reporting in %d clusters is still in progress or has failed"},
		}
	default:
		table = [...]text{
			{"RolloutStarted", "All %d cluster(s) start rolling out the latest resource"},
			{"OverriddenSucceeded", "The selected resources are successfully overridden in %d cluster(s)"},
			{"WorkSynchronized", "Works(s) are succcesfully created or updated in %d target cluster(s)' namespaces"},
			{"ApplySucceeded", "The selected resources are successfully applied to %d cluster(s)"},
			{"ResourceAvailable", "The selected resources in %d cluster(s) are available now"},
			{"DiffReportingCompleted", "Diff reporting in %d cluster(s) has been completed"},
		}
	}
	t := table[c]
	return cond(typeFor(p, c.suffix()), status, t.reason, fmt.Sprintf(t.format, clusterCount), p.Generation)
}
