package scheduler

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// Strings of KubeFleet's scheduler framework (pkg/scheduler/framework), so
// snapshots and bindings read as KubeFleet's do.
const (
	FullyScheduledReason    = "SchedulingPolicyFulfilled"
	NotFullyScheduledReason = "SchedulingPolicyUnfulfilled"

	fullyScheduledMessage    = "found all cluster needed as specified by the scheduling policy, found %d cluster(s)"
	notFullyScheduledMessage = "could not find all clusters needed as specified by the scheduling policy, found %d cluster(s) instead"

	pickFixedNotFoundClusterReason = "Specified cluster \"%s\" is not found"
	notPickedByScoreReason         = "Cluster \"%s\" does not score high enough (affinity score: %d, topology spread score: %d)"

	scheduledMessage          = "Successfully scheduled resources for placement in \"%s\": picked by scheduling policy"
	scheduledWithScoreMessage = "Successfully scheduled resources for placement in \"%s\" (affinity score: %d, topology spread score: %d): picked by scheduling policy"

	// PreviousBindingStateAnnotation records the state of a binding before
	// it was unscheduled, so picking its cluster again restores it.
	PreviousBindingStateAnnotation = fleet.FleetPrefix + "previous-binding-state"

	// noScheduleEffect is the only taint effect KubeFleet knows.
	noScheduleEffect = "NoSchedule"
	// maxUnselectedDecisions bounds the not-picked decisions in a policy
	// snapshot's status (KubeFleet's default).
	maxUnselectedDecisions = 20
)

// setCondition sets c with the transition time now, kept when the status
// does not change.
func setCondition(conds *[]metav1.Condition, c metav1.Condition, now time.Time) {
	c.LastTransitionTime = metav1.NewTime(now.UTC().Truncate(time.Second))
	meta.SetStatusCondition(conds, c)
}
