package embedded

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

// Condition type and reasons of a member's Joined condition, as KubeFleet's
// member cluster controller reports them (the JOINED printer column).
const (
	MemberClusterConditionJoined = "Joined"
	MemberClusterJoinedReason    = "MemberClusterJoined"
)

// setJoined records whether gitfleet knows how to reach a member: Joined=True
// when a driver is configured, False (with the reason) otherwise. It is the hub's view of the member, so it lives in the
// member's status and keeps its transition time while nothing changes.
func setJoined(m *fleet.MemberCluster, now time.Time) {
	c := metav1.Condition{
		Type: MemberClusterConditionJoined, ObservedGeneration: m.Generation,
		LastTransitionTime: metav1.NewTime(now.UTC().Truncate(time.Second)),
	}
	driver := m.Annotations[fleet.DriverAnnotation]
	switch {
	case driver == fleet.DriverSimulated:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, MemberClusterJoinedReason, "the member cluster is simulated by gitfleet"
	case driver == "":
		c.Status, c.Reason = metav1.ConditionFalse, member.DriverNotConfiguredReason
		c.Message = fmt.Sprintf("member cluster %q has no %s annotation; set it to %q or \"kubeconfig:<context>\"", m.Name, fleet.DriverAnnotation, fleet.DriverSimulated)
	case strings.HasPrefix(driver, fleet.DriverKubeconfigPrefix):
		// Reachability is the binding's to tell (Applied names the context
		// and the cause): a member API server that is down for a minute is
		// still a member of the fleet.
		c.Status, c.Reason = metav1.ConditionTrue, MemberClusterJoinedReason
		c.Message = fmt.Sprintf("the member cluster is reached through kubeconfig context %q", strings.TrimPrefix(driver, fleet.DriverKubeconfigPrefix))
	default:
		c.Status, c.Reason = metav1.ConditionFalse, member.DriverNotConfiguredReason
		c.Message = fmt.Sprintf("member cluster %q has an unknown driver %q in %s", m.Name, driver, fleet.DriverAnnotation)
	}
	meta.SetStatusCondition(&m.Status.Conditions, c)
}

// setSimulatedProperties gives a simulated member the properties its
// annotations declare (member.SimulatedObservation) as it joins or changes,
// so the scheduler sees them in the same pass, in `serve` and `simulate`
// alike. A member without a driver reports none; a kubeconfig member's are
// observed from its nodes (member.PropertyCollector).
func setSimulatedProperties(m *fleet.MemberCluster, now time.Time) {
	switch m.Annotations[fleet.DriverAnnotation] {
	case fleet.DriverSimulated:
		member.Record(&m.Status, member.SimulatedObservation(m.Annotations), now)
	case "":
		member.Record(&m.Status, member.Observation{}, now)
	}
}
