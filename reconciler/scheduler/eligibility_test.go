package scheduler_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// pulled is a member whose agent pulls its Works (gitfleet.io/driver: work).
func pulled(name string) *fleet.MemberCluster {
	m := member(name, "environment", "prod")
	m.Annotations = map[string]string{fleet.DriverAnnotation: fleet.DriverWork}
	return m
}

// agentReport is what a member agent last reported, as the member cluster
// controller copies it into the MemberCluster.
type agentReport struct {
	heartbeatAgo time.Duration
	joined       metav1.ConditionStatus // "" leaves the condition out
	healthy      metav1.ConditionStatus // "" leaves the condition out
	healthyFor   time.Duration          // how long ago Healthy last transitioned
}

var connected = agentReport{heartbeatAgo: 30 * time.Second, joined: metav1.ConditionTrue, healthy: metav1.ConditionTrue, healthyFor: time.Hour}

// report writes r into member name's status at the fixture's clock.
func (f *fixture) report(name string, r agentReport) {
	f.t.Helper()
	members, err := f.hub.ListMemberClusters(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	now := f.clk.Now()
	for _, m := range members {
		if m.Name != name {
			continue
		}
		a := fleet.AgentStatus{Type: fleet.MemberAgent, LastReceivedHeartbeat: metav1.NewTime(now.Add(-r.heartbeatAgo))}
		if r.joined != "" {
			a.Conditions = append(a.Conditions, metav1.Condition{Type: fleet.AgentJoined, Status: r.joined, Reason: "Test",
				LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))})
		}
		if r.healthy != "" {
			a.Conditions = append(a.Conditions, metav1.Condition{Type: fleet.AgentHealthy, Status: r.healthy, Reason: "Test",
				LastTransitionTime: metav1.NewTime(now.Add(-r.healthyFor))})
		}
		m.Status.AgentStatus = []fleet.AgentStatus{a}
		if err := f.hub.UpdateMemberClusterStatus(f.ctx, m); err != nil {
			f.t.Fatal(err)
		}
		return
	}
	f.t.Fatalf("no member cluster %s", name)
}

// decisions is the latest policy snapshot's decisions by cluster.
func (f *fixture) decisions() map[string]fleet.ClusterDecision {
	f.t.Helper()
	out := map[string]fleet.ClusterDecision{}
	for _, d := range f.latest().Status.ClusterDecisions {
		out[d.ClusterName] = d
	}
	return out
}

// A member that pulls is picked for a new placement only while its agent
// is connected, as KubeFleet's cluster eligibility check decides it, and a
// member left out shows KubeFleet's reason in the policy snapshot's
// decisions. A member gitfleet reaches itself has no agent to check.
func TestAMemberWhoseAgentIsNotConnectedIsNotPicked(t *testing.T) {
	for _, tc := range []struct {
		name   string
		report *agentReport // nil: the agent never reported
		why    string       // "" when it is picked
	}{
		{"connected", &connected, ""},
		{"never reported", nil, "cluster is not connected to the fleet: member agent not online yet"},
		{"heartbeat 4m ago", &agentReport{heartbeatAgo: 4 * time.Minute, joined: "True", healthy: "True", healthyFor: time.Hour}, ""},
		{"heartbeat lost", &agentReport{heartbeatAgo: 6 * time.Minute, joined: "True", healthy: "True", healthyFor: time.Hour},
			"cluster is not connected to the fleet: no recent heartbeat signals (last received 6.00 minutes ago)"},
		{"not joined", &agentReport{heartbeatAgo: time.Second, joined: "False", healthy: "True"},
			"cluster is not connected to the fleet: member agent not joined yet"},
		{"no Joined condition", &agentReport{heartbeatAgo: time.Second, healthy: "True"},
			"cluster is not connected to the fleet: member agent not joined yet"},
		{"no Healthy condition", &agentReport{heartbeatAgo: time.Second, joined: "True"},
			"cluster is not connected to the fleet: health condition from member agent is not available"},
		{"unhealthy for a minute", &agentReport{heartbeatAgo: time.Second, joined: "True", healthy: "False", healthyFor: time.Minute}, ""},
		{"unhealthy for 10 minutes", &agentReport{heartbeatAgo: time.Second, joined: "True", healthy: "False", healthyFor: 10 * time.Minute},
			"cluster is not connected to the fleet: unhealthy for a prolonged period of time (last transitioned 10.00 minutes ago)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			policies := map[string]*fleet.PlacementPolicy{
				"PickAll":   {PlacementType: fleet.PickAllPlacementType},
				"PickN":     {PlacementType: fleet.PickNPlacementType, NumberOfClusters: n(2)},
				"PickFixed": {PlacementType: fleet.PickFixedPlacementType, ClusterNames: []string{"agent", "pushed"}},
			}
			for name, policy := range policies {
				t.Run(name, func(t *testing.T) {
					f := newFixture(t, "", pulled("agent"), member("pushed", "environment", "prod"))
					if tc.report != nil {
						f.report("agent", *tc.report)
					}
					f.place(policy)
					want := "[agent=Scheduled@example-placement-0 pushed=Scheduled@example-placement-0]"
					if tc.why != "" {
						want = "[pushed=Scheduled@example-placement-0]"
					}
					if got := f.states(); got != want {
						t.Fatalf("bindings %s, want %s", got, want)
					}
					d := f.decisions()["agent"]
					switch {
					case tc.why == "" && !d.Selected:
						t.Errorf("agent's decision %+v, want selected", d)
					case tc.why != "" && policy.PlacementType == fleet.PickFixedPlacementType:
						if want := `Cluster "agent" is not eligible for resource placement yet: ` + tc.why; d.Selected || d.Reason != want {
							t.Errorf("agent's decision %+v, want not selected: %q", d, want)
						}
					case tc.why != "":
						if want := "ClusterUnschedulable, " + tc.why; d.Selected || d.Reason != want {
							t.Errorf("agent's decision %+v, want not selected: %q", d, want)
						}
					}
					fulfilled := tc.why == "" || policy.PlacementType == fleet.PickAllPlacementType
					if c := scheduledCond(f.latest()); c == nil || (c.Status == metav1.ConditionTrue) != fulfilled {
						t.Errorf("Scheduled = %+v, want fulfilled %v", c, fulfilled)
					}
				})
			}
		})
	}
}

// KubeFleet's eligibility check keeps a cluster out of new placements
// only: a placement that holds a cluster whose agent stops heartbeating
// keeps its binding (a run reaching it waits for it), under every policy,
// while a new placement passes it by; once the agent is back, the new
// placement picks it too.
func TestALostHeartbeatKeepsTheBindingsAPlacementHolds(t *testing.T) {
	for name, policy := range map[string]*fleet.PlacementPolicy{
		"PickAll":   {PlacementType: fleet.PickAllPlacementType},
		"PickN":     {PlacementType: fleet.PickNPlacementType, NumberOfClusters: n(2)},
		"PickFixed": {PlacementType: fleet.PickFixedPlacementType, ClusterNames: []string{"agent", "pushed"}},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, "", pulled("agent"), member("pushed", "environment", "prod"))
			f.report("agent", connected)
			f.place(policy)
			f.bound("agent")

			f.clk.Advance(10 * time.Minute) // no heartbeat since
			f.schedule()
			if got, want := f.states(), "[agent=Bound@example-placement-0 pushed=Scheduled@example-placement-0]"; got != want {
				t.Fatalf("held placement after the heartbeat was lost: %s, want %s", got, want)
			}

			held := f.key
			f.key = hub.Key{Name: "new-placement"}
			f.hub.ApplyPlacement(&fleet.Placement{ObjectMeta: metav1.ObjectMeta{Name: f.key.Name},
				Spec: fleet.PlacementSpec{Policy: policy, Strategy: fleet.RolloutStrategy{Type: fleet.ExternalRolloutStrategyType}}})
			f.schedule()
			if got, want := f.states(), "[pushed=Scheduled@new-placement-0]"; got != want {
				t.Fatalf("new placement while the heartbeat is lost: %s, want %s", got, want)
			}

			f.report("agent", connected)
			f.schedule()
			if got, want := f.states(), "[agent=Scheduled@new-placement-0 pushed=Scheduled@new-placement-0]"; got != want {
				t.Fatalf("new placement once the agent is back: %s, want %s", got, want)
			}
			f.key = held
			if got, want := f.states(), "[agent=Bound@example-placement-0 pushed=Scheduled@example-placement-0]"; got != want {
				t.Fatalf("held placement once the agent is back: %s, want %s", got, want)
			}
		})
	}
}
