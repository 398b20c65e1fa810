package hubtest

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

// memberPropertiesAreStored: what the property collector observes of a
// member (here a simulated one's annotations) is stored in the member's
// status, where the scheduler lists it; a second round with nothing new
// writes nothing; a person's later change to the member keeps it; a write
// on a stale resourceVersion is a Conflict.
func (s *suite) memberPropertiesAreStored() {
	if s.ns != "" {
		s.t.Skip("member clusters are cluster-scoped")
	}
	statuses, ok := s.h.(hub.MemberClusterStatuses)
	if !ok {
		s.t.Fatalf("%T does not store member statuses (hub.MemberClusterStatuses)", s.h)
	}
	m := &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "member-1", Annotations: map[string]string{
		fleet.DriverAnnotation:                fleet.DriverSimulated,
		fleet.NodeCountProperty:               "3",
		fleet.AllocatableCPUCapacityProperty:  "7500m",
		fleet.AvailableMemoryCapacityProperty: "12Gi",
		fleet.PerCPUCoreCostProperty:          "0.125",
		"example.com/not-a-property":          "x",
	}}}
	s.s.Apply(s.t, m)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	collector := &member.PropertyCollector{Hub: struct {
		hub.MemberClusters
		hub.MemberClusterStatuses
	}{s.h, statuses}, Now: func() time.Time { return now }}
	if _, err := collector.Sync(s.ctx); err != nil {
		s.t.Fatal(err)
	}
	got := s.member("member-1")
	want := map[fleet.PropertyName]string{fleet.NodeCountProperty: "3", fleet.PerCPUCoreCostProperty: "0.125"}
	if len(got.Status.Properties) != len(want) {
		s.t.Fatalf("properties = %v, want %v", got.Status.Properties, want)
	}
	for k, v := range want {
		if got.Status.Properties[k].Value != v || got.Status.Properties[k].ObservationTime.Time.IsZero() {
			s.t.Errorf("property %s = %+v, want %s with an observation time", k, got.Status.Properties[k], v)
		}
	}
	cpu, mem := got.Status.ResourceUsage.Allocatable[corev1.ResourceCPU], got.Status.ResourceUsage.Available[corev1.ResourceMemory]
	if cpu.Cmp(resource.MustParse("7.5")) != 0 || mem.Cmp(resource.MustParse("12Gi")) != 0 || got.Status.ResourceUsage.ObservationTime.IsZero() {
		s.t.Errorf("resource usage = %+v, want allocatable cpu 7.5 and available memory 12Gi, observed", got.Status.ResourceUsage)
	}

	firstCost := got.Status.Properties[fleet.PerCPUCoreCostProperty].ObservationTime
	now = now.Add(time.Minute)
	if n, err := collector.Sync(s.ctx); err != nil || n != 0 {
		s.t.Errorf("a second round with nothing new wrote %d member(s) (%v), want 0", n, err)
	}

	// A person's label change keeps the status; a changed annotation is
	// observed again.
	m.Labels = map[string]string{"region": "west"}
	m.Annotations[fleet.NodeCountProperty] = "4"
	s.s.Apply(s.t, m)
	if _, err := collector.Sync(s.ctx); err != nil {
		s.t.Fatal(err)
	}
	got = s.member("member-1")
	if v := got.Status.Properties[fleet.NodeCountProperty]; v.Value != "4" {
		s.t.Errorf("node count after the change = %+v, want 4", v)
	}
	if v := got.Status.Properties[fleet.PerCPUCoreCostProperty]; v.Value != "0.125" || !v.ObservationTime.Equal(&firstCost) {
		s.t.Errorf("unchanged cost = %+v, want its first observation time %s kept", v, firstCost)
	}

	stale := got.DeepCopy()
	got.Status.Properties = nil
	s.must(statuses.UpdateMemberClusterStatus(s.ctx, got))
	stale.Status.Properties = nil
	if err := statuses.UpdateMemberClusterStatus(s.ctx, stale); !hub.IsConflict(err) {
		s.t.Errorf("a member status write on a stale resourceVersion: %v, want a Conflict", err)
	}
}

func (s *suite) member(name string) *fleet.MemberCluster {
	s.t.Helper()
	members, err := s.h.ListMemberClusters(s.ctx)
	s.must(err)
	for _, m := range members {
		if m.Name == name {
			return m
		}
	}
	s.t.Fatalf("member cluster %s is not listed", name)
	return nil
}
