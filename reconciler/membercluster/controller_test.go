package membercluster_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/internal/testing/kubetest"
	"github.com/gitfleet/gitfleet/reconciler/membercluster"
)

// hub is a real hub API server with config/crd, the controller running
// on it with a fake clock, and an admin client.
type hub struct {
	cluster *kubetest.Cluster
	admin   client.Client
	clock   *clock.Fake
}

func startHub(t *testing.T) *hub {
	t.Helper()
	c := kubetest.Start(t, "hub")[0]
	c.InstallCRDs(filepath.Join("..", "..", "config", "crd"))
	rc := c.AdminConfig()
	admin, err := client.New(rc, client.Options{Scheme: membercluster.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Now())
	ctrl, err := membercluster.New(membercluster.Config{Rest: rc, Clock: clk, ForceDeleteWaitTime: time.Hour,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx, 2) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
	})
	return &hub{cluster: c, admin: admin, clock: clk}
}

// as is a client of the hub as user (impersonated).
func (h *hub) as(t *testing.T, user string) client.Client {
	rc := h.cluster.AdminConfig()
	rc.Impersonate = rest.ImpersonationConfig{UserName: user}
	cl, err := client.New(rc, client.Options{Scheme: membercluster.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

const agentUser = "system:serviceaccount:fleet-agents:agent-"

func (h *hub) createMember(t *testing.T, name string) {
	t.Helper()
	m := &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name,
		Annotations: map[string]string{fleet.DriverAnnotation: membercluster.DriverWork}},
		Spec: fleet.MemberClusterSpec{HeartbeatPeriodSeconds: 30,
			Identity: &fleet.Subject{Kind: rbacv1.ServiceAccountKind, Name: "agent-" + name, Namespace: "fleet-agents"}}}
	if err := h.admin.Create(await.Context(t), m); err != nil {
		t.Fatal(err)
	}
}

func (h *hub) member(t *testing.T, name string) *fleet.MemberCluster {
	t.Helper()
	m := &fleet.MemberCluster{}
	if err := h.admin.Get(await.Context(t), client.ObjectKey{Name: name}, m); err != nil {
		t.Fatal(err)
	}
	return m
}

func (h *hub) internalMember(t *testing.T, name string) *fleet.InternalMemberCluster {
	t.Helper()
	imc := &fleet.InternalMemberCluster{}
	err := h.admin.Get(await.Context(t), client.ObjectKey{Namespace: membercluster.Namespace(name), Name: name}, imc)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		t.Fatal(err)
	}
	return imc
}

func condition(m *fleet.MemberCluster, t string) metav1.Condition {
	if c := meta.FindStatusCondition(m.Status.Conditions, t); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// heartbeat reports on the member's InternalMemberCluster as its agent
// does, stamped by the hub's clock.
func (h *hub) heartbeat(t *testing.T, cl client.Client, name string, joined metav1.ConditionStatus) {
	t.Helper()
	imc := h.internalMember(t, name)
	now := metav1.NewTime(h.clock.Now())
	a := imc.Status.SetAgentConditions(fleet.MemberAgent,
		metav1.Condition{Type: fleet.AgentJoined, Status: joined, Reason: "InternalMemberClusterJoined", ObservedGeneration: imc.Generation},
		metav1.Condition{Type: fleet.AgentHealthy, Status: metav1.ConditionTrue, Reason: "InternalMemberClusterHealthy", ObservedGeneration: imc.Generation})
	a.LastReceivedHeartbeat = now
	imc.Status.Properties = map[fleet.PropertyName]fleet.PropertyValue{"kubernetes-fleet.io/node-count": {Value: "3", ObservationTime: now}}
	if err := cl.Status().Update(await.Context(t), imc); err != nil {
		t.Fatal(err)
	}
}

// A pulled member gets what KubeFleet's hub gives one: its namespace
// (labelled a fleet resource), a Role on the fleet groups and events there,
// bound to its identity, an InternalMemberCluster asking it to join at
// its heartbeat period, the finalizer, and ReadyToJoin; it is not Joined
// until its agent reports.
func TestAPulledMemberGetsItsNamespaceRBACAndInternalMemberCluster(t *testing.T) {
	h := startHub(t)
	h.createMember(t, "m1")
	ctx := await.Context(t)
	await.Until(t, "member m1 to be ready to join", func() bool {
		return condition(h.member(t, "m1"), membercluster.ConditionReadyToJoin).Status == metav1.ConditionTrue
	})
	m := h.member(t, "m1")
	if !slices.Contains(m.Finalizers, membercluster.Finalizer) {
		t.Errorf("finalizers %v, want %s", m.Finalizers, membercluster.Finalizer)
	}
	if c := condition(m, membercluster.ConditionJoined); c.Status != metav1.ConditionUnknown || c.Reason != "MemberClusterJoinStateUnknown" ||
		c.Message != "Member cluster m1 has not reported all the expected agents, expected 1, got 0" {
		t.Errorf("Joined = %+v before the agent reported", c)
	}
	if c := condition(m, membercluster.ConditionHealthy); c.Status != metav1.ConditionUnknown || c.Reason != "MemberAgentReportedNoStatus" ||
		c.Message != "The Fleet member agent has not reported its status yet" {
		t.Errorf("Healthy = %+v before the agent reported", c)
	}
	var ns corev1.Namespace
	if err := h.admin.Get(ctx, client.ObjectKey{Name: "fleet-member-m1"}, &ns); err != nil {
		t.Fatal(err)
	}
	if ns.Labels[membercluster.FleetResourceLabel] != "true" || len(ns.OwnerReferences) != 1 || ns.OwnerReferences[0].UID != m.UID {
		t.Errorf("namespace labels %v, owners %v", ns.Labels, ns.OwnerReferences)
	}
	var role rbacv1.Role
	if err := h.admin.Get(ctx, client.ObjectKey{Namespace: "fleet-member-m1", Name: "fleet-role-m1"}, &role); err != nil {
		t.Fatal(err)
	}
	if len(role.Rules) != 4 || role.Rules[0].APIGroups[0] != fleet.ClusterGroup || role.Rules[1].APIGroups[0] != fleet.PlacementGroup {
		t.Errorf("role rules %+v", role.Rules)
	}
	var rb rbacv1.RoleBinding
	if err := h.admin.Get(ctx, client.ObjectKey{Namespace: "fleet-member-m1", Name: "fleet-rolebinding-m1"}, &rb); err != nil {
		t.Fatal(err)
	}
	want := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "agent-m1", Namespace: "fleet-agents"}
	if len(rb.Subjects) != 1 || rb.Subjects[0] != want || rb.RoleRef.Name != "fleet-role-m1" {
		t.Errorf("role binding subjects %+v, role %+v", rb.Subjects, rb.RoleRef)
	}
	imc := h.internalMember(t, "m1")
	if imc == nil || imc.Spec.State != fleet.ClusterStateJoin || imc.Spec.HeartbeatPeriodSeconds != 30 {
		t.Fatalf("internal member cluster %+v", imc)
	}

	// A member that is pushed to gets none of it.
	push := &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "pushed",
		Annotations: map[string]string{fleet.DriverAnnotation: fleet.DriverSimulated}}}
	if err := h.admin.Create(ctx, push); err != nil {
		t.Fatal(err)
	}
	h.createMember(t, "m2") // handled after "pushed", by the same workers
	await.Until(t, "member m2 to be ready to join", func() bool {
		return condition(h.member(t, "m2"), membercluster.ConditionReadyToJoin).Status == metav1.ConditionTrue
	})
	if err := h.admin.Get(ctx, client.ObjectKey{Name: "fleet-member-pushed"}, &ns); !apierrors.IsNotFound(err) {
		t.Errorf("namespace of a pushed member: %v, want NotFound", err)
	}
	if m := h.member(t, "pushed"); len(m.Finalizers) != 0 || len(m.Status.Conditions) != 0 {
		t.Errorf("pushed member finalizers %v, conditions %v", m.Finalizers, m.Status.Conditions)
	}
}

// The member's identity may use its own namespace's fleet kinds (its
// InternalMemberCluster, its Works), and nothing of another member's nor
// any MemberCluster.
func TestTheMembersIdentityMayUseItsNamespaceOnly(t *testing.T) {
	h := startHub(t)
	h.createMember(t, "m1")
	h.createMember(t, "m2")
	for _, name := range []string{"m1", "m2"} {
		await.Until(t, "the role binding of "+name, func() bool {
			var rb rbacv1.RoleBinding
			return h.admin.Get(await.Context(t), client.ObjectKey{Namespace: membercluster.Namespace(name), Name: membercluster.RoleBindingName(name)}, &rb) == nil &&
				h.internalMember(t, name) != nil
		})
	}
	ctx := await.Context(t)
	agent := h.as(t, agentUser+"m1")
	h.heartbeat(t, agent, "m1", metav1.ConditionTrue) // its own InternalMemberCluster: allowed
	var imcs fleet.InternalMemberClusterList
	if err := agent.List(ctx, &imcs, client.InNamespace("fleet-member-m1")); err != nil || len(imcs.Items) != 1 {
		t.Errorf("listing its own namespace: %d, %v", len(imcs.Items), err)
	}
	if err := agent.List(ctx, &imcs, client.InNamespace("fleet-member-m2")); !apierrors.IsForbidden(err) {
		t.Errorf("listing another member's namespace: %v, want Forbidden", err)
	}
	other := h.internalMember(t, "m2")
	if err := agent.Status().Update(ctx, other); !apierrors.IsForbidden(err) {
		t.Errorf("reporting on another member: %v, want Forbidden", err)
	}
	if err := agent.Get(ctx, client.ObjectKey{Name: "m1"}, &fleet.MemberCluster{}); !apierrors.IsForbidden(err) {
		t.Errorf("reading its MemberCluster: %v, want Forbidden", err)
	}
	var pods corev1.PodList
	if err := agent.List(ctx, &pods, client.InNamespace("fleet-member-m1")); !apierrors.IsForbidden(err) {
		t.Errorf("listing pods of its namespace: %v, want Forbidden", err)
	}
}

// What the agent reports reaches the MemberCluster (Joined, the agent's
// status, properties), and a member whose heartbeats stop for the
// unhealthy threshold is marked as KubeFleet's hub marks it; a new
// heartbeat makes it healthy again.
func TestAMemberWhoseHeartbeatStopsIsMarked(t *testing.T) {
	h := startHub(t)
	h.createMember(t, "m1")
	await.Until(t, "the internal member cluster", func() bool { return h.internalMember(t, "m1") != nil })
	h.heartbeat(t, h.admin, "m1", metav1.ConditionTrue)
	await.Until(t, "member m1 to be joined and healthy", func() bool {
		m := h.member(t, "m1")
		return condition(m, membercluster.ConditionJoined).Status == metav1.ConditionTrue &&
			condition(m, membercluster.ConditionHealthy).Status == metav1.ConditionTrue
	})
	m := h.member(t, "m1")
	if c := condition(m, membercluster.ConditionJoined); c.Reason != "MemberClusterJoined" || c.Message != "Member cluster has successfully joined the fleet" {
		t.Errorf("Joined = %+v", c)
	}
	if c := condition(m, membercluster.ConditionHealthy); c.Reason != "MemberClusterAPIServerHealthy" {
		t.Errorf("Healthy = %+v", c)
	}
	if len(m.Status.AgentStatus) != 1 || m.Status.AgentStatus[0].Type != fleet.MemberAgent || m.Status.AgentStatus[0].LastReceivedHeartbeat.IsZero() {
		t.Errorf("agent status %+v", m.Status.AgentStatus)
	}
	if m.Status.Properties["kubernetes-fleet.io/node-count"].Value != "3" {
		t.Errorf("properties %v", m.Status.Properties)
	}

	// The deadline is on the hub's clock: passing it marks the member.
	await.Until(t, "the heartbeat deadline to be set", func() bool { return h.clock.Pending() > 0 })
	h.clock.Advance(membercluster.DefaultUnhealthyThreshold + 2*time.Second)
	await.Until(t, "member m1 to be marked", func() bool {
		return condition(h.member(t, "m1"), membercluster.ConditionHealthy).Status == metav1.ConditionFalse
	})
	c := condition(h.member(t, "m1"), membercluster.ConditionHealthy)
	if c.Reason != membercluster.ReasonHeartbeatLost || c.Message != membercluster.MessageHeartbeatLost {
		t.Errorf("Healthy = %+v", c)
	}
	// Joined is the agent's last word, as on KubeFleet: a lost heartbeat
	// does not make the member leave.
	if c := condition(h.member(t, "m1"), membercluster.ConditionJoined); c.Status != metav1.ConditionTrue {
		t.Errorf("Joined = %+v after the heartbeat was lost, want True", c)
	}
	h.heartbeat(t, h.admin, "m1", metav1.ConditionTrue)
	await.Until(t, "member m1 to be healthy again", func() bool {
		return condition(h.member(t, "m1"), membercluster.ConditionHealthy).Status == metav1.ConditionTrue
	})
}

// A deleted member is asked to leave, is held by its finalizer until its
// agent reports it left, and then its namespace goes.
func TestADeletedMemberLeavesThenLosesItsNamespace(t *testing.T) {
	h := startHub(t)
	h.createMember(t, "m1")
	await.Until(t, "the internal member cluster", func() bool { return h.internalMember(t, "m1") != nil })
	h.heartbeat(t, h.admin, "m1", metav1.ConditionTrue)
	await.Until(t, "member m1 to be joined", func() bool {
		return condition(h.member(t, "m1"), membercluster.ConditionJoined).Status == metav1.ConditionTrue
	})
	ctx := await.Context(t)
	if err := h.admin.Delete(ctx, h.member(t, "m1")); err != nil {
		t.Fatal(err)
	}
	await.Until(t, "the agent to be asked to leave", func() bool {
		return h.internalMember(t, "m1").Spec.State == fleet.ClusterStateLeave
	})
	var ns corev1.Namespace
	if err := h.admin.Get(ctx, client.ObjectKey{Name: "fleet-member-m1"}, &ns); err != nil || ns.DeletionTimestamp != nil {
		t.Fatalf("namespace before the agent left: %v, deleting %v", err, ns.DeletionTimestamp)
	}
	if m := h.member(t, "m1"); m.DeletionTimestamp == nil || !slices.Contains(m.Finalizers, membercluster.Finalizer) {
		t.Fatalf("member before the agent left: deleting %v, finalizers %v", m.DeletionTimestamp, m.Finalizers)
	}
	h.heartbeat(t, h.admin, "m1", metav1.ConditionFalse)
	await.Until(t, "the namespace to be deleted", func() bool {
		var ns corev1.Namespace
		err := h.admin.Get(ctx, client.ObjectKey{Name: "fleet-member-m1"}, &ns)
		return apierrors.IsNotFound(err) || (err == nil && ns.DeletionTimestamp != nil)
	})
	if c := condition(h.member(t, "m1"), membercluster.ConditionJoined); c.Status != metav1.ConditionFalse || c.Reason != "MemberClusterLeft" {
		t.Errorf("Joined = %+v after the agent left", c)
	}
}
