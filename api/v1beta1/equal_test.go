package v1beta1

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func cond(msg string) metav1.Condition {
	return metav1.Condition{Type: "Succeeded", Status: metav1.ConditionTrue, Reason: "Done", Message: msg, ObservedGeneration: 1,
		LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 9, 1, 49, 6, 0, time.UTC))}
}

// assertSeesEveryField checks that same tells base() from a copy in which
// one field of the first entry changed, for every field of T: a field
// that no change covers fails the test.
func assertSeesEveryField[T any](t *testing.T, base func() []T, same func(a, b []T) bool, changes map[string]func(*T)) {
	t.Helper()
	typ := reflect.TypeFor[T]()
	for i := range typ.NumField() {
		f := typ.Field(i).Name
		change, ok := changes[f]
		if !ok {
			t.Errorf("no test changes field %s", f)
			continue
		}
		t.Run(f, func(t *testing.T) {
			a, b := base(), base()
			if !same(a, b) || !reflect.DeepEqual(a, b) {
				t.Fatal("equal copies differ")
			}
			change(&b[0])
			if same(a, b) {
				t.Errorf("a change of %s went unseen", f)
			}
		})
	}
}

func TestSameClusterUpdatingStatusesSeesAChangeOfEveryField(t *testing.T) {
	base := func() []ClusterUpdatingStatus {
		return []ClusterUpdatingStatus{{ClusterName: "member-1", ResourceOverrideSnapshots: []NamespacedName{{Name: "o-0", Namespace: "app"}},
			ClusterResourceOverrideSnapshots: []string{"c-0"}, Conditions: []metav1.Condition{cond("started"), cond("done")}}}
	}
	changes := map[string]func(c *ClusterUpdatingStatus){
		"ClusterName":                      func(c *ClusterUpdatingStatus) { c.ClusterName = "member-2" },
		"ResourceOverrideSnapshots":        func(c *ClusterUpdatingStatus) { c.ResourceOverrideSnapshots[0].Namespace = "other" },
		"ClusterResourceOverrideSnapshots": func(c *ClusterUpdatingStatus) { c.ClusterResourceOverrideSnapshots = nil },
		"Conditions": func(c *ClusterUpdatingStatus) {
			c.Conditions[1].LastTransitionTime.Time = c.Conditions[1].LastTransitionTime.Add(time.Second)
		},
	}
	assertSeesEveryField(t, base, SameClusterUpdatingStatuses, changes)
}

func TestSamePerClusterPlacementStatusesSeesAChangeOfEveryField(t *testing.T) {
	base := func() []PerClusterPlacementStatus {
		return []PerClusterPlacementStatus{{ClusterName: "member-1", ObservedResourceIndex: "1",
			ApplicableResourceOverrides: []NamespacedName{{Name: "o-0", Namespace: "app"}}, ApplicableClusterResourceOverrides: []string{"c-0"},
			FailedPlacements: []FailedResourcePlacement{{ResourceIdentifier: ResourceIdentifier{Version: "v1", Kind: "ConfigMap", Name: "cm"}, Condition: cond("failed")}},
			DriftedPlacements: []DriftedResourcePlacement{{ResourceIdentifier: ResourceIdentifier{Version: "v1", Kind: "ConfigMap", Name: "cm"},
				TargetClusterObservedGeneration: 1, ObservedDrifts: []PatchDetail{{Path: "/data/k", ValueInMember: "a", ValueInHub: "b"}}}},
			DiffedPlacements: []DiffedResourcePlacement{{ResourceIdentifier: ResourceIdentifier{Version: "v1", Kind: "ConfigMap", Name: "cm"},
				ObservedDiffs: []PatchDetail{{Path: "/", ValueInHub: "(the whole object)"}}}},
			Conditions: []metav1.Condition{cond("available")}}}
	}
	changes := map[string]func(c *PerClusterPlacementStatus){
		"ClusterName":                        func(c *PerClusterPlacementStatus) { c.ClusterName = "member-2" },
		"ObservedResourceIndex":              func(c *PerClusterPlacementStatus) { c.ObservedResourceIndex = "2" },
		"ApplicableResourceOverrides":        func(c *PerClusterPlacementStatus) { c.ApplicableResourceOverrides[0].Name = "o-1" },
		"ApplicableClusterResourceOverrides": func(c *PerClusterPlacementStatus) { c.ApplicableClusterResourceOverrides[0] = "c-1" },
		"FailedPlacements":                   func(c *PerClusterPlacementStatus) { c.FailedPlacements[0].Condition.Reason = "Other" },
		"DriftedPlacements":                  func(c *PerClusterPlacementStatus) { c.DriftedPlacements[0].ObservedDrifts[0].ValueInMember = "c" },
		"DiffedPlacements": func(c *PerClusterPlacementStatus) {
			c.DiffedPlacements[0].FirstDiffedObservedTime.Time = c.DiffedPlacements[0].FirstDiffedObservedTime.Add(time.Second)
		},
		"Conditions": func(c *PerClusterPlacementStatus) { c.Conditions[0].ObservedGeneration = 2 },
	}
	assertSeesEveryField(t, base, SamePerClusterPlacementStatuses, changes)
}

// A nil list and an empty one encode differently where the field is not
// omitempty ("conditions: []" or nothing), so they are not the same.
func TestSameListsTellNilFromEmpty(t *testing.T) {
	for name, same := range map[string]bool{
		"nil and empty entries":       SameClusterUpdatingStatuses(nil, []ClusterUpdatingStatus{}),
		"nil and empty conditions":    SamePerClusterPlacementStatuses([]PerClusterPlacementStatus{{}}, []PerClusterPlacementStatus{{Conditions: []metav1.Condition{}}}),
		"one entry more":              SameClusterUpdatingStatuses([]ClusterUpdatingStatus{{}}, []ClusterUpdatingStatus{{}, {}}),
		"nil and empty override list": SameClusterUpdatingStatuses([]ClusterUpdatingStatus{{}}, []ClusterUpdatingStatus{{ClusterResourceOverrideSnapshots: []string{}}}),
	} {
		if same {
			t.Errorf("%s: same, want different", name)
		}
	}
}
