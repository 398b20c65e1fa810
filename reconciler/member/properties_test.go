package member_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

func list(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func sameList(t *testing.T, what string, got, want corev1.ResourceList) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
		return
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g.Cmp(v) != 0 {
			t.Errorf("%s[%s] = %v, want %v", what, k, got[k], v.String())
		}
	}
}

func TestSimulatedMembersReportTheirPropertyAnnotations(t *testing.T) {
	o := member.SimulatedObservation(map[string]string{
		fleet.DriverAnnotation:                    fleet.DriverSimulated,
		fleet.NodeCountProperty:                   "5",
		fleet.TotalCPUCapacityProperty:            "16",
		fleet.AllocatableMemoryCapacityProperty:   "60Gi",
		fleet.AvailableCPUCapacityProperty:        "2500m",
		"resources.kubernetes-fleet.io/total-gpu": "2",
		fleet.PerGBMemoryCostProperty:             "0.012",
		"resources.kubernetes-fleet.io/used-cpu":  "1",     // no such capacity type
		fleet.PerCPUCoreCostProperty:              "cheap", // not a quantity
		"example.com/region":                      "west",
	})
	if len(o.Properties) != 2 || o.Properties[fleet.NodeCountProperty] != "5" || o.Properties[fleet.PerGBMemoryCostProperty] != "0.012" {
		t.Errorf("properties = %v, want the node count and the memory cost", o.Properties)
	}
	sameList(t, "capacity", o.Capacity, list("cpu", "16", "gpu", "2"))
	sameList(t, "allocatable", o.Allocatable, list("memory", "60Gi"))
	sameList(t, "available", o.Available, list("cpu", "2.5"))
}

// TestNodeObservationIsKubeFleetsBuiltInCollection: node count, summed
// capacity and allocatable, and available = allocatable minus the requests
// of pods bound to a node that have not finished (member_controller.go's
// updateResourceStats), floored at 0.
func TestNodeObservationIsKubeFleetsBuiltInCollection(t *testing.T) {
	node := func(cpu, mem, allocCPU, allocMem string) corev1.Node {
		return corev1.Node{Status: corev1.NodeStatus{Capacity: list("cpu", cpu, "memory", mem), Allocatable: list("cpu", allocCPU, "memory", allocMem)}}
	}
	pod := func(nodeName string, phase corev1.PodPhase, requests ...corev1.ResourceList) corev1.Pod {
		p := corev1.Pod{Spec: corev1.PodSpec{NodeName: nodeName}, Status: corev1.PodStatus{Phase: phase}}
		for _, r := range requests {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Resources: corev1.ResourceRequirements{Requests: r}})
		}
		return p
	}
	nodes := []corev1.Node{node("4", "16Gi", "3800m", "14Gi"), node("8", "32Gi", "7800m", "30Gi")}
	o := member.NodeObservation(nodes, []corev1.Pod{
		pod("n1", corev1.PodRunning, list("cpu", "500m", "memory", "1Gi"), list("cpu", "100m")),
		pod("n2", corev1.PodPending, list("memory", "2Gi")),
		pod("", corev1.PodPending, list("cpu", "4")),       // not scheduled
		pod("n1", corev1.PodSucceeded, list("cpu", "4")),   // finished
		pod("n2", corev1.PodFailed, list("memory", "8Gi")), // finished
	})
	if o.Properties[fleet.NodeCountProperty] != "2" {
		t.Errorf("node count = %q, want 2", o.Properties[fleet.NodeCountProperty])
	}
	sameList(t, "capacity", o.Capacity, list("cpu", "12", "memory", "48Gi"))
	sameList(t, "allocatable", o.Allocatable, list("cpu", "11600m", "memory", "44Gi"))
	sameList(t, "available", o.Available, list("cpu", "11", "memory", "41Gi"))

	over := member.NodeObservation(nodes[:1], []corev1.Pod{pod("n1", corev1.PodRunning, list("cpu", "5", "memory", "20Gi"))})
	sameList(t, "available when requests exceed allocatable", over.Available, list("cpu", "0", "memory", "0"))
}

func TestRecordMovesObservationTimesOnlyWithTheirValues(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var st fleet.MemberClusterStatus
	o := member.Observation{Properties: map[fleet.PropertyName]string{fleet.NodeCountProperty: "3", fleet.PerCPUCoreCostProperty: "0.100"},
		Allocatable: list("cpu", "8")}
	if !member.Record(&st, o, t0) {
		t.Fatal("the first observation changed nothing")
	}
	if member.Record(&st, o, t0.Add(time.Minute)) {
		t.Error("the same observation a minute later changed the status")
	}
	o.Properties[fleet.NodeCountProperty] = "4"
	o.Allocatable = list("cpu", "8000m") // the same quantity
	if !member.Record(&st, o, t0.Add(2*time.Minute)) {
		t.Fatal("a new node count changed nothing")
	}
	at := func(v metav1.Time) time.Time { return v.Time }
	if got := at(st.Properties[fleet.NodeCountProperty].ObservationTime); !got.Equal(t0.Add(2 * time.Minute)) {
		t.Errorf("node count observed at %s, want %s", got, t0.Add(2*time.Minute))
	}
	if got := at(st.Properties[fleet.PerCPUCoreCostProperty].ObservationTime); !got.Equal(t0) {
		t.Errorf("unchanged cost observed at %s, want %s", got, t0)
	}
	if got := at(st.ResourceUsage.ObservationTime); !got.Equal(t0) {
		t.Errorf("unchanged resource usage observed at %s, want %s", got, t0)
	}
	if !member.Record(&st, member.Observation{}, t0.Add(3*time.Minute)) || st.Properties != nil || !st.ResourceUsage.ObservationTime.Time.IsZero() {
		t.Errorf("an empty observation left %+v", st)
	}
}
