package kube_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

func resources(cpu, mem string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
}

// TestAKubeconfigMembersPropertiesAreReadFromItsNodes: a real API server
// with two Nodes and Pods of every kind KubeFleet's built-in collection
// tells apart; the member's properties come through the property
// collector into the hub, and a new pod lowers what is available.
func TestAKubeconfigMembersPropertiesAreReadFromItsNodes(t *testing.T) {
	f := newFixture(t, nil)
	cl := f.clusters[0].Client()
	node := func(name, cpu, mem, allocCPU, allocMem string) {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		must(t, cl.Create(f.ctx, n))
		n.Status.Capacity, n.Status.Allocatable = resources(cpu, mem), resources(allocCPU, allocMem)
		must(t, cl.Status().Update(f.ctx, n))
	}
	node("node-1", "4", "16Gi", "3800m", "14Gi")
	node("node-2", "8", "32Gi", "7800m", "30Gi")
	pod := func(name, nodeName string, phase corev1.PodPhase, requests corev1.ResourceList) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PodSpec{
			NodeName:   nodeName,
			Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/c:1", Resources: corev1.ResourceRequirements{Requests: requests}}},
		}}
		must(t, cl.Create(f.ctx, p))
		if phase != "" {
			p.Status.Phase = phase
			must(t, cl.Status().Update(f.ctx, p))
		}
	}
	pod("running", "node-1", corev1.PodRunning, resources("600m", "1Gi"))
	pod("bound", "node-2", "", resources("400m", "2Gi"))
	pod("unscheduled", "", "", resources("4", "4Gi"))
	pod("done", "node-1", corev1.PodSucceeded, resources("4", "4Gi"))

	o, err := f.drivers.Observe(f.ctx, "member1")
	must(t, err)
	if o.Properties[fleet.NodeCountProperty] != "2" {
		t.Errorf("node count = %q, want 2", o.Properties[fleet.NodeCountProperty])
	}
	for what, pair := range map[string][2]corev1.ResourceList{
		"capacity":    {o.Capacity, resources("12", "48Gi")},
		"allocatable": {o.Allocatable, resources("11600m", "44Gi")},
		"available":   {o.Available, resources("10600m", "41Gi")},
	} {
		for k, want := range pair[1] {
			if got := pair[0][k]; got.Cmp(want) != 0 {
				t.Errorf("%s %s = %s, want %s", what, k, got.String(), want.String())
			}
		}
	}

	// Through the collector into a hub, as serve does every round.
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := embedded.New(clk, nil)
	h.ApplyMemberCluster(&fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "member1",
		Annotations: map[string]string{fleet.DriverAnnotation: fleet.DriverKubeconfigPrefix + "member1"}}})
	collector := &member.PropertyCollector{Hub: h, Observer: f.drivers, Now: clk.Now}
	if n, err := collector.Sync(f.ctx); err != nil || n != 1 {
		t.Fatalf("first round wrote %d members (%v), want 1", n, err)
	}
	if n, err := collector.Sync(f.ctx); err != nil || n != 0 {
		t.Fatalf("a round without changes wrote %d members (%v), want 0", n, err)
	}
	pod("new", "node-2", corev1.PodRunning, resources("2", "1Gi"))
	clk.Advance(time.Minute)
	if n, err := collector.Sync(f.ctx); err != nil || n != 1 {
		t.Fatalf("the round after a new pod wrote %d members (%v), want 1", n, err)
	}
	m, _ := h.GetMemberCluster(f.ctx, "member1")
	if got := m.Status.ResourceUsage.Available[corev1.ResourceCPU]; got.Cmp(resource.MustParse("8600m")) != 0 {
		t.Errorf("available cpu in the hub = %s, want 8600m", got.String())
	}
	if got := m.Status.Properties[fleet.NodeCountProperty]; got.Value != "2" || !got.ObservationTime.Time.Equal(clk.Now().Add(-time.Minute)) {
		t.Errorf("node count in the hub = %+v, want 2 as first observed", got)
	}
	if !m.Status.ResourceUsage.ObservationTime.Time.Equal(clk.Now()) {
		t.Errorf("resource usage observed at %s, want %s", m.Status.ResourceUsage.ObservationTime, clk.Now())
	}
}
