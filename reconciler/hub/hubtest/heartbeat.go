package hubtest

import (
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/scheduler"
)

// aLostHeartbeatKeepsAMemberOutOfNewPlacements: the scheduler reads a
// pulled member's agent status from the hub's storage as KubeFleet's
// cluster eligibility check does. While the agent heartbeats, a placement
// picks the member; once its last heartbeat is older than
// scheduler.HeartbeatCheckTimeout, a new placement passes it by with
// KubeFleet's reason, and the placement that holds it keeps its binding.
func (s *suite) aLostHeartbeatKeepsAMemberOutOfNewPlacements() {
	statuses, ok := s.h.(hub.MemberClusterStatuses)
	if !ok {
		s.t.Fatalf("%T does not store member statuses (hub.MemberClusterStatuses)", s.h)
	}
	s.s.Apply(s.t, &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "pulled",
		Annotations: map[string]string{fleet.DriverAnnotation: fleet.DriverWork}}})
	s.s.Apply(s.t, &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "pushed",
		Annotations: map[string]string{fleet.DriverAnnotation: fleet.DriverSimulated}}})
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m := s.member("pulled")
	at := metav1.NewTime(clk.Now())
	m.Status.AgentStatus = []fleet.AgentStatus{{Type: fleet.MemberAgent, LastReceivedHeartbeat: at, Conditions: []metav1.Condition{
		{Type: fleet.AgentJoined, Status: metav1.ConditionTrue, Reason: "Joined", LastTransitionTime: at},
		{Type: fleet.AgentHealthy, Status: metav1.ConditionTrue, Reason: "Healthy", LastTransitionTime: at},
	}}}
	s.must(statuses.UpdateMemberClusterStatus(s.ctx, m))

	sched := &scheduler.Scheduler{Hub: s.h, Clock: clk}
	place := func(name string) map[string]*fleet.Binding {
		s.t.Helper()
		if _, err := s.h.GetPlacement(s.ctx, s.key(name)); hub.IsNotFound(err) {
			s.s.Apply(s.t, s.placement(name))
		}
		s.must(sched.Schedule(s.ctx, s.key(name)))
		bindings, err := s.h.ListBindings(s.ctx, s.key(name))
		s.must(err)
		out := map[string]*fleet.Binding{}
		for _, b := range bindings {
			out[b.Spec.TargetCluster] = b
		}
		return out
	}
	if got := place("first"); got["pulled"] == nil || got["pushed"] == nil {
		s.t.Fatalf("placement first while the agent heartbeats: bindings %v, want pulled and pushed", got)
	}

	clk.Advance(scheduler.HeartbeatCheckTimeout + time.Minute)
	if got := place("second"); got["pulled"] != nil || got["pushed"] == nil {
		s.t.Fatalf("placement second after the heartbeat was lost: bindings %v, want pushed only", got)
	}
	snaps, err := s.h.ListPolicySnapshots(s.ctx, s.key("second"))
	s.must(err)
	want := "ClusterUnschedulable, cluster is not connected to the fleet: no recent heartbeat signals (last received 6.00 minutes ago)"
	found := false
	for _, snap := range snaps {
		for _, d := range snap.Status.ClusterDecisions {
			if d.ClusterName == "pulled" {
				found = true
				if d.Selected || d.Reason != want {
					s.t.Errorf("second's decision for pulled = %+v, want not selected: %q", d, want)
				}
			}
		}
	}
	if !found {
		s.t.Errorf("second's policy snapshots %v record no decision for pulled", snaps)
	}
	if got := place("first"); got["pulled"] == nil || got["pulled"].Spec.State == fleet.BindingStateUnscheduled {
		s.t.Errorf("placement first after the heartbeat was lost: pulled's binding %+v, want it kept", got["pulled"])
	}
}

// aPlacementPicksAPulledMemberOnceItJoins: a placement scheduled before a
// pulled member's agent joined passes the member by ("member agent not
// online yet", KubeFleet's reason); the agent's join, copied into the
// member's status, is a member event (what wakes every placement, as
// KubeFleet's member cluster watcher requeues placements when a cluster
// turns eligible), and the next scheduling picks the member for a PickAll
// placement and a PickN one that was not fully scheduled.
func (s *suite) aPlacementPicksAPulledMemberOnceItJoins() {
	statuses, ok := s.h.(hub.MemberClusterStatuses)
	if !ok {
		s.t.Fatalf("%T does not store member statuses (hub.MemberClusterStatuses)", s.h)
	}
	var mu sync.Mutex
	joinEvents := 0
	s.h.(hub.Notifier).Subscribe(func(e hub.Event) {
		if e.Kind == hub.EventMemberCluster && e.Key.Name == "late" {
			mu.Lock()
			defer mu.Unlock()
			joinEvents++
		}
	})
	s.s.Apply(s.t, &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "late",
		Annotations: map[string]string{fleet.DriverAnnotation: fleet.DriverWork}}})
	s.s.Apply(s.t, &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "pushed",
		Annotations: map[string]string{fleet.DriverAnnotation: fleet.DriverSimulated}}})
	all := s.placement("all")
	two := s.placement("two")
	n := int32(2)
	two.Spec.Policy = &fleet.PlacementPolicy{PlacementType: fleet.PickNPlacementType, NumberOfClusters: &n}
	s.s.Apply(s.t, all)
	s.s.Apply(s.t, two)

	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	sched := &scheduler.Scheduler{Hub: s.h, Clock: clk}
	schedule := func() (picked map[string][]string, late map[string]fleet.ClusterDecision) {
		s.t.Helper()
		picked, late = map[string][]string{}, map[string]fleet.ClusterDecision{}
		for _, p := range []string{"all", "two"} {
			s.must(sched.Schedule(s.ctx, s.key(p)))
			bindings, err := s.h.ListBindings(s.ctx, s.key(p))
			s.must(err)
			for _, b := range bindings {
				picked[p] = append(picked[p], b.Spec.TargetCluster)
			}
			snaps, err := s.h.ListPolicySnapshots(s.ctx, s.key(p))
			s.must(err)
			for _, snap := range snaps {
				for _, d := range snap.Status.ClusterDecisions {
					if d.ClusterName == "late" {
						late[p] = d
					}
				}
			}
		}
		return picked, late
	}
	picked, late := schedule()
	want := "ClusterUnschedulable, cluster is not connected to the fleet: member agent not online yet"
	for _, p := range []string{"all", "two"} {
		if fmt.Sprint(picked[p]) != "[pushed]" {
			s.t.Errorf("%s before late's agent joined: bindings on %v, want [pushed]", p, picked[p])
		}
		if d := late[p]; d.Selected || d.Reason != want {
			s.t.Errorf("%s before late's agent joined: decision for late %+v, want not selected: %q", p, d, want)
		}
	}

	mu.Lock()
	before := joinEvents
	mu.Unlock()
	m := s.member("late")
	at := metav1.NewTime(clk.Now())
	m.Status.AgentStatus = []fleet.AgentStatus{{Type: fleet.MemberAgent, LastReceivedHeartbeat: at, Conditions: []metav1.Condition{
		{Type: fleet.AgentJoined, Status: metav1.ConditionTrue, Reason: "Joined", LastTransitionTime: at},
		{Type: fleet.AgentHealthy, Status: metav1.ConditionTrue, Reason: "Healthy", LastTransitionTime: at},
	}}}
	s.must(statuses.UpdateMemberClusterStatus(s.ctx, m))
	await.Until(s.t, "the join to be a member event", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return joinEvents > before
	})

	picked, late = schedule()
	for _, p := range []string{"all", "two"} {
		if fmt.Sprint(picked[p]) != "[late pushed]" {
			s.t.Errorf("%s once late's agent joined: bindings on %v, want [late pushed]", p, picked[p])
		}
		if d := late[p]; !d.Selected {
			s.t.Errorf("%s once late's agent joined: decision for late %+v, want selected", p, d)
		}
	}
}
