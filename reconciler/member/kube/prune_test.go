package kube_test

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/member"
	"github.com/gitfleet/gitfleet/reconciler/member/kube"
)

// annotatedConfigMap is a ConfigMap of test-namespace with one annotation.
func annotatedConfigMap(name, key, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: test-namespace, annotations: {%q: %q}}\ndata: {key: v}",
		name, key, value)
}

const labelledConfigMap = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: labelled, namespace: test-namespace, labels: {gitfleet.io/prune: disabled}}\ndata: {key: v}"

func TestAnObjectAnnotatedPruneDisabledStaysWhenItLeavesTheSnapshot(t *testing.T) {
	f := newFixture(t, nil)
	// Each ConfigMap is delivered twice, then dropped; the annotation that
	// counts is the one of the last delivery, the version on the member.
	tests := []struct {
		name          string
		first, second string
		kept          bool
	}{
		{"gitfleet-annotated",
			annotatedConfigMap("gitfleet-annotated", fleet.PruneAnnotation, "disabled"),
			annotatedConfigMap("gitfleet-annotated", fleet.PruneAnnotation, "disabled"), true},
		{"flux-annotated",
			annotatedConfigMap("flux-annotated", fleet.FluxPruneAnnotation, "disabled"),
			annotatedConfigMap("flux-annotated", fleet.FluxPruneAnnotation, "disabled"), true},
		{"annotated-by-the-last-delivery",
			configMap("annotated-by-the-last-delivery", "v"),
			annotatedConfigMap("annotated-by-the-last-delivery", fleet.PruneAnnotation, "disabled"), true},
		{"unannotated-by-the-last-delivery",
			annotatedConfigMap("unannotated-by-the-last-delivery", fleet.PruneAnnotation, "disabled"),
			configMap("unannotated-by-the-last-delivery", "v"), false},
		{"prune-enabled",
			annotatedConfigMap("prune-enabled", fleet.PruneAnnotation, "enabled"),
			annotatedConfigMap("prune-enabled", fleet.PruneAnnotation, "enabled"), false},
		{"plain", configMap("plain", "v"), configMap("plain", "v"), false},
		// A label says the same, as Flux's exclusions match either.
		{"labelled", labelledConfigMap, labelledConfigMap, true},
	}
	first, second := []string{namespace}, []string{namespace}
	for _, tt := range tests {
		first, second = append(first, tt.first), append(second, tt.second)
	}
	f.deliverAvailable(f.drivers, delivery(t, "member1", 1, "place-0-snapshot", first...))
	d := delivery(t, "member1", 2, "place-1-snapshot", second...)
	f.deliverAvailable(f.drivers, d)
	if c := f.reports.cond(d.Key(), 2, fleet.ResourceBindingPruneSkipped); c != nil {
		t.Errorf("PruneSkipped = %+v before anything left the snapshot", c)
	}

	// A restarted gitfleet: what decides is on the member, not in memory.
	restarted := f.start()
	d3 := delivery(t, "member1", 3, "place-2-snapshot", namespace)
	f.deliverAvailable(restarted, d3)
	for _, tt := range tests {
		if got := f.get("member1", "v1", "ConfigMap", "test-namespace", tt.name) != nil; got != tt.kept {
			t.Errorf("ConfigMap %s on the member = %t after it left the snapshot, want %t", tt.name, got, tt.kept)
		}
	}
	want := "4 resources left the resource snapshot but stay on the member cluster, annotated gitfleet.io/prune: disabled: " +
		"ConfigMap test-namespace/annotated-by-the-last-delivery, ConfigMap test-namespace/flux-annotated, ConfigMap test-namespace/gitfleet-annotated, " +
		"ConfigMap test-namespace/labelled"
	c := f.reports.cond(d3.Key(), 3, fleet.ResourceBindingPruneSkipped)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != member.PruneDisabledReason || c.Message != want {
		t.Fatalf("PruneSkipped = %+v, want True, %s, %q", c, member.PruneDisabledReason, want)
	}
	if c := f.reports.cond(d3.Key(), 3, fleet.ResourceBindingApplied); c == nil || c.Reason != member.AllWorkAppliedReason {
		t.Errorf("Applied = %+v beside PruneSkipped, want KubeFleet's AllWorkHaveBeenApplied", c)
	}

	// The inventory no longer holds them: a later snapshot never prunes
	// them, and the binding keeps naming them, also after a restart.
	d4 := delivery(t, "member1", 4, "place-2-snapshot", namespace)
	f.deliverAvailable(f.start(), d4)
	if c := f.reports.cond(d4.Key(), 4, fleet.ResourceBindingPruneSkipped); c == nil || c.Message != want {
		t.Errorf("PruneSkipped after a redelivery = %+v, want %q", c, want)
	}

	// One deleted by a person is no longer named; one the snapshot brings
	// back is the placement's again.
	must(t, f.clusters[0].Client().Delete(f.ctx, f.get("member1", "v1", "ConfigMap", "test-namespace", "gitfleet-annotated")))
	d5 := delivery(t, "member1", 5, "place-3-snapshot", namespace, configMap("flux-annotated", "back"))
	f.deliverAvailable(f.drivers, d5)
	want = "2 resources left the resource snapshot but stay on the member cluster, annotated gitfleet.io/prune: disabled: " +
		"ConfigMap test-namespace/annotated-by-the-last-delivery, ConfigMap test-namespace/labelled"
	if c := f.reports.cond(d5.Key(), 5, fleet.ResourceBindingPruneSkipped); c == nil || c.Message != want {
		t.Errorf("PruneSkipped = %+v, want %q", c, want)
	}

	// Brought back without the annotation and dropped again, it is pruned.
	d6 := delivery(t, "member1", 6, "place-4-snapshot", namespace)
	f.deliverAvailable(f.drivers, d6)
	if f.get("member1", "v1", "ConfigMap", "test-namespace", "flux-annotated") != nil {
		t.Error("a ConfigMap whose last delivery had no prune annotation was not pruned")
	}
}

func TestRemoveLeavesWhatIsAnnotatedPruneDisabled(t *testing.T) {
	f := newFixture(t, nil)
	ns := strings.Replace(namespace, "metadata: {name: test-namespace}",
		"metadata: {name: test-namespace, annotations: {gitfleet.io/prune: disabled}}", 1)
	d := delivery(t, "member1", 1, "place-0-snapshot", ns,
		annotatedConfigMap("kept", fleet.FluxPruneAnnotation, "disabled"), configMap("removed", "v"))
	f.deliverAvailable(f.drivers, d)

	must(t, f.start().Driver("member1").Remove(f.ctx, d))
	if n := f.get("member1", "v1", "Namespace", "", "test-namespace"); n == nil || n.GetDeletionTimestamp() != nil {
		t.Errorf("the namespace annotated prune: disabled is gone or terminating: %v", n)
	}
	if f.get("member1", "v1", "ConfigMap", "test-namespace", "kept") == nil {
		t.Error("the ConfigMap annotated prune: disabled was removed with its placement")
	}
	if f.get("member1", "v1", "ConfigMap", "test-namespace", "removed") != nil {
		t.Error("the ConfigMap without the annotation is still on the member")
	}
	if f.get("member1", "v1", "ConfigMap", kube.InventoryNamespace, "place-work") != nil {
		t.Error("the inventory is still on the member")
	}
}

func TestAClusterScopedPlacementNeverPrunesWhatANamespacedPlacementOfItsNameHolds(t *testing.T) {
	f := newFixture(t, nil)
	// ClusterResourcePlacement "place" and ResourcePlacement
	// test-namespace/place: the same placement label, told apart by the
	// namespace label only the namespaced one's objects carry.
	cluster := delivery(t, "member1", 1, "place-0-snapshot", namespace)
	f.deliverAvailable(f.drivers, cluster)
	namespaced := delivery(t, "member1", 1, "place-0-snapshot", configMap("shared", "v2"))
	namespaced.Binding.Namespace = "test-namespace"
	f.deliverAvailable(f.drivers, namespaced)
	if l := f.get("member1", "v1", "ConfigMap", "test-namespace", "shared").GetLabels(); l[kube.PlacementNamespaceLabel] != "test-namespace" {
		t.Fatalf("labels of the namespaced placement's ConfigMap = %v", l)
	}

	// The cluster-scoped placement selects it too: it is the namespaced
	// one's, not taken over.
	cluster2 := delivery(t, "member1", 2, "place-1-snapshot", namespace, configMap("shared", "v1"))
	must(t, f.drivers.Driver("member1").Deliver(f.ctx, pushed(t, cluster2)))
	rep := f.reports.waitCond(t, cluster2.Key(), 2, fleet.ResourceBindingApplied, metav1.ConditionFalse, member.WorkNotAppliedReason)
	if len(rep.failed) != 1 || rep.failed[0].Name != "shared" || rep.failed[0].Condition.Reason != member.FailedToTakeOverReason {
		t.Errorf("failed = %+v, want shared not taken over", rep.failed)
	}

	// It drops it again, and is removed: the object stays the namespaced
	// placement's.
	cluster3 := delivery(t, "member1", 3, "place-2-snapshot", namespace)
	f.deliverAvailable(f.drivers, cluster3)
	if f.get("member1", "v1", "ConfigMap", "test-namespace", "shared") == nil {
		t.Fatal("the cluster-scoped placement's prune deleted an object of the namespaced placement of the same name")
	}
	if c := f.reports.cond(cluster3.Key(), 3, fleet.ResourceBindingPruneSkipped); c != nil {
		t.Errorf("PruneSkipped = %+v: an object another placement holds is not left by this one", c)
	}
	must(t, f.drivers.Driver("member1").Remove(f.ctx, cluster3))
	if cm := f.get("member1", "v1", "ConfigMap", "test-namespace", "shared"); cm == nil || cm.GetLabels()[kube.PlacementNamespaceLabel] != "test-namespace" {
		t.Fatalf("shared = %v after the cluster-scoped placement's removal, want the namespaced placement's", cm)
	}
}
