package kube

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler"
	"github.com/gitfleet/gitfleet/reconciler/agent"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/membercluster"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
	"github.com/gitfleet/gitfleet/reconciler/scheduler"
	"github.com/gitfleet/gitfleet/reconciler/updaterun"
)

// TestARunWaitsForAMemberWhoseAgentStopped: two members pull their Works,
// each through a real `gitfleet agent` (applying to a simulated member),
// on a kube hub that runs the engine, delivery and the member cluster
// controller on one fake clock. member2's agent stops; a run then reaches
// both: member1 succeeds, member2's Works wait on the hub and the cluster
// stays Started without Succeeded. One unhealthy threshold later the hub
// marks member2 Healthy=False MemberAgentHeartbeatLost (Joined stays
// True); one stuck threshold later the run is Stuck on member2, as with
// any cluster that does not finish; and a placement made once the
// heartbeat is older than the scheduler's timeout passes member2 by with
// KubeFleet's reason. All in virtual time: nothing waits for a real
// minute.
func TestARunWaitsForAMemberWhoseAgentStopped(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	th := startHub(t)
	ctx := await.Context(t)
	clk := clock.NewFake(time.Now().UTC().Truncate(time.Second))
	h := th.newHub(t, Config{Resources: selectWorkload, Deliver: true, RunStatusSpacing: -1})

	stop := startAgents(t, th, h, clk, "member1", "member2")
	memberCluster := func(name string) *fleet.MemberCluster {
		t.Helper()
		u, err := th.client.Resource(resources[fleet.KindMemberCluster]).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m := &fleet.MemberCluster{}
		if err := fromUnstructured(u, m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	condition := func(m *fleet.MemberCluster, typ string) metav1.Condition {
		if c := meta.FindStatusCondition(m.Status.Conditions, typ); c != nil {
			return *c
		}
		return metav1.Condition{}
	}
	stored := th.appPlacement(t, h)
	strategy := &fleet.UpdateStrategy{ObjectMeta: metav1.ObjectMeta{Name: "all-at-once"}, Spec: fleet.UpdateStrategySpec{
		Stages: []fleet.StageConfig{{Name: "all", LabelSelector: &metav1.LabelSelector{}, MaxConcurrency: maxConcurrency("100%")}}}}
	th.apply(t, h, strategy)
	if _, _, err := resourcesnapshot.Ensure(ctx, h, stored, []*unstructured.Unstructured{workload}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	engine := reconciler.NewEngine(h, clk, reconciler.EngineOptions{Committer: h, OnError: func(c string, err error) { t.Logf("%s: %v", c, err) }})
	f := &engineFleet{th: th, h: h, ctrl: engine}
	f.start(t)
	awaitBindings(t, h, 2)

	stop["member2"]()
	run := hub.Key{Name: "run"}
	th.apply(t, h, &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: run.Name}, Spec: fleet.UpdateRunSpec{
		PlacementName: "app", StagedUpdateStrategyName: strategy.Name, State: fleet.StateRun}})
	clusterConds := func(r *fleet.UpdateRun, cluster string) []metav1.Condition {
		for _, st := range r.Status.StagesStatus {
			for _, c := range st.Clusters {
				if c.ClusterName == cluster {
					return c.Conditions
				}
			}
		}
		return nil
	}
	getRun := func() *fleet.UpdateRun {
		t.Helper()
		r, err := h.GetUpdateRun(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	var last string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last seen: %s", last)
		}
	})
	await.Until(t, "member1 to succeed and member2 to start", func() bool {
		r := getRun()
		bs, _ := h.ListBindings(ctx, hub.Key{Name: "app"})
		last = fmt.Sprintf("run %+v\nbindings:", r.Status)
		for _, b := range bs {
			last += fmt.Sprintf("\n%s %s %+v", b.Name, b.Spec.State, b.Status.Conditions)
		}
		return meta.IsStatusConditionTrue(clusterConds(r, "member1"), fleet.ClusterUpdatingConditionSucceeded) &&
			meta.IsStatusConditionTrue(clusterConds(r, "member2"), fleet.ClusterUpdatingConditionStarted)
	})
	works, err := th.client.Resource(worksGVR).Namespace(membercluster.Namespace("member2")).List(ctx, metav1.ListOptions{})
	if err != nil || len(works.Items) == 0 {
		t.Fatalf("member2's works on the hub: %v (%v), want them written for its agent", works, err)
	}
	for _, w := range works.Items {
		if conds, _, _ := unstructured.NestedSlice(w.Object, "status", "conditions"); len(conds) != 0 {
			t.Errorf("work %s has a status %v without an agent", w.GetName(), conds)
		}
	}
	if r := getRun(); meta.FindStatusCondition(clusterConds(r, "member2"), fleet.ClusterUpdatingConditionSucceeded) != nil ||
		r.Phase() != fleet.PhaseProgressing {
		t.Fatalf("run while member2's agent is gone: phase %s, member2 %+v; want Progressing, Started without Succeeded",
			r.Phase(), clusterConds(r, "member2"))
	}

	// The unhealthy threshold passes: the hub marks member2, whose agent
	// sent nothing since; member1's agent heartbeats on the same clock.
	await.Until(t, "member2 to be marked and member1 to stay healthy", func() bool {
		clk.Advance(10 * time.Second)
		m1, m2 := memberCluster("member1"), memberCluster("member2")
		return condition(m2, membercluster.ConditionHealthy).Status == metav1.ConditionFalse &&
			condition(m1, membercluster.ConditionHealthy).Status == metav1.ConditionTrue
	})
	m2 := memberCluster("member2")
	if c := condition(m2, membercluster.ConditionHealthy); c.Reason != "MemberAgentHeartbeatLost" ||
		c.Message != "The Fleet member agent has lost its heartbeat connection to the Fleet hub cluster" {
		t.Errorf("member2 Healthy = %+v", c)
	}
	if c := condition(m2, membercluster.ConditionJoined); c.Status != metav1.ConditionTrue {
		t.Errorf("member2 Joined = %+v after its heartbeat was lost, want True as on KubeFleet", c)
	}

	// The stuck threshold passes: the run is Stuck on member2.
	await.Until(t, "the run to be stuck on member2", func() bool {
		clk.Advance(updaterun.ClusterPollInterval)
		return getRun().Phase() == fleet.PhaseStuck
	})
	r := getRun()
	c := meta.FindStatusCondition(r.Status.Conditions, fleet.StagedUpdateRunConditionProgressing)
	if want := fmt.Sprintf(updaterun.RunStuckMessageFmt, "member2", "all"); c == nil || c.Reason != fleet.UpdateRunStuckReason || c.Message != want {
		t.Errorf("Progressing = %+v, want %s: %q", c, fleet.UpdateRunStuckReason, want)
	}
	if meta.FindStatusCondition(clusterConds(r, "member2"), fleet.ClusterUpdatingConditionSucceeded) != nil {
		t.Errorf("member2 %+v, want Started without Succeeded", clusterConds(r, "member2"))
	}

	// A placement made now passes member2 by: its last heartbeat is older
	// than the scheduler's timeout (member1's is fresh).
	await.Until(t, "member2's last heartbeat to be older than the scheduler's timeout, member1's fresh", func() bool {
		clk.Advance(10 * time.Second)
		beat := func(name string) time.Duration {
			for _, a := range memberCluster(name).Status.AgentStatus {
				if a.Type == fleet.MemberAgent {
					return clk.Now().Sub(a.LastReceivedHeartbeat.Time)
				}
			}
			return 0
		}
		return beat("member2") > scheduler.HeartbeatCheckTimeout && beat("member1") < time.Minute
	})
	later := &fleet.Placement{ObjectMeta: metav1.ObjectMeta{Name: "later"}, Spec: *stored.Spec.DeepCopy()}
	th.apply(t, h, later)
	await.Until(t, "placement later to be scheduled", func() bool {
		snaps, err := h.ListPolicySnapshots(ctx, hub.Key{Name: "later"})
		return err == nil && len(snaps) == 1 && meta.FindStatusCondition(snaps[0].Status.Conditions, fleet.PolicySnapshotScheduled) != nil
	})
	bindings, err := h.ListBindings(ctx, hub.Key{Name: "later"})
	if err != nil {
		t.Fatal(err)
	}
	if len(bindings) != 1 || bindings[0].Spec.TargetCluster != "member1" {
		t.Errorf("placement later's bindings %v, want member1's only", bindings)
	}
	snaps, err := h.ListPolicySnapshots(ctx, hub.Key{Name: "later"})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range snaps[0].Status.ClusterDecisions {
		if d.ClusterName == "member2" {
			found = true
			if d.Selected || !strings.HasPrefix(d.Reason, "ClusterUnschedulable, cluster is not connected to the fleet: no recent heartbeat signals (last received ") {
				t.Errorf("later's decision for member2 = %+v, want KubeFleet's lost heartbeat", d)
			}
		}
	}
	if !found {
		t.Errorf("later's decisions %+v name no member2", snaps[0].Status.ClusterDecisions)
	}
	// The run's own placement keeps member2's binding: the run still waits.
	if bs, err := h.ListBindings(ctx, hub.Key{Name: "app"}); err != nil || len(bs) != 2 {
		t.Errorf("placement app's bindings %v (%v), want both kept", bs, err)
	}
}

// startAgents runs KubeFleet's member cluster controller on h's API
// server and, for each named member, a real `gitfleet agent` that pulls its
// Works and applies them to a simulated member, all on clk; it returns
// once every member joined and is healthy. stop[name] stops that agent.
func startAgents(t *testing.T, th *testHub, h *Hub, clk clock.Clock, members ...string) (stop map[string]func()) {
	t.Helper()
	return startAgentsOn(t, th, th.rest, h, clk, nil, members...)
}

// startAgentsOn is startAgents with the agents reaching the hub through
// rc, and each member's MemberCluster carrying annotations[name] beside
// its driver (a simulated member's gitfleet.io/sim-* ones).
func startAgentsOn(t *testing.T, th *testHub, rc *rest.Config, h *Hub, clk clock.Clock, annotations map[string]map[string]string, members ...string) (stop map[string]func()) {
	t.Helper()
	ctx := await.Context(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctrl, err := membercluster.New(membercluster.Config{Rest: th.rest, Clock: clk, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	runUntilCleanup(t, func(ctx context.Context) error { return ctrl.Run(ctx, 2) })
	stop = map[string]func(){}
	for _, name := range members {
		m := &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{fleet.DriverAnnotation: fleet.DriverWork}}}
		maps.Copy(m.Annotations, annotations[name])
		th.apply(t, h, m)
		await.Until(t, "the hub to ask "+name+"'s agent to join", func() bool {
			_, err := th.client.Resource(fleet.ClusterGroupVersion.WithResource("internalmemberclusters")).
				Namespace(membercluster.Namespace(name)).Get(ctx, name, metav1.GetOptions{})
			return err == nil
		})
		sim, err := agent.SimulatedMember(m)
		if err != nil {
			t.Fatal(err)
		}
		a, err := agent.New(agent.Config{Hub: rc, MemberName: name, Clock: clk, PollInterval: 100 * time.Millisecond, Log: quiet}, sim)
		if err != nil {
			t.Fatal(err)
		}
		stop[name] = runUntilCleanup(t, a.Run)
	}
	for _, name := range members {
		await.Until(t, name+" to join and be healthy", func() bool {
			u, err := th.client.Resource(resources[fleet.KindMemberCluster]).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false
			}
			m := &fleet.MemberCluster{}
			return fromUnstructured(u, m) == nil &&
				meta.IsStatusConditionTrue(m.Status.Conditions, membercluster.ConditionJoined) &&
				meta.IsStatusConditionTrue(m.Status.Conditions, membercluster.ConditionHealthy)
		})
	}
	return stop
}

// runUntilCleanup runs f until the test ends; the returned func stops it
// sooner (and waits for it).
func runUntilCleanup(t *testing.T, f func(context.Context) error) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}
