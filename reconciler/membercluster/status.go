package membercluster

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// A MemberCluster's conditions and their reasons, KubeFleet's.
const (
	ConditionReadyToJoin = "ReadyToJoin"
	ConditionJoined      = "Joined"
	// ConditionHealthy is the member's health as the hub sees it: its
	// agent heartbeats, and reports its API server healthy.
	ConditionHealthy = "Healthy"

	reasonReadyToJoin    = "MemberClusterReadyToJoin"
	reasonNotReadyToJoin = "MemberClusterNotReadyToJoin"
	reasonJoined         = "MemberClusterJoined"
	reasonLeft           = "MemberClusterLeft"
	reasonJoinUnknown    = "MemberClusterJoinStateUnknown"

	// The reasons of Healthy, those of KubeFleet's cluster inventory
	// (ControlPlaneHealthy of a ClusterProfile), with their messages.
	ReasonHeartbeatLost  = "MemberAgentHeartbeatLost"
	MessageHeartbeatLost = "The Fleet member agent has lost its heartbeat connection to the Fleet hub cluster"
	reasonNoStatus       = "MemberAgentReportedNoStatus"
	reasonNoHealthInfo   = "MemberAgentReportedNoHealthInfo"
	reasonUnhealthy      = "MemberClusterAPIServerUnhealthy"
	reasonHealthy        = "MemberClusterAPIServerHealthy"
)

// syncStatus copies what the agent reported in imc into m's status and
// aggregates its Joined condition into m's.
func syncStatus(imc *fleet.InternalMemberCluster, m *fleet.MemberCluster) {
	if imc == nil {
		return
	}
	if len(imc.Status.AgentStatus) > 0 {
		m.Status.AgentStatus = make([]fleet.AgentStatus, len(imc.Status.AgentStatus))
	}
	for i := range imc.Status.AgentStatus {
		m.Status.AgentStatus[i] = *imc.Status.AgentStatus[i].DeepCopy()
		for j := range m.Status.AgentStatus[i].Conditions {
			m.Status.AgentStatus[i].Conditions[j].ObservedGeneration = m.Generation
		}
	}
	aggregateJoined(m)
	m.Status.ResourceUsage = imc.Status.ResourceUsage
	m.Status.Namespaces = imc.Status.Namespaces
	for _, cond := range imc.Status.Conditions {
		cond.ObservedGeneration = m.Generation
		meta.SetStatusCondition(&m.Status.Conditions, cond)
	}
	m.Status.Properties = imc.Status.Properties
}

// aggregateJoined is the member's Joined from its one expected agent, the
// member agent.
func aggregateJoined(m *fleet.MemberCluster) {
	set := func(status metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: ConditionJoined, Status: status,
			Reason: reason, Message: message, ObservedGeneration: m.Generation})
	}
	agent := agentStatus(m)
	if agent == nil {
		set(metav1.ConditionUnknown, reasonJoinUnknown, fmt.Sprintf(
			"Member cluster %s has not reported all the expected agents, expected %d, got %d", m.Name, 1, len(m.Status.AgentStatus)))
		return
	}
	joined := meta.FindStatusCondition(agent.Conditions, fleet.AgentJoined)
	switch {
	case joined == nil:
		set(metav1.ConditionUnknown, reasonJoinUnknown, fmt.Sprintf(
			"Member cluster %s has not reported the join condition for agent %s", m.Name, agent.Type))
	case joined.Status == metav1.ConditionTrue:
		set(metav1.ConditionTrue, reasonJoined, "Member cluster has successfully joined the fleet")
	case joined.Status == metav1.ConditionFalse:
		set(metav1.ConditionFalse, reasonLeft, "Member cluster has left the fleet")
		meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: ConditionReadyToJoin, Status: metav1.ConditionFalse,
			Reason: reasonNotReadyToJoin, Message: "Member cluster is not ready to join the fleet", ObservedGeneration: m.Generation})
	default:
		set(metav1.ConditionUnknown, reasonJoinUnknown, "Member agents are not in a consistent state")
	}
}

func agentStatus(m *fleet.MemberCluster) *fleet.AgentStatus {
	for i := range m.Status.AgentStatus {
		if m.Status.AgentStatus[i].Type == fleet.MemberAgent {
			return &m.Status.AgentStatus[i]
		}
	}
	return nil
}

// markHealth sets the member's Healthy condition from its agent's last
// heartbeat and health report, in the order and with the reasons of
// KubeFleet's cluster inventory, and returns when the heartbeat will count
// as lost (0 when it already does, or there is no heartbeat to lose).
func (c *Controller) markHealth(m *fleet.MemberCluster) time.Duration {
	set := func(status metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: ConditionHealthy, Status: status,
			Reason: reason, Message: message, ObservedGeneration: m.Generation})
	}
	agent := agentStatus(m)
	if agent == nil {
		set(metav1.ConditionUnknown, reasonNoStatus, "The Fleet member agent has not reported its status yet")
		return 0
	}
	since := c.cfg.Clock.Now().Sub(agent.LastReceivedHeartbeat.Time)
	healthy := meta.FindStatusCondition(agent.Conditions, fleet.AgentHealthy)
	lost := agent.LastReceivedHeartbeat.IsZero() || since > c.cfg.UnhealthyThreshold
	switch {
	case healthy == nil:
		set(metav1.ConditionUnknown, reasonNoHealthInfo, "The Fleet member agent has reported its status, but the health condition is missing")
	case lost:
		set(metav1.ConditionFalse, ReasonHeartbeatLost, MessageHeartbeatLost)
	case healthy.Status == metav1.ConditionUnknown:
		set(metav1.ConditionUnknown, reasonNoHealthInfo, "The Fleet member agent health check result is out of date or unknown")
	case healthy.Status == metav1.ConditionFalse:
		set(metav1.ConditionFalse, reasonUnhealthy, "The Fleet member agent reports that the API server is unhealthy")
	default:
		set(metav1.ConditionTrue, reasonHealthy, "The Fleet member agent reports that the API server is healthy")
	}
	if lost {
		return 0
	}
	return c.cfg.UnhealthyThreshold - since + time.Nanosecond
}
