package member

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

func TestWorkNameFollowsThePlacementScope(t *testing.T) {
	tests := []struct {
		namespace, placement, want string
	}{
		{"", "example-placement", "example-placement-work"},
		{"my-app-namespace", "web-app-placement", "my-app-namespace.web-app-placement-work"},
	}
	for _, tt := range tests {
		d := Delivery{Binding: &fleet.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: tt.namespace, Name: "b",
			Labels: map[string]string{fleet.PlacementTrackingLabel: tt.placement}}}}
		if got := d.WorkName(); got != tt.want {
			t.Errorf("WorkName(%q/%q) = %q, want %q", tt.namespace, tt.placement, got, tt.want)
		}
	}
}

func TestFailedPlacementsListWhatIsTrackedElseEverything(t *testing.T) {
	u := func(apiVersion, kind, name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
			"metadata": map[string]any{"name": name}}}
	}
	tests := []struct {
		name      string
		resources []*unstructured.Unstructured
		want      string
	}{
		{"only workloads with tracked availability",
			[]*unstructured.Unstructured{u("v1", "Namespace", "ns"), u("apps/v1", "Deployment", "web"), u("v1", "Service", "web")},
			"[Deployment/web Service/web]"},
		{"every resource when none is tracked",
			[]*unstructured.Unstructured{u("v1", "Namespace", "ns"), u("v1", "ConfigMap", "cm")},
			"[Namespace/ns ConfigMap/cm]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, f := range failedPlacements(tt.resources, 3) {
				got = append(got, f.Kind+"/"+f.Name)
				if f.Condition.ObservedGeneration != 3 {
					t.Errorf("failed placement observed generation = %d, want 3", f.Condition.ObservedGeneration)
				}
			}
			if fmt.Sprint(got) != tt.want {
				t.Fatalf("failed placements = %v, want %s", got, tt.want)
			}
		})
	}
}

func TestDriversKeepOneSimulatedMemberPerCluster(t *testing.T) {
	ds := NewDrivers(clock.NewFake(t0()), nil, nil)
	m := &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "member1",
		Annotations: map[string]string{fleet.DriverAnnotation: fleet.DriverSimulated}}}
	first, ok := ds.For(m).(*Simulated)
	if !ok {
		t.Fatalf("driver of a simulated member is %T", ds.For(m))
	}
	if again := ds.For(m.DeepCopy()); again != first {
		t.Fatal("a second lookup built a new simulated member: what it holds would be lost")
	}
	if got := ds.SimulatedNames(); fmt.Sprint(got) != "[member1]" {
		t.Fatalf("SimulatedNames = %v", got)
	}
	delete(m.Annotations, fleet.DriverAnnotation)
	if _, isSim := ds.For(m).(*Simulated); isSim {
		t.Fatal("a member without the driver annotation was simulated")
	}
}

func t0() time.Time { return time.Date(2026, 1, 12, 0, 0, 0, 0, time.UTC) }

// nopReporter takes reports and drops them.
type nopReporter struct{}

func (nopReporter) ReportBindingStatus(hub.Key, int64, []metav1.Condition, Placements) error {
	return nil
}

func TestSimulatedMembersShareTheResourcesOfASnapshot(t *testing.T) {
	ds := NewDrivers(clock.NewFake(t0()), nopReporter{}, nil)
	deliver := func(cluster, snapshot, value string) *Simulated {
		t.Helper()
		m := &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster,
			Annotations: map[string]string{fleet.DriverAnnotation: fleet.DriverSimulated}}}
		b := &fleet.Binding{ObjectMeta: metav1.ObjectMeta{Name: "app-" + cluster, Generation: 1,
			Labels: map[string]string{fleet.PlacementTrackingLabel: "app"}},
			Spec: fleet.ResourceBindingSpec{TargetCluster: cluster, ResourceSnapshotName: snapshot}}
		cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "app", "namespace": "app"}, "data": map[string]any{"key": value}}}
		sim := ds.For(m).(*Simulated)
		if err := sim.Deliver(context.Background(), Delivery{Binding: b, Member: m, Resources: []*unstructured.Unstructured{cm}}); err != nil {
			t.Fatal(err)
		}
		return sim
	}
	held := func(s *Simulated) *unstructured.Unstructured {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, p := range s.placed {
			return p.Resources[0]
		}
		return nil
	}
	a, b := deliver("member-1", "app-0-snapshot", "v1"), deliver("member-2", "app-0-snapshot", "v1")
	if held(a) != held(b) {
		t.Error("two members bound to one snapshot hold two copies of its resources")
	}
	// Resources that differ (an override, say) are not shared.
	c := deliver("member-3", "app-0-snapshot", "overridden")
	if held(c) == held(a) || held(c).Object["data"].(map[string]any)["key"] != "overridden" {
		t.Errorf("member-3 holds %v, want its own resources", held(c).Object)
	}
	if held(a).Object["data"].(map[string]any)["key"] != "v1" {
		t.Errorf("member-1's resources changed with member-3's delivery: %v", held(a).Object)
	}
	// What Placed hands out is a copy: changing it changes no member.
	placed := a.Placed()
	placed[0].Resources[0].Object["data"] = map[string]any{"key": "changed"}
	if held(b).Object["data"].(map[string]any)["key"] != "v1" {
		t.Error("changing what Placed returned changed what a member holds")
	}
}
