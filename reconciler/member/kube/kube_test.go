package kube_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/internal/testing/kubetest"
	workgen "github.com/gitfleet/gitfleet/reconciler/delivery"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/member"
	"github.com/gitfleet/gitfleet/reconciler/member/kube"
)

// reports keeps the last report of each binding, as the hub would.
type reports struct {
	mu      sync.Mutex
	last    map[hub.Key]report
	n       int
	history []report
}

type report struct {
	gen     int64
	conds   []metav1.Condition
	failed  []fleet.FailedResourcePlacement
	drifted []fleet.DriftedResourcePlacement
	diffed  []fleet.DiffedResourcePlacement
}

func (r *reports) ReportBindingStatus(key hub.Key, gen int64, conds []metav1.Condition, p member.Placements) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = map[hub.Key]report{}
	}
	r.last[key] = report{gen: gen, conds: conds, failed: p.Failed, drifted: p.Drifted, diffed: p.Diffed}
	r.history = append(r.history, r.last[key])
	r.n++
	return nil
}

func (r *reports) get(key hub.Key) report {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last[key]
}

func (r *reports) cond(key hub.Key, gen int64, typ string) *metav1.Condition {
	rep := r.get(key)
	if rep.gen != gen {
		return nil
	}
	return meta.FindStatusCondition(rep.conds, typ)
}

// waitCond waits until the binding's last report at gen has typ with
// status and reason, and returns it.
func (r *reports) waitCond(t *testing.T, key hub.Key, gen int64, typ string, status metav1.ConditionStatus, reason string) report {
	t.Helper()
	await.Until(t, fmt.Sprintf("%s=%s (%s) on %s at generation %d", typ, status, reason, key, gen), func() bool {
		c := r.cond(key, gen, typ)
		return c != nil && c.Status == status && c.Reason == reason
	})
	return r.get(key)
}

type fixture struct {
	t          *testing.T
	ctx        context.Context
	clusters   []*kubetest.Cluster
	kubeconfig string
	reports    *reports
	drivers    *kube.Clusters
}

func newFixture(t *testing.T, extra map[string][2]string, names ...string) *fixture {
	if len(names) == 0 {
		names = []string{"member1"}
	}
	cs := kubetest.Start(t, names...)
	f := &fixture{t: t, ctx: await.Context(t), clusters: cs, reports: &reports{}}
	f.kubeconfig = kubetest.Kubeconfig(t, cs, extra)
	f.drivers = f.start()
	return f
}

// start loads the kubeconfig into a new driver, as a restarted gitfleet
// would.
func (f *fixture) start() *kube.Clusters { return f.startWith(0) }

// startWith is start with a periodic drift check every driftCheck (0: off).
func (f *fixture) startWith(driftCheck time.Duration) *kube.Clusters {
	f.t.Helper()
	c, err := kube.Load(kube.Options{Kubeconfig: f.kubeconfig, PollInterval: 100 * time.Millisecond,
		RetryBase: 50 * time.Millisecond, RetryMax: time.Second, Log: slog.New(slog.DiscardHandler),
		DriftCheckInterval: driftCheck})
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	f.t.Cleanup(cancel)
	c.Start(ctx, f.reports)
	return c
}

// get returns a live object of the first member, or nil.
func (f *fixture) get(_ string, apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	f.t.Helper()
	return f.clusters[0].Get(apiVersion, kind, namespace, name)
}

// deliverAvailable delivers d through drivers to member1 and waits until
// its binding is Available at d's generation.
func (f *fixture) deliverAvailable(drivers *kube.Clusters, d member.Delivery) {
	f.t.Helper()
	must(f.t, drivers.Driver("member1").Deliver(f.ctx, pushed(f.t, d)))
	f.reports.waitCond(f.t, d.Key(), d.Generation(), fleet.ResourceBindingAvailable, metav1.ConditionTrue, member.AllWorkAvailableReason)
}

// delivery is binding "place-<cluster>" of placement "place" at gen, with
// these manifests (YAML documents).
func delivery(t *testing.T, cluster string, gen int64, snapshot string, manifests ...string) member.Delivery {
	t.Helper()
	b := &fleet.Binding{ObjectMeta: metav1.ObjectMeta{
		Name: "place-" + cluster, Generation: gen,
		Labels: map[string]string{fleet.PlacementTrackingLabel: "place"},
	}}
	b.Spec.TargetCluster = cluster
	b.Spec.ResourceSnapshotName = snapshot
	d := member.Delivery{Binding: b, Member: &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}}}
	for _, m := range manifests {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(m), &u.Object); err != nil {
			t.Fatal(err)
		}
		d.Resources = append(d.Resources, u)
	}
	return d
}

// pushed is d as the delivery controller hands it to the kubeconfig
// driver: its resources, a snapshot's manifests (envelopes whole), made
// into the binding's Works (delivery.PushWorks) at the binding's state
// now (d as it is when it has its Works already).
func pushed(t *testing.T, d member.Delivery) member.Delivery {
	t.Helper()
	if d.Works != nil {
		return d
	}
	s := &fleet.ResourceSnapshot{ObjectMeta: metav1.ObjectMeta{Name: d.Binding.Spec.ResourceSnapshotName, Namespace: d.Binding.Namespace,
		Labels: map[string]string{fleet.PlacementTrackingLabel: d.Placement().Name, fleet.ResourceIndexLabel: "0"}}}
	for _, r := range d.Resources {
		s.Spec.SelectedResources = append(s.Spec.SelectedResources, runtime.RawExtension{Object: r})
	}
	works, failed := workgen.PushWorks(d.Binding, d.Member, workgen.Sources{Snapshots: []*fleet.ResourceSnapshot{s}})
	if failed != nil {
		t.Fatalf("works of %s: %+v", d.Key(), failed)
	}
	d.Works, d.Resources = works, nil
	return d
}

const (
	namespace = `apiVersion: v1
kind: Namespace
metadata: {name: test-namespace}`
	crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}`
	widget = `apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: test-namespace}
spec: {size: 3}`
	deployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: test-namespace}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "registry.invalid/web:1"}]`
)

func configMap(name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: test-namespace}\ndata: {key: %s}", name, value)
}

func TestASnapshotWithItsOwnCRDAndNamespaceAppliesInOnePass(t *testing.T) {
	f := newFixture(t, nil)
	// The custom resource and the namespaced objects come first on purpose:
	// the driver orders CRDs and Namespaces before the rest.
	d := delivery(t, "member1", 1, "place-0-snapshot", widget, configMap("cm", "value1"), crd, namespace)
	if err := f.drivers.Driver("member1").Deliver(f.ctx, pushed(f.t, d)); err != nil {
		t.Fatal(err)
	}
	f.reports.waitCond(t, d.Key(), 1, fleet.ResourceBindingAvailable, metav1.ConditionTrue, member.AllWorkAvailableReason)
	if c := f.reports.cond(d.Key(), 1, fleet.ResourceBindingApplied); c.Reason != member.AllWorkAppliedReason {
		t.Errorf("Applied = %+v", c)
	}

	cm := f.get("member1", "v1", "ConfigMap", "test-namespace", "cm")
	if cm == nil {
		t.Fatal("the ConfigMap is not on the member")
	}
	if v, _, _ := unstructured.NestedString(cm.Object, "data", "key"); v != "value1" {
		t.Errorf("ConfigMap key = %q, want value1", v)
	}
	if cm.GetLabels()[kube.PlacementLabel] != "place" {
		t.Errorf("ConfigMap labels = %v, want %s=place", cm.GetLabels(), kube.PlacementLabel)
	}
	managers := map[string]bool{}
	for _, mf := range cm.GetManagedFields() {
		managers[mf.Manager+"/"+string(mf.Operation)] = true
	}
	if !managers["gitfleet/Apply"] {
		t.Errorf("managed fields %v, want the ConfigMap applied server-side by field manager gitfleet", managers)
	}
	if f.get("member1", "example.com/v1", "Widget", "test-namespace", "w") == nil {
		t.Error("the custom resource is not on the member")
	}
}

func TestReapplyingAnUnchangedSnapshotWritesNothing(t *testing.T) {
	f := newFixture(t, nil)
	d := delivery(t, "member1", 1, "place-0-snapshot", namespace, configMap("cm", "value1"))
	f.deliverAvailable(f.drivers, d)
	before := f.get("member1", "v1", "ConfigMap", "test-namespace", "cm").GetResourceVersion()
	inv := f.get("member1", "v1", "ConfigMap", kube.InventoryNamespace, "place-work").GetResourceVersion()

	// A restarted gitfleet delivers every bound binding again.
	again := f.start()
	d2 := delivery(t, "member1", 2, "place-0-snapshot", namespace, configMap("cm", "value1"))
	f.deliverAvailable(again, d2)
	if after := f.get("member1", "v1", "ConfigMap", "test-namespace", "cm").GetResourceVersion(); after != before {
		t.Errorf("an unchanged ConfigMap was written again: resourceVersion %s → %s", before, after)
	}
	if after := f.get("member1", "v1", "ConfigMap", kube.InventoryNamespace, "place-work").GetResourceVersion(); after != inv {
		t.Errorf("an unchanged inventory was written again: resourceVersion %s → %s", inv, after)
	}
}

func TestANewSnapshotPrunesWhatItDroppedAndNothingItDidNotApply(t *testing.T) {
	f := newFixture(t, nil)
	d := delivery(t, "member1", 1, "place-0-snapshot", namespace, configMap("kept", "v1"), configMap("dropped", "v1"))
	f.deliverAvailable(f.drivers, d)

	// Someone else's ConfigMap in the same namespace, and a person who took
	// one of gitfleet's objects over by removing its label.
	other := &unstructured.Unstructured{}
	must(t, yaml.Unmarshal([]byte(configMap("theirs", "x")), &other.Object))
	must(t, f.clusters[0].Client().Create(f.ctx, other))

	// The inventory survives a restart: a new driver prunes what the old
	// one applied.
	restarted := f.start()
	d2 := delivery(t, "member1", 2, "place-1-snapshot", namespace, configMap("kept", "v2"))
	f.deliverAvailable(restarted, d2)

	if f.get("member1", "v1", "ConfigMap", "test-namespace", "dropped") != nil {
		t.Error("the ConfigMap the new snapshot dropped is still on the member")
	}
	kept := f.get("member1", "v1", "ConfigMap", "test-namespace", "kept")
	if v, _, _ := unstructured.NestedString(kept.Object, "data", "key"); v != "v2" {
		t.Errorf("kept ConfigMap = %q, want v2", v)
	}
	if f.get("member1", "v1", "ConfigMap", "test-namespace", "theirs") == nil {
		t.Error("gitfleet deleted a ConfigMap it never applied")
	}
}

func TestPruneSparesAnObjectWhoseLabelsAPersonRemoved(t *testing.T) {
	f := newFixture(t, nil)
	d := delivery(t, "member1", 1, "place-0-snapshot", namespace, configMap("adopted", "v1"))
	f.deliverAvailable(f.drivers, d)

	cm := f.get("member1", "v1", "ConfigMap", "test-namespace", "adopted")
	cm.SetLabels(nil)
	must(t, f.clusters[0].Client().Update(f.ctx, cm))

	d2 := delivery(t, "member1", 2, "place-1-snapshot", namespace)
	f.deliverAvailable(f.drivers, d2)
	if f.get("member1", "v1", "ConfigMap", "test-namespace", "adopted") == nil {
		t.Error("prune deleted an object that no longer carries gitfleet's placement label")
	}
}

func TestRemoveDeletesEverythingTheBindingApplied(t *testing.T) {
	f := newFixture(t, nil)
	d := delivery(t, "member1", 1, "place-0-snapshot", namespace, configMap("cm", "v1"))
	f.deliverAvailable(f.drivers, d)

	must(t, f.start().Driver("member1").Remove(f.ctx, d))
	if f.get("member1", "v1", "ConfigMap", kube.InventoryNamespace, "place-work") != nil {
		t.Error("the inventory is still on the member")
	}
	await.Until(t, "the namespace to be gone or terminating", func() bool {
		ns := f.get("member1", "v1", "Namespace", "", "test-namespace")
		return ns == nil || ns.GetDeletionTimestamp() != nil
	})
	// Without a controller-manager the namespace never finishes
	// terminating; the ConfigMap was deleted by the driver itself.
	if f.get("member1", "v1", "ConfigMap", "test-namespace", "cm") != nil {
		t.Error("the ConfigMap is still on the member")
	}
}

func TestAnUnreachableMemberIsReportedRetriedAndRecovers(t *testing.T) {
	f := newFixture(t, nil)
	f.clusters[0].StopAPIServer()
	d := delivery(t, "member1", 1, "place-0-snapshot", namespace, configMap("cm", "v1"))
	must(t, f.drivers.Driver("member1").Deliver(f.ctx, pushed(f.t, d)))
	rep := f.reports.waitCond(t, d.Key(), 1, fleet.ResourceBindingApplied, metav1.ConditionFalse, member.WorkNotAppliedReason)
	msg := meta.FindStatusCondition(rep.conds, fleet.ResourceBindingApplied).Message
	for _, want := range []string{`Work object place-work is not applied`, `member cluster "member1": kubeconfig context "member1": `, "connection refused"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Applied message %q does not say %q", msg, want)
		}
	}
	if address := strings.TrimPrefix(f.clusters[0].Server, "https://"); strings.Contains(msg, address) {
		t.Errorf("Applied message %q names the API server's address %s, which comes from the kubeconfig", msg, address)
	}
	if f.drivers.Pending() != 0 {
		t.Errorf("Pending = %d while the member is unreachable, want 0: nothing progresses without the member", f.drivers.Pending())
	}
	// Retried with backoff: a second failed attempt happens by itself.
	first := f.reports.count()
	await.Until(t, "a retry", func() bool { return f.reports.count() > first })

	f.clusters[0].StartAPIServer()
	f.reports.waitCond(t, d.Key(), 1, fleet.ResourceBindingAvailable, metav1.ConditionTrue, member.AllWorkAvailableReason)
}

func (r *reports) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

func TestCredentialsWithoutRightsAreNamedAsTheCause(t *testing.T) {
	cs := kubetest.Start(t, "member1")
	f := &fixture{t: t, ctx: await.Context(t), clusters: cs, reports: &reports{}}
	f.kubeconfig = kubetest.Kubeconfig(t, cs, map[string][2]string{"viewer": {"member1", cs[0].ViewerToken}, "stranger": {"member1", "no-such-token"}})
	f.drivers = f.start()
	for ctxName, want := range map[string]string{"viewer": "forbidden", "stranger": "the server has asked for the client to provide credentials"} {
		d := delivery(t, ctxName, 1, "place-0-snapshot", namespace)
		must(t, f.drivers.Driver(ctxName).Deliver(f.ctx, pushed(f.t, d)))
		rep := f.reports.waitCond(t, d.Key(), 1, fleet.ResourceBindingApplied, metav1.ConditionFalse, member.WorkNotAppliedReason)
		if msg := meta.FindStatusCondition(rep.conds, fleet.ResourceBindingApplied).Message; !strings.Contains(msg, want) ||
			!strings.Contains(msg, `kubeconfig context "`+ctxName+`"`) {
			t.Errorf("context %s: Applied message %q, want it to name the context and say %q", ctxName, msg, want)
		}
	}
}

func TestAContextMissingFromTheKubeconfigIsReported(t *testing.T) {
	f := newFixture(t, nil)
	d := delivery(t, "member9", 1, "place-0-snapshot", namespace)
	must(t, f.drivers.Driver("member9").Deliver(f.ctx, pushed(f.t, d)))
	rep := f.reports.waitCond(t, d.Key(), 1, fleet.ResourceBindingApplied, metav1.ConditionFalse, member.WorkNotAppliedReason)
	want := `Work object place-work is not applied: member cluster "member9": kubeconfig context "member9" is not in ` + f.kubeconfig
	if c := meta.FindStatusCondition(rep.conds, fleet.ResourceBindingApplied); c.Message != want {
		t.Errorf("Applied message = %q, want %q", c.Message, want)
	}
}

func TestADeploymentThatIsNotAvailableIsListedAsAFailedPlacement(t *testing.T) {
	// No controller-manager runs: the Deployment is never observed, so it
	// never becomes Current, the way one whose pods cannot start never
	// does.
	f := newFixture(t, nil)
	d := delivery(t, "member1", 1, "place-0-snapshot", namespace, deployment, configMap("cm", "v1"))
	must(t, f.drivers.Driver("member1").Deliver(f.ctx, pushed(f.t, d)))
	rep := f.reports.waitCond(t, d.Key(), 1, fleet.ResourceBindingAvailable, metav1.ConditionFalse, fleet.ResourceNotAvailableYetReason)
	if len(rep.failed) != 1 || rep.failed[0].Kind != "Deployment" || rep.failed[0].Name != "web" ||
		rep.failed[0].Condition.Reason != member.ManifestNotAvailableYetReason {
		t.Errorf("failed placements = %+v, want only the Deployment, ManifestNotAvailableYet", rep.failed)
	}
	if f.drivers.Pending() == 0 {
		t.Error("a Deployment still rolling out does not count as pending")
	}
}

// KubeFleet's work applier names a manifest the member's API server refuses
// in failedPlacements with Applied=False and reason ManifestApplyFailed
// (its ApplyOrReportDiffResTypeFailedToApply); its work generator says the
// Work failed to apply. A pushed member reads as a pulled one.
func TestAManifestTheMemberRefusesIsAFailedPlacementManifestApplyFailed(t *testing.T) {
	f := newFixture(t, nil)
	refused := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad, namespace: test-namespace}\ndata: {\"not a key!\": v}"
	d := delivery(t, "member1", 1, "place-0-snapshot", namespace, refused)
	must(t, f.drivers.Driver("member1").Deliver(f.ctx, pushed(t, d)))
	rep := f.reports.waitCond(t, d.Key(), 1, fleet.ResourceBindingApplied, metav1.ConditionFalse, member.WorkNotAppliedReason)
	if c := meta.FindStatusCondition(rep.conds, fleet.ResourceBindingApplied); c.Message != "Work object place-work has failed to apply" {
		t.Errorf("Applied = %+v, want KubeFleet's message naming the Work", c)
	}
	if len(rep.failed) != 1 || rep.failed[0].Kind != "ConfigMap" || rep.failed[0].Name != "bad" ||
		rep.failed[0].Condition.Type != fleet.ResourceBindingApplied || rep.failed[0].Condition.Reason != "ManifestApplyFailed" ||
		!strings.HasPrefix(rep.failed[0].Condition.Message, "Failed to apply the manifest (error: ") {
		t.Errorf("failed placements = %+v, want the ConfigMap, Applied=False, ManifestApplyFailed, Failed to apply the manifest (error: ...)", rep.failed)
	}
}

// TestAnObjectMovingBetweenWorksKeepsItsUID: a ConfigMap that moves from
// the snapshot's Work into an envelope's, and back once the envelope is
// gone, is taken over by the Work it moves to (receiver first), never
// deleted and made again; the record of the envelope's Work goes with it.
func TestAnObjectMovingBetweenWorksKeepsItsUID(t *testing.T) {
	f := newFixture(t, nil)
	envelope := `apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ResourceEnvelope
metadata: {name: wrap, namespace: test-namespace}
data:
  cm.yaml: {apiVersion: v1, kind: ConfigMap, metadata: {name: moving, namespace: test-namespace}, data: {key: wrapped}}`
	f.deliverAvailable(f.drivers, pushed(t, delivery(t, "member1", 1, "place-0-snapshot", namespace, configMap("moving", "plain"))))
	uid := f.get("member1", "v1", "ConfigMap", "test-namespace", "moving").GetUID()

	d2 := pushed(t, delivery(t, "member1", 2, "place-1-snapshot", namespace, envelope))
	if len(d2.Works) != 2 {
		t.Fatalf("%d Works, want the snapshot's and the envelope's", len(d2.Works))
	}
	f.deliverAvailable(f.drivers, d2)
	cm := f.get("member1", "v1", "ConfigMap", "test-namespace", "moving")
	if v, _, _ := unstructured.NestedString(cm.Object, "data", "key"); cm.GetUID() != uid || v != "wrapped" {
		t.Errorf("into the envelope: uid %s, key %q; want uid %s, key wrapped", cm.GetUID(), v, uid)
	}

	f.deliverAvailable(f.drivers, pushed(t, delivery(t, "member1", 3, "place-2-snapshot", namespace, configMap("moving", "plain"))))
	cm = f.get("member1", "v1", "ConfigMap", "test-namespace", "moving")
	if v, _, _ := unstructured.NestedString(cm.Object, "data", "key"); cm.GetUID() != uid || v != "plain" {
		t.Errorf("out of the envelope: uid %s, key %q; want uid %s, key plain", cm.GetUID(), v, uid)
	}
	if rec := f.get("member1", "v1", "ConfigMap", kube.InventoryNamespace, d2.Works[1].Name); rec != nil {
		t.Errorf("the record of the envelope's Work %s is still on the member", d2.Works[1].Name)
	}

	must(t, f.drivers.Driver("member1").Remove(f.ctx, d2))
	if f.get("member1", "v1", "ConfigMap", "test-namespace", "moving") != nil {
		t.Error("the ConfigMap is still on the member after the binding's removal")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestRedeliveryRestoresAnObjectAPersonChanged(t *testing.T) {
	f := newFixture(t, nil)
	d := delivery(t, "member1", 1, "place-0-snapshot", namespace, configMap("cm", "v1"))
	f.deliverAvailable(f.drivers, d)

	cm := f.get("member1", "v1", "ConfigMap", "test-namespace", "cm")
	must(t, unstructured.SetNestedField(cm.Object, "edited by hand", "data", "key"))
	must(t, f.clusters[0].Client().Update(f.ctx, cm))

	d2 := delivery(t, "member1", 2, "place-0-snapshot", namespace, configMap("cm", "v1"))
	f.deliverAvailable(f.start(), d2)
	if v := f.clusters[0].ConfigMapValue("test-namespace", "cm", "key"); v != "v1" {
		t.Errorf("ConfigMap key = %q after redelivery, want v1 restored", v)
	}
}

// sawReason reports whether any report at gen had typ with reason.
func (r *reports) sawReason(gen int64, typ, reason string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rep := range r.history {
		if c := meta.FindStatusCondition(rep.conds, typ); rep.gen == gen && c != nil && c.Reason == reason {
			return true
		}
	}
	return false
}

func TestADeploymentIsAvailableOnlyOnceItsNewPodsAre(t *testing.T) {
	cs := kubetest.StartWithWorkloads(t, "member1")
	f := &fixture{t: t, ctx: await.Context(t), clusters: cs, reports: &reports{}}
	f.kubeconfig = kubetest.Kubeconfig(t, cs, nil)
	f.drivers = f.start()
	d := delivery(t, "member1", 1, "place-0-snapshot", namespace, deployment)
	f.deliverAvailable(f.drivers, d)
	checkRolledOut(t, f, "registry.invalid/web:1")
	if !f.reports.sawReason(1, fleet.ResourceBindingAvailable, fleet.ResourceNotAvailableYetReason) {
		t.Error("the binding was never reported not yet available: its pods take 1.5s to become ready")
	}

	d2 := delivery(t, "member1", 2, "place-1-snapshot", namespace, strings.Replace(deployment, "web:1", "web:2", 1))
	f.deliverAvailable(f.drivers, d2)
	checkRolledOut(t, f, "registry.invalid/web:2")
	if !f.reports.sawReason(2, fleet.ResourceBindingAvailable, fleet.ResourceNotAvailableYetReason) {
		t.Error("the new snapshot counted as available on the health of the old one")
	}
}

// checkRolledOut checks that the Deployment runs image and its controller
// has seen its current spec and made it available.
func checkRolledOut(t *testing.T, f *fixture, image string) {
	t.Helper()
	dep := f.clusters[0].Get("apps/v1", "Deployment", "test-namespace", "web")
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	got, _, _ := unstructured.NestedString(containers[0].(map[string]any), "image")
	observed, _, _ := unstructured.NestedInt64(dep.Object, "status", "observedGeneration")
	updated, _, _ := unstructured.NestedInt64(dep.Object, "status", "updatedReplicas")
	available, _, _ := unstructured.NestedInt64(dep.Object, "status", "availableReplicas")
	if got != image || observed != dep.GetGeneration() || updated != 1 || available != 1 {
		t.Errorf("reported available with image %s, observedGeneration %d of %d, updated %d, available %d; want %s rolled out",
			got, observed, dep.GetGeneration(), updated, available, image)
	}
}

func TestARollbackIsAvailableOnceTheOldPodsAreBack(t *testing.T) {
	cs := kubetest.StartWithWorkloads(t, "member1")
	f := &fixture{t: t, ctx: await.Context(t), clusters: cs, reports: &reports{}}
	f.kubeconfig = kubetest.Kubeconfig(t, cs, nil)
	f.drivers = f.start()
	for gen, img := range []string{"web:1", "web:2", "web:1"} {
		d := delivery(t, "member1", int64(gen+1), "place-snapshot", namespace, strings.Replace(deployment, "web:1", img, 1))
		must(t, f.drivers.Driver("member1").Deliver(f.ctx, pushed(f.t, d)))
		f.reports.waitCond(t, d.Key(), int64(gen+1), fleet.ResourceBindingAvailable, metav1.ConditionTrue, member.AllWorkAvailableReason)
		checkRolledOut(t, f, "registry.invalid/"+img)
	}
}
