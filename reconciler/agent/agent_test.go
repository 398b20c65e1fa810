package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/condmsg"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/internal/testing/kubetest"
	"github.com/gitfleet/gitfleet/reconciler/agent"
	"github.com/gitfleet/gitfleet/reconciler/delivery"
	"github.com/gitfleet/gitfleet/reconciler/member"
	"github.com/gitfleet/gitfleet/reconciler/membercluster"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// fleetOf is a real hub (config/crd, the member cluster controller) and a
// real member whose agent reaches the hub as the member's identity, with
// only the RBAC the hub grants it.
type fleetOf struct {
	hub, member *kubetest.Cluster
	admin       client.Client // the hub's
	agent       *agent.Agent
	stopAgent   func()
}

const memberName = "m1"

func start(t *testing.T) *fleetOf {
	t.Helper()
	return startWrapped(t, nil)
}

// startWrapped is start with the agent's member wrapped (nil: as it is).
func startWrapped(t *testing.T, wrap func(agent.Member) agent.Member) *fleetOf {
	t.Helper()
	return startWith(t, nil, wrap)
}

// startWith is startWrapped with the agent reaching its member as
// identity returns (nil: as its admin).
func startWith(t *testing.T, identity func(*testing.T, *kubetest.Cluster) *rest.Config, wrap func(agent.Member) agent.Member) *fleetOf {
	t.Helper()
	cs := kubetest.Start(t, "hub", "member")
	f := &fleetOf{hub: cs[0], member: cs[1]}
	f.hub.InstallCRDs(filepath.Join("..", "..", "config", "crd"))
	var err error
	if f.admin, err = client.New(f.hub.AdminConfig(), client.Options{Scheme: membercluster.Scheme}); err != nil {
		t.Fatal(err)
	}
	ctrl, err := membercluster.New(membercluster.Config{Rest: f.hub.AdminConfig(), Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	run(t, func(ctx context.Context) error { return ctrl.Run(ctx, 2) })

	m := &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: memberName,
		Annotations: map[string]string{fleet.DriverAnnotation: membercluster.DriverWork}},
		Spec: fleet.MemberClusterSpec{Identity: &fleet.Subject{Kind: rbacv1.ServiceAccountKind, Name: "agent", Namespace: "fleet-agents"}}}
	if err := f.admin.Create(await.Context(t), m); err != nil {
		t.Fatal(err)
	}
	asIdentity := f.hub.AdminConfig()
	asIdentity.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:fleet-agents:agent"}
	ctx, cancel := context.WithCancel(context.Background())
	memberConfig := f.member.AdminConfig()
	if identity != nil {
		memberConfig = identity(t, f.member)
	}
	m1, err := agent.KubeMember(ctx, memberConfig, 0)
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		m1 = wrap(m1)
	}
	f.agent, err = agent.New(agent.Config{Hub: asIdentity, MemberName: memberName, PollInterval: 100 * time.Millisecond, Log: quiet}, m1)
	if err != nil {
		t.Fatal(err)
	}
	// The agent starts once the hub has granted its identity the namespace.
	await.Until(t, "the hub to grant the agent its namespace", func() bool {
		var rb rbacv1.RoleBinding
		return f.admin.Get(ctx, client.ObjectKey{Namespace: "fleet-member-m1", Name: "fleet-rolebinding-m1"}, &rb) == nil
	})
	done := make(chan error, 1)
	go func() { done <- f.agent.Run(ctx) }()
	f.stopAgent = func() {
		if cancel != nil {
			cancel()
			cancel = nil
			if err := <-done; err != nil {
				t.Errorf("agent: %v", err)
			}
		}
	}
	t.Cleanup(f.stopAgent)
	return f
}

// run runs f until the test ends.
func run(t *testing.T, f func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%v", err)
		}
	})
}

func (f *fleetOf) memberCluster(t *testing.T) *fleet.MemberCluster {
	t.Helper()
	m := &fleet.MemberCluster{}
	if err := f.admin.Get(await.Context(t), client.ObjectKey{Name: memberName}, m); err != nil {
		t.Fatal(err)
	}
	return m
}

func joined(m *fleet.MemberCluster) metav1.ConditionStatus {
	if c := meta.FindStatusCondition(m.Status.Conditions, "Joined"); c != nil {
		return c.Status
	}
	return ""
}

func manifest(t *testing.T, apiVersion, kind, namespace, name string, data map[string]string) map[string]any {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName(name)
	u.SetNamespace(namespace)
	if data != nil {
		d := map[string]any{}
		for k, v := range data {
			d[k] = v
		}
		u.Object["data"] = d
	}
	return u.Object
}

// putWork writes Work name in the member's namespace, as delivery does.
func (f *fleetOf) putWork(t *testing.T, name string, manifests ...map[string]any) {
	t.Helper()
	f.putLabelledWork(t, name, nil, manifests...)
}

// putLabelledWork is putWork with labels (those of a binding's Works).
func (f *fleetOf) putLabelledWork(t *testing.T, name string, labels map[string]string, manifests ...map[string]any) {
	t.Helper()
	ctx := await.Context(t)
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(fleet.SchemeGroupVersion.WithKind(fleet.KindWork))
	err := f.admin.Get(ctx, client.ObjectKey{Namespace: "fleet-member-m1", Name: name}, w)
	ms := make([]any, len(manifests))
	for i, m := range manifests {
		ms[i] = m
	}
	switch {
	case apierrors.IsNotFound(err):
		w.SetGroupVersionKind(fleet.SchemeGroupVersion.WithKind(fleet.KindWork))
		w.SetNamespace("fleet-member-m1")
		w.SetName(name)
		w.SetLabels(labels)
		w.Object["spec"] = map[string]any{"workload": map[string]any{"manifests": ms}}
		err = f.admin.Create(ctx, w)
	case err == nil:
		w.Object["spec"] = map[string]any{"workload": map[string]any{"manifests": ms}}
		err = f.admin.Update(ctx, w)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func (f *fleetOf) work(t *testing.T, name string) *fleet.Work {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(fleet.SchemeGroupVersion.WithKind(fleet.KindWork))
	err := f.admin.Get(await.Context(t), client.ObjectKey{Namespace: "fleet-member-m1", Name: name}, u)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		t.Fatal(err)
	}
	w := &fleet.Work{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, w); err != nil {
		t.Fatal(err)
	}
	return w
}

func workCondition(w *fleet.Work, t string) metav1.Condition {
	if w == nil {
		return metav1.Condition{}
	}
	if c := meta.FindStatusCondition(w.Status.Conditions, t); c != nil && c.ObservedGeneration == w.Generation {
		return *c
	}
	return metav1.Condition{}
}

func (f *fleetOf) appliedWork(t *testing.T, name string) *fleet.AppliedWork {
	t.Helper()
	u := f.member.Get(fleet.SchemeGroupVersion.String(), fleet.KindAppliedWork, "", name)
	if u == nil {
		return nil
	}
	aw := &fleet.AppliedWork{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, aw); err != nil {
		t.Fatal(err)
	}
	return aw
}

// The agent joins through its InternalMemberCluster with only its
// namespace on the hub: the MemberCluster shows it Joined, its heartbeat,
// and the member's properties from its nodes (none on this member).
func TestTheAgentJoinsAndHeartbeats(t *testing.T) {
	f := start(t)
	await.Until(t, "the member to be joined", func() bool { return joined(f.memberCluster(t)) == metav1.ConditionTrue })
	m := f.memberCluster(t)
	if len(m.Status.AgentStatus) != 1 || m.Status.AgentStatus[0].LastReceivedHeartbeat.IsZero() {
		t.Fatalf("agent status %+v", m.Status.AgentStatus)
	}
	if c := meta.FindStatusCondition(m.Status.AgentStatus[0].Conditions, fleet.AgentHealthy); c == nil || c.Status != metav1.ConditionTrue || c.Reason != agent.ReasonHealthy {
		t.Errorf("Healthy = %+v", c)
	}
	if c := meta.FindStatusCondition(m.Status.Conditions, "Healthy"); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("member Healthy = %+v", c)
	}
	if v := m.Status.Properties["kubernetes-fleet.io/node-count"].Value; v != "0" {
		t.Errorf("node count %q, want 0 (the member has no nodes)", v)
	}
}

// A Work is applied to the member with its AppliedWork, every manifest
// reports Applied and Available, and so does the Work; a new generation
// that drops a manifest prunes it; a deleted Work takes off what it
// applied and its AppliedWork.
func TestAWorkIsAppliedPrunedAndRemoved(t *testing.T) {
	f := start(t)
	await.Until(t, "the member to be joined", func() bool { return joined(f.memberCluster(t)) == metav1.ConditionTrue })
	ns := manifest(t, "v1", "Namespace", "", "app", nil)
	f.putWork(t, "app-work", ns,
		manifest(t, "v1", "ConfigMap", "app", "one", map[string]string{"k": "1"}),
		manifest(t, "v1", "ConfigMap", "app", "two", map[string]string{"k": "2"}))
	await.Until(t, "the work to be available", func() bool {
		return workCondition(f.work(t, "app-work"), fleet.WorkConditionTypeAvailable).Status == metav1.ConditionTrue
	})
	w := f.work(t, "app-work")
	if c := workCondition(w, fleet.WorkConditionTypeApplied); c.Status != metav1.ConditionTrue || c.Reason != "AllManifestsApplied" ||
		c.Message != "All the specified manifests have been applied" {
		t.Errorf("Applied = %+v", c)
	}
	if c := workCondition(w, fleet.WorkConditionTypeAvailable); c.Reason != "AllManifestsAvailable" {
		t.Errorf("Available = %+v", c)
	}
	if len(w.Status.ManifestConditions) != 3 {
		t.Fatalf("manifest conditions %+v", w.Status.ManifestConditions)
	}
	for i, mc := range w.Status.ManifestConditions {
		a, av := meta.FindStatusCondition(mc.Conditions, "Applied"), meta.FindStatusCondition(mc.Conditions, "Available")
		if mc.Identifier.Ordinal != i || a == nil || a.Reason != "Applied" || av == nil || av.Reason != "Available" {
			t.Errorf("manifest %d: %+v", i, mc)
		}
	}
	if got := f.member.ConfigMapValue("app", "two", "k"); got != "2" {
		t.Errorf("configmap two on the member: %q", got)
	}
	aw := f.appliedWork(t, "app-work")
	if aw == nil || aw.Spec.WorkName != "app-work" || aw.Spec.WorkNamespace != "fleet-member-m1" || len(aw.Status.AppliedResources) != 3 {
		t.Fatalf("applied work %+v", aw)
	}

	f.putWork(t, "app-work", ns, manifest(t, "v1", "ConfigMap", "app", "two", map[string]string{"k": "2b"}))
	await.Until(t, "configmap one to be pruned", func() bool {
		return f.member.Get("v1", "ConfigMap", "app", "one") == nil && f.member.ConfigMapValue("app", "two", "k") == "2b"
	})
	await.Until(t, "the new generation to be reported", func() bool {
		w := f.work(t, "app-work")
		return workCondition(w, fleet.WorkConditionTypeApplied).Status == metav1.ConditionTrue && len(w.Status.ManifestConditions) == 2
	})
	if aw := f.appliedWork(t, "app-work"); len(aw.Status.AppliedResources) != 2 {
		t.Errorf("applied resources %+v", aw.Status.AppliedResources)
	}

	if err := f.admin.Delete(await.Context(t), &fleet.Work{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet-member-m1", Name: "app-work"}}); err != nil {
		t.Fatal(err)
	}
	await.Until(t, "the work to be gone and its objects removed", func() bool {
		return f.work(t, "app-work") == nil && f.member.Get("v1", "ConfigMap", "app", "two") == nil && f.appliedWork(t, "app-work") == nil
	})
}

// A manifest the member refuses fails with the work applier's reason and
// the API server's message; the one applied before it says so.
func TestARefusedManifestIsReportedOnItsCondition(t *testing.T) {
	f := start(t)
	await.Until(t, "the member to be joined", func() bool { return joined(f.memberCluster(t)) == metav1.ConditionTrue })
	bad := manifest(t, "v1", "ConfigMap", "app", "bad", nil)
	bad["data"] = map[string]any{"k": map[string]any{"not": "a string"}}
	f.putWork(t, "bad-work", manifest(t, "v1", "Namespace", "", "app", nil), bad)
	await.Until(t, "the work to be reported not applied", func() bool {
		return workCondition(f.work(t, "bad-work"), fleet.WorkConditionTypeApplied).Status == metav1.ConditionFalse
	})
	w := f.work(t, "bad-work")
	c := workCondition(w, fleet.WorkConditionTypeApplied)
	if c.Reason != "SomeManifestsAreNotApplied" || c.Message != "Failed to apply all manifests (1 of 2 manifests are applied)" {
		t.Errorf("Applied = %+v", c)
	}
	data, _ := json.Marshal(w.Status.ManifestConditions)
	if len(w.Status.ManifestConditions) != 2 {
		t.Fatalf("manifest conditions %s", data)
	}
	if a := meta.FindStatusCondition(w.Status.ManifestConditions[1].Conditions, "Applied"); a == nil || a.Status != metav1.ConditionFalse ||
		a.Reason != "ManifestApplyFailed" || !strings.HasPrefix(a.Message, "Failed to apply the manifest (error: ") ||
		!strings.Contains(a.Message, ".data.k: expected string") {
		t.Errorf("the refused manifest's conditions: %s", data)
	}
	if a := meta.FindStatusCondition(w.Status.ManifestConditions[0].Conditions, "Applied"); a == nil || a.Status != metav1.ConditionTrue {
		t.Errorf("the namespace's conditions: %s", data)
	}
}

// When the MemberCluster is deleted the agent leaves: it stops applying,
// releases its Works and reports Joined=False; what it applied stays.
func TestTheAgentLeavesWhenItsMemberIsDeleted(t *testing.T) {
	f := start(t)
	await.Until(t, "the member to be joined", func() bool { return joined(f.memberCluster(t)) == metav1.ConditionTrue })
	f.putWork(t, "app-work", manifest(t, "v1", "Namespace", "", "app", nil), manifest(t, "v1", "ConfigMap", "app", "one", map[string]string{"k": "1"}))
	await.Until(t, "the work to be applied", func() bool {
		return workCondition(f.work(t, "app-work"), fleet.WorkConditionTypeApplied).Status == metav1.ConditionTrue
	})
	if err := f.admin.Delete(await.Context(t), f.memberCluster(t)); err != nil {
		t.Fatal(err)
	}
	await.Until(t, "the agent to leave", func() bool { return !f.agent.Joined() })
	await.Until(t, "the member to be marked left and its namespace deleted", func() bool {
		m := &fleet.MemberCluster{}
		err := f.admin.Get(await.Context(t), client.ObjectKey{Name: memberName}, m)
		if err != nil {
			return apierrors.IsNotFound(err)
		}
		return joined(m) == metav1.ConditionFalse && f.hub.Get("v1", "Namespace", "", "fleet-member-m1").Object["metadata"].(map[string]any)["deletionTimestamp"] != nil
	})
	if w := f.work(t, "app-work"); w != nil && len(w.Finalizers) != 0 {
		t.Errorf("work finalizers after the leave: %v", w.Finalizers)
	}
	if f.member.ConfigMapValue("app", "one", "k") != "1" {
		t.Error("what the agent applied is gone from the member after the leave")
	}
}

// Many agents run in one process, each against a simulated member (what
// a benchmark of a large fleet does): each joins and reports its Work
// available, and only the hub is real.
func TestManyAgentsWithSimulatedMembersInOneProcess(t *testing.T) {
	const n = 20
	hub := kubetest.Start(t, "hub")[0]
	hub.InstallCRDs(filepath.Join("..", "..", "config", "crd"))
	admin, err := client.New(hub.AdminConfig(), client.Options{Scheme: membercluster.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctrl, err := membercluster.New(membercluster.Config{Rest: hub.AdminConfig(), Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	run(t, func(ctx context.Context) error { return ctrl.Run(ctx, 4) })
	ctx := await.Context(t)
	sims := make([]*agent.Simulated, n)
	for i := range n {
		name := fmt.Sprintf("sim-%02d", i)
		m := &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			fleet.DriverAnnotation: membercluster.DriverWork, fleet.SimAvailableAfterAnnotation: "0s"}}}
		if err := admin.Create(ctx, m); err != nil {
			t.Fatal(err)
		}
		sim, err := agent.SimulatedMember(m)
		if err != nil {
			t.Fatal(err)
		}
		sims[i] = sim
		a, err := agent.New(agent.Config{Hub: hub.AdminConfig(), MemberName: name, Log: quiet}, sim)
		if err != nil {
			t.Fatal(err)
		}
		run(t, a.Run)
		w := &unstructured.Unstructured{}
		w.SetGroupVersionKind(fleet.SchemeGroupVersion.WithKind(fleet.KindWork))
		w.SetNamespace(membercluster.Namespace(name))
		w.SetName("app-work")
		w.Object["spec"] = map[string]any{"workload": map[string]any{"manifests": []any{manifest(t, "v1", "ConfigMap", "app", "one", nil)}}}
		await.Until(t, "the namespace of "+name, func() bool {
			return hub.Get("v1", "Namespace", "", membercluster.Namespace(name)) != nil
		})
		if err := admin.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		name := fmt.Sprintf("sim-%02d", i)
		await.Until(t, name+"'s work to be available and the member joined", func() bool {
			u := hub.Get(fleet.SchemeGroupVersion.String(), fleet.KindWork, membercluster.Namespace(name), "app-work")
			w := &fleet.Work{}
			if u == nil || runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, w) != nil {
				return false
			}
			m := &fleet.MemberCluster{}
			return workCondition(w, fleet.WorkConditionTypeAvailable).Status == metav1.ConditionTrue &&
				admin.Get(ctx, client.ObjectKey{Name: name}, m) == nil && joined(m) == metav1.ConditionTrue
		})
		if aw := sims[i].Get("app-work"); aw == nil || len(aw.Status.AppliedResources) != 1 {
			t.Errorf("%s: applied work %+v, want the work's one manifest", name, aw)
		}
	}
}

// An object annotated prune: disabled that leaves a Work stays on the
// member, and the Work says so in PruneSkipped (gitfleet's condition),
// from which the hub makes the binding's PruneSkipped exactly as the push
// transport reports it; once the object is back in the Work, the
// condition goes.
func TestAWorkNamesWhatItsPruneLeftOnTheMember(t *testing.T) {
	f := start(t)
	await.Until(t, "the member to be joined", func() bool { return joined(f.memberCluster(t)) == metav1.ConditionTrue })
	ns := manifest(t, "v1", "Namespace", "", "app", nil)
	kept := manifest(t, "v1", "ConfigMap", "app", "kept", map[string]string{"k": "1"})
	kept["metadata"].(map[string]any)["annotations"] = map[string]any{fleet.PruneAnnotation: fleet.PruneDisabled}
	f.putWork(t, "app-work", ns, kept, manifest(t, "v1", "ConfigMap", "app", "pruned", nil))
	await.Until(t, "the work to be available", func() bool {
		return workCondition(f.work(t, "app-work"), fleet.WorkConditionTypeAvailable).Status == metav1.ConditionTrue
	})
	if c := workCondition(f.work(t, "app-work"), fleet.WorkConditionTypePruneSkipped); c.Type != "" {
		t.Errorf("PruneSkipped = %+v before anything left the work", c)
	}

	f.putWork(t, "app-work", ns)
	await.Until(t, "the work to name what it left", func() bool {
		return workCondition(f.work(t, "app-work"), fleet.WorkConditionTypePruneSkipped).Status == metav1.ConditionTrue
	})
	if f.member.Get("v1", "ConfigMap", "app", "kept") == nil || f.member.Get("v1", "ConfigMap", "app", "pruned") != nil {
		t.Error("want ConfigMap kept on the member and ConfigMap pruned gone")
	}
	w := f.work(t, "app-work")
	want, _ := member.PruneSkipped(5, []fleet.ResourceIdentifier{{Version: "v1", Kind: "ConfigMap", Namespace: "app", Name: "kept"}})
	if c := workCondition(w, fleet.WorkConditionTypePruneSkipped); c.Reason != member.PruneDisabledReason || c.Message != want.Message {
		t.Errorf("the work's PruneSkipped = %+v, want %s %q", c, member.PruneDisabledReason, want.Message)
	}
	b := &fleet.Binding{ObjectMeta: metav1.ObjectMeta{Name: "app-m1", Generation: 5}}
	conds, _ := delivery.Status(b, []*fleet.Work{w})
	if c := meta.FindStatusCondition(conds, fleet.ResourceBindingPruneSkipped); c == nil || *c != want {
		t.Errorf("the binding's PruneSkipped = %+v, want the push transport's %+v", c, want)
	}

	f.putWork(t, "app-work", ns, kept)
	await.Until(t, "the work to name nothing left", func() bool {
		w := f.work(t, "app-work")
		return workCondition(w, fleet.WorkConditionTypeApplied).Status == metav1.ConditionTrue &&
			meta.FindStatusCondition(w.Status.Conditions, fleet.WorkConditionTypePruneSkipped) == nil
	})
}

// A member that refuses the agent's record of what a Work applied (its
// identity has no rights on gitfleet-system, where that inventory is
// kept) makes the Work fail as a whole, as any whole-Work failure:
// Applied=False WorkAppliedFailed with the member's refusal, so the
// binding says why (README, deliberate differences, 33), not only the
// agent's log. Before, the Work kept the status it had.
func TestAWorkWhoseRecordTheMemberRefusesSaysWhy(t *testing.T) {
	f := startWith(t, withoutInventoryRights, nil)
	await.Until(t, "the member to be joined", func() bool { return joined(f.memberCluster(t)) == metav1.ConditionTrue })
	f.putWork(t, "unrecorded", manifest(t, "v1", "ConfigMap", "default", "unrecorded", map[string]string{"k": "v"}))

	const refusal = `read inventory gitfleet-system/unrecorded: configmaps "unrecorded" is forbidden: ` +
		`User "gitfleet-agent" cannot get resource "configmaps" in API group "" in the namespace "gitfleet-system"`
	var w *fleet.Work
	await.Until(t, "the Work to say the member refused its record", func() bool {
		w = f.work(t, "unrecorded")
		c := workCondition(w, fleet.WorkConditionTypeApplied)
		return c.Status == metav1.ConditionFalse && c.Reason == delivery.WorkAppliedFailedReason && c.Message == refusal
	})
	b := &fleet.Binding{ObjectMeta: metav1.ObjectMeta{Name: "place-" + memberName, Generation: 1}}
	conds, _ := delivery.Status(b, []*fleet.Work{w})
	want := "Work object unrecorded has failed to apply: " + refusal
	if c := meta.FindStatusCondition(conds, fleet.ResourceBindingApplied); c == nil || c.Status != metav1.ConditionFalse || c.Message != want {
		t.Errorf("the binding's Applied = %+v, want False, %q", c, want)
	}
}

// withoutInventoryRights is the member as user gitfleet-agent, allowed
// what the agent does but for gitfleet-system: the AppliedWork CRD and
// AppliedWorks, the nodes and pods it reports on.
func withoutInventoryRights(t *testing.T, c *kubetest.Cluster) *rest.Config {
	t.Helper()
	ctx := await.Context(t)
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "gitfleet-agent"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"*"}},
		{APIGroups: []string{fleet.SchemeGroupVersion.Group}, Resources: []string{"appliedworks", "appliedworks/status"}, Verbs: []string{"*"}},
		{APIGroups: []string{""}, Resources: []string{"nodes", "pods"}, Verbs: []string{"get", "list", "watch"}},
	}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "gitfleet-agent"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "gitfleet-agent"}}}
	for _, o := range []client.Object{role, binding} {
		if err := c.Client().Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	c.AwaitAllowed(t, "gitfleet-agent",
		authorizationv1.ResourceAttributes{Verb: "patch", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
		authorizationv1.ResourceAttributes{Verb: "update", Group: fleet.SchemeGroupVersion.Group, Resource: "appliedworks", Subresource: "status"},
		authorizationv1.ResourceAttributes{Verb: "watch", Resource: "pods"})
	cfg := c.AdminConfig()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "gitfleet-agent"}
	return cfg
}

// A member whose admission refuses the agent's record of a Work with a
// denial over 32 KiB (a ValidatingAdmissionPolicy's message) fails the
// Work as a whole with that cause capped (condmsg): the Work's status and
// the binding's are written, where the whole denial made the API server
// refuse the status write itself, again and again, and the binding said
// nothing.
func TestALongRefusalOfTheRecordIsCappedOnTheWorkAndTheBinding(t *testing.T) {
	f := start(t)
	await.Until(t, "the member to be joined", func() bool { return joined(f.memberCluster(t)) == metav1.ConditionTrue })
	ctx := await.Context(t)
	denial := "the inventory is frozen: " + strings.Repeat("x", 40000)
	fail := admissionregistrationv1.Fail
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "frozen"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.metadata.name != 'frozen'", Message: denial}}}}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "frozen"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "frozen",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
	for _, o := range []client.Object{policy, binding} {
		if err := f.member.Client().Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// The policy is in force once it denies a ConfigMap named frozen.
	await.Until(t, "the policy to deny", func() bool {
		probe := &unstructured.Unstructured{Object: manifest(t, "v1", "ConfigMap", "default", "frozen", nil)}
		err := f.member.Client().Create(ctx, probe, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy 'frozen' with binding 'frozen' denied request")
	})
	f.putWork(t, "frozen", manifest(t, "v1", "ConfigMap", "default", "thawed", map[string]string{"k": "v"}))

	const prefix = `write inventory gitfleet-system/frozen: configmaps "frozen" is forbidden: ` +
		`ValidatingAdmissionPolicy 'frozen' with binding 'frozen' denied request: the inventory is frozen: xxx`
	var w *fleet.Work
	await.Until(t, "the Work to say the member refused its record", func() bool {
		w = f.work(t, "frozen")
		c := workCondition(w, fleet.WorkConditionTypeApplied)
		return c.Status == metav1.ConditionFalse && c.Reason == delivery.WorkAppliedFailedReason
	})
	msg := workCondition(w, fleet.WorkConditionTypeApplied).Message
	if len(msg) > condmsg.Max || !strings.HasPrefix(msg, prefix) || !strings.HasSuffix(msg, " more characters)") {
		t.Errorf("the Work's Applied message (%d bytes) = %.200q…%q, want at most %d bytes, starting %q and cut",
			len(msg), msg, msg[max(0, len(msg)-40):], condmsg.Max, prefix)
	}
	b := &fleet.Binding{ObjectMeta: metav1.ObjectMeta{Name: "frozen-" + memberName, Generation: 1}}
	b.Spec.TargetCluster = memberName
	var rep bindingReport
	rep.conds, rep.p = delivery.Status(b, []*fleet.Work{w})
	want := "Work object frozen has failed to apply: " + msg
	if c := meta.FindStatusCondition(rep.conds, fleet.ResourceBindingApplied); c == nil || c.Message != want {
		t.Errorf("the binding's Applied = %.300v, want the message %.300q", c, want)
	}
	if err := writeBinding(t, f.hub, b, b.Name, rep); err != nil {
		t.Errorf("the binding's status is not written: %.500v", err)
	}
}
