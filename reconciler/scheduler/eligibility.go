package scheduler

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// KubeFleet's cluster eligibility check (pkg/scheduler/clustereligibilitychecker):
// a member whose agent is not connected is not picked for new placements.
// Its bindings stay: a run reaching such a cluster waits for it, and turns
// Stuck, as with any cluster that does not finish.
const (
	// HeartbeatCheckTimeout is how long after its agent's last heartbeat
	// a member stops being eligible (KubeFleet's default, 5m; the hub marks
	// it Healthy=False sooner, after membercluster.DefaultUnhealthyThreshold).
	HeartbeatCheckTimeout = 5 * time.Minute
	// HealthCheckTimeout is how long an agent may report its member
	// unhealthy before the member stops being eligible (KubeFleet's, 5m).
	HealthCheckTimeout = 5 * time.Minute

	// clusterUnschedulable is the name of KubeFleet's framework status a
	// filter plugin returns; a filtered cluster's decision reason is that
	// name and the plugin's reason.
	clusterUnschedulable = "ClusterUnschedulable"
	// pickFixedInvalidClusterReason is a listed cluster that is not
	// eligible.
	pickFixedInvalidClusterReason = "Cluster \"%s\" is not eligible for resource placement yet: %s"
)

// ineligible is why m may not be picked for a new placement at now, or ""
// when it may: KubeFleet's IsEligible, with the same reasons. A member that
// gitfleet reaches itself (simulated, kubeconfig) has no agent to check; a
// member that pulls (gitfleet.io/driver: work) is checked on what its agent
// reported, copied into the MemberCluster by the member cluster controller.
func ineligible(m *fleet.MemberCluster, now time.Time) string {
	if m.DeletionTimestamp != nil {
		return "cluster has left the fleet"
	}
	if m.Annotations[fleet.DriverAnnotation] != fleet.DriverWork {
		return ""
	}
	var agent *fleet.AgentStatus
	for i := range m.Status.AgentStatus {
		if m.Status.AgentStatus[i].Type == fleet.MemberAgent {
			agent = &m.Status.AgentStatus[i]
		}
	}
	if agent == nil {
		return "cluster is not connected to the fleet: member agent not online yet"
	}
	if since := now.Sub(agent.LastReceivedHeartbeat.Time); since > HeartbeatCheckTimeout {
		return fmt.Sprintf("cluster is not connected to the fleet: no recent heartbeat signals (last received %.2f minutes ago)", since.Minutes())
	}
	if joined := meta.FindStatusCondition(agent.Conditions, fleet.AgentJoined); joined == nil || joined.Status != metav1.ConditionTrue {
		return "cluster is not connected to the fleet: member agent not joined yet"
	}
	healthy := meta.FindStatusCondition(agent.Conditions, fleet.AgentHealthy)
	if healthy == nil {
		return "cluster is not connected to the fleet: health condition from member agent is not available"
	}
	if since := now.Sub(healthy.LastTransitionTime.Time); healthy.Status != metav1.ConditionTrue && since > HealthCheckTimeout {
		return fmt.Sprintf("cluster is not connected to the fleet: unhealthy for a prolonged period of time (last transitioned %.2f minutes ago)", since.Minutes())
	}
	return ""
}

// filteredDecision is the decision KubeFleet records for a cluster its
// eligibility filter left out.
func filteredDecision(cluster, reason string) fleet.ClusterDecision {
	return fleet.ClusterDecision{ClusterName: cluster, Reason: clusterUnschedulable + ", " + reason}
}
