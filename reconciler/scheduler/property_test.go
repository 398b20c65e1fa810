package scheduler

import (
	"fmt"
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// The cases below are KubeFleet's own (pkg/scheduler/framework/plugins/
// clusteraffinity, types_test.go and scoring_test.go at e160c1cd), with
// their expected matches and scores; names are upstream's.

const (
	nonExistentProperty = "non-existent-non-resource-property"
	invalidProperty     = "invalid-non-resource-property"
)

func q(s string) *resource.Quantity { v := resource.MustParse(s); return &v }

// upstreamCluster is the cluster of upstream's TestClusterRequirementMatches
// and friends.
func upstreamCluster() *fleet.MemberCluster {
	return &fleet.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-1", Labels: map[string]string{"env": "prod", "region": "eastus"}},
		Status: fleet.MemberClusterStatus{
			ResourceUsage: fleet.ResourceUsage{
				Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10"), corev1.ResourceMemory: resource.MustParse("40Gi")},
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("36Gi")},
				Available:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")},
			},
			Properties: map[fleet.PropertyName]fleet.PropertyValue{
				fleet.NodeCountProperty: {Value: "4"},
				invalidProperty:         {Value: "invalid"},
			},
		},
	}
}

func TestPropertyValueReadsResourceUsageAndProperties(t *testing.T) {
	for _, tc := range []struct {
		name, property string
		want           *resource.Quantity
		wantErr        bool
	}{
		{name: "invalid property name (multiple segments)", property: "resources.kubernetes-fleet.io/resources.kubernetes-fleet.io/allocatable-cpu", wantErr: true},
		{name: "invalid property name (no capacity type)", property: "resources.kubernetes-fleet.io/-cpu", wantErr: true},
		{name: "invalid property name (no resource name)", property: "resources.kubernetes-fleet.io/allocatable-", wantErr: true},
		{name: "invalid property name (not a known capacity type)", property: "resources.kubernetes-fleet.io/additional-cpu", wantErr: true},
		{name: "invalid resource property (name format error)", property: "resources.kubernetes-fleet.io/allocatable", wantErr: true},
		{name: "resource not available", property: "resources.kubernetes-fleet.io/allocatable-gpu"},
		{name: "total capacity usage", property: fleet.TotalCPUCapacityProperty, want: q("10")},
		{name: "allocatable capacity usage", property: fleet.AllocatableMemoryCapacityProperty, want: q("36Gi")},
		{name: "available capacity usage", property: fleet.AvailableCPUCapacityProperty, want: q("2")},
		{name: "resource property retrieval", property: fleet.AvailableMemoryCapacityProperty, want: q("4Gi")},
		{name: "absent non-resource property", property: nonExistentProperty},
		{name: "invalid non-resource property (value format error)", property: invalidProperty, wantErr: true},
		{name: "non-resource property retrieval", property: fleet.NodeCountProperty, want: q("4")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := propertyValue(upstreamCluster(), tc.property)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("propertyValue(%q) = %v, want an error", tc.property, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (tc.want == nil) || got != nil && got.Cmp(*tc.want) != 0 {
				t.Fatalf("propertyValue(%q) = %v, want %v", tc.property, got, tc.want)
			}
		})
	}
}

func sel(name string, op fleet.PropertySelectorOperator, values ...string) *fleet.PropertySelector {
	return &fleet.PropertySelector{MatchExpressions: []fleet.PropertySelectorRequirement{{Name: name, Operator: op, Values: values}}}
}

func TestRequiredTermMatchesLabelsAndProperties(t *testing.T) {
	labels := func(kv ...string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{kv[0]: kv[1]}}
	}
	for _, tc := range []struct {
		name    string
		term    fleet.ClusterSelectorTerm
		want    bool
		wantErr bool
	}{
		{name: "invalid label selector", term: fleet.ClusterSelectorTerm{LabelSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: "invalid", Values: []string{"eastus"}}}}}, wantErr: true},
		{name: "label selector mismatches", term: fleet.ClusterSelectorTerm{LabelSelector: labels("env", "staging")}},
		{name: "label selector matches, no property selector", term: fleet.ClusterSelectorTerm{LabelSelector: labels("env", "prod")}, want: true},
		{name: "label selector matches, no expressions in the property selector", term: fleet.ClusterSelectorTerm{
			LabelSelector: labels("env", "prod"), PropertySelector: &fleet.PropertySelector{MatchExpressions: []fleet.PropertySelectorRequirement{}}}, want: true},
		{name: "label selector mismatches, property selector matches (AND)", term: fleet.ClusterSelectorTerm{
			LabelSelector: labels("env", "staging"), PropertySelector: sel(fleet.NodeCountProperty, fleet.PropertySelectorEqualTo, "4")}},
		{name: "label selector matches, property selector matches (AND)", term: fleet.ClusterSelectorTerm{
			LabelSelector: labels("env", "prod"), PropertySelector: sel(fleet.NodeCountProperty, fleet.PropertySelectorEqualTo, "4")}, want: true},
		{name: "invalid resource property name", term: fleet.ClusterSelectorTerm{PropertySelector: sel("resources.kubernetes-fleet.io/cpu", fleet.PropertySelectorEqualTo, "2")}, wantErr: true},
		{name: "property not found", term: fleet.ClusterSelectorTerm{PropertySelector: sel(nonExistentProperty, fleet.PropertySelectorEqualTo, "0")}},
		{name: "multiple value options", term: fleet.ClusterSelectorTerm{PropertySelector: sel(fleet.NodeCountProperty, fleet.PropertySelectorEqualTo, "1", "2")}, wantErr: true},
		{name: "invalid property value", term: fleet.ClusterSelectorTerm{PropertySelector: sel(invalidProperty, fleet.PropertySelectorEqualTo, "1")}, wantErr: true},
		{name: "invalid value option", term: fleet.ClusterSelectorTerm{PropertySelector: sel(fleet.NodeCountProperty, fleet.PropertySelectorEqualTo, "invalid")}, wantErr: true},
		{name: "invalid operator", term: fleet.ClusterSelectorTerm{PropertySelector: sel(fleet.NodeCountProperty, "invalid", "1")}, wantErr: true},
		{name: "op =, matched", term: fleet.ClusterSelectorTerm{PropertySelector: sel(fleet.NodeCountProperty, fleet.PropertySelectorEqualTo, "4")}, want: true},
		{name: "op =, not matched", term: fleet.ClusterSelectorTerm{PropertySelector: sel(fleet.NodeCountProperty, fleet.PropertySelectorEqualTo, "8")}},
		{name: "op !=, matched", term: fleet.ClusterSelectorTerm{PropertySelector: sel(fleet.TotalCPUCapacityProperty, fleet.PropertySelectorNotEqualTo, "11")}, want: true},
		{name: "op !=, not matched", term: fleet.ClusterSelectorTerm{PropertySelector: sel(fleet.TotalCPUCapacityProperty, fleet.PropertySelectorNotEqualTo, "10")}},
		{name: "op >, matched", term: fleet.ClusterSelectorTerm{PropertySelector: sel(fleet.AllocatableMemoryCapacityProperty, fleet.PropertySelectorGreaterThan, "30Gi")}, want: true},
		{name: "op >, not matched", term: fleet.ClusterSelectorTerm{PropertySelector: sel(fleet.AllocatableMemoryCapacityProperty, fleet.PropertySelectorGreaterThan, "40Gi")}},
		{name: "op <, matched", term: fleet.ClusterSelectorTerm{PropertySelector: sel(fleet.AvailableCPUCapacityProperty, fleet.PropertySelectorLessThan, "4")}, want: true},
		{name: "op <, not matched", term: fleet.ClusterSelectorTerm{PropertySelector: sel(fleet.AvailableCPUCapacityProperty, fleet.PropertySelectorLessThan, "1")}},
		{name: "op >=, matched", term: fleet.ClusterSelectorTerm{PropertySelector: sel(fleet.TotalMemoryCapacityProperty, fleet.PropertySelectorGreaterThanOrEqualTo, "40Gi")}, want: true},
		{name: "op >=, not matched", term: fleet.ClusterSelectorTerm{PropertySelector: sel(fleet.TotalMemoryCapacityProperty, fleet.PropertySelectorGreaterThanOrEqualTo, "41Gi")}},
		{name: "op <=, matched", term: fleet.ClusterSelectorTerm{PropertySelector: sel(fleet.AllocatableCPUCapacityProperty, fleet.PropertySelectorLessThanOrEqualTo, "8")}, want: true},
		{name: "op <=, not matched", term: fleet.ClusterSelectorTerm{PropertySelector: sel(fleet.AllocatableCPUCapacityProperty, fleet.PropertySelectorLessThanOrEqualTo, "7")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := matchesTerm(tc.term, upstreamCluster())
			if tc.wantErr {
				if err == nil {
					t.Fatalf("matchesTerm = %v, want an error", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("matchesTerm = %v, %v; want %v, nil", got, err, tc.want)
			}
		})
	}
}

func minMax(name, lo, hi string) extremes {
	e := extremes{name: {}}
	v := e[name]
	if lo != "" {
		v.min = q(lo)
	}
	if hi != "" {
		v.max = q(hi)
	}
	e[name] = v
	return e
}

func TestInterpolateWeightScalesBetweenFleetExtremes(t *testing.T) {
	huge := fmt.Sprintf("%f", math.MaxFloat64) + "0"
	for _, tc := range []struct {
		name     string
		property string
		order    fleet.PropertySortOrder
		weight   int32
		ext      extremes
		want     int32
		wantErr  bool
	}{
		{name: "invalid resource property name", property: "resources.kubernetes-fleet.io/available-", wantErr: true},
		{name: "invalid non-resource property value", property: invalidProperty, wantErr: true},
		{name: "property not found", property: nonExistentProperty, want: 0},
		{name: "extremums not registered in state", property: fleet.NodeCountProperty, ext: extremes{}, wantErr: true},
		{name: "no minimum value", property: fleet.NodeCountProperty, ext: minMax(fleet.NodeCountProperty, "", "4"), wantErr: true},
		{name: "no maximum value", property: fleet.NodeCountProperty, ext: minMax(fleet.NodeCountProperty, "4", ""), wantErr: true},
		{name: "min value = inf", property: fleet.NodeCountProperty, ext: minMax(fleet.NodeCountProperty, huge, huge), wantErr: true},
		{name: "max value = inf", property: fleet.NodeCountProperty, ext: minMax(fleet.NodeCountProperty, "0", huge), wantErr: true},
		{name: "min value > max value", property: fleet.NodeCountProperty, ext: minMax(fleet.NodeCountProperty, "4", "0"), wantErr: true},
		{name: "min value == max value", property: fleet.NodeCountProperty, ext: minMax(fleet.NodeCountProperty, "4", "4"), want: 0},
		{name: "observation out of range, < min", property: fleet.NodeCountProperty, ext: minMax(fleet.NodeCountProperty, "8", "16"), wantErr: true},
		{name: "observation out of range, > max", property: fleet.NodeCountProperty, ext: minMax(fleet.NodeCountProperty, "1", "2"), wantErr: true},
		{name: "invalid sort order", property: fleet.NodeCountProperty, order: "invalid", ext: minMax(fleet.NodeCountProperty, "2", "6"), wantErr: true},
		{name: "descending, left bound", property: fleet.NodeCountProperty, order: fleet.Descending, weight: 100, ext: minMax(fleet.NodeCountProperty, "4", "8"), want: 0},
		{name: "descending, right bound", property: fleet.NodeCountProperty, order: fleet.Descending, weight: 100, ext: minMax(fleet.NodeCountProperty, "2", "4"), want: 100},
		{name: "descending, round up", property: fleet.NodeCountProperty, order: fleet.Descending, weight: 7, ext: minMax(fleet.NodeCountProperty, "2", "7"), want: 3},
		{name: "descending, round down", property: fleet.NodeCountProperty, order: fleet.Descending, weight: 8, ext: minMax(fleet.NodeCountProperty, "2", "7"), want: 3},
		{name: "ascending, left bound", property: fleet.NodeCountProperty, order: fleet.Ascending, weight: 100, ext: minMax(fleet.NodeCountProperty, "4", "8"), want: 100},
		{name: "ascending, right bound", property: fleet.NodeCountProperty, order: fleet.Ascending, weight: 100, ext: minMax(fleet.NodeCountProperty, "2", "4"), want: 0},
		{name: "ascending, round up", property: fleet.NodeCountProperty, order: fleet.Ascending, weight: 8, ext: minMax(fleet.NodeCountProperty, "2", "7"), want: 5},
		{name: "ascending, round down", property: fleet.NodeCountProperty, order: fleet.Ascending, weight: 7, ext: minMax(fleet.NodeCountProperty, "2", "7"), want: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := interpolateWeight(upstreamCluster(), tc.property, tc.order, tc.weight, tc.ext)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("interpolateWeight = %d, want an error", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("interpolateWeight = %d, %v; want %d, nil", got, err, tc.want)
			}
		})
	}
}

func sorter(weight int32, name string, order fleet.PropertySortOrder, labels map[string]string) fleet.PreferredClusterSelector {
	p := fleet.PreferredClusterSelector{Weight: weight, Preference: fleet.ClusterSelectorTerm{
		PropertySorter: &fleet.PropertySorter{Name: name, SortOrder: order}}}
	if labels != nil {
		p.Preference.LabelSelector = &metav1.LabelSelector{MatchLabels: labels}
	}
	return p
}

func TestPreferenceScoreOfOneTerm(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pref    fleet.PreferredClusterSelector
		ext     extremes
		want    int32
		wantErr bool
	}{
		{name: "invalid label selector", pref: fleet.PreferredClusterSelector{Weight: 100, Preference: fleet.ClusterSelectorTerm{LabelSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: "invalid", Values: []string{"eastus"}}}}}}, wantErr: true},
		{name: "label selector mismatches", pref: sorter(100, fleet.NodeCountProperty, fleet.Ascending, map[string]string{"env": "staging"}), want: 0},
		{name: "label selector matches, no property sorter", pref: fleet.PreferredClusterSelector{Weight: 100, Preference: fleet.ClusterSelectorTerm{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}}, want: 100},
		{name: "weight interpolation fails", pref: sorter(100, fleet.NodeCountProperty, fleet.Ascending, map[string]string{"env": "staging"}), ext: extremes{}, want: 0},
		{name: "weight interpolation succeeds", pref: sorter(100, fleet.NodeCountProperty, fleet.Ascending, map[string]string{"env": "prod"}),
			ext: minMax(fleet.NodeCountProperty, "2", "6"), want: 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := preferenceScore(tc.pref, upstreamCluster(), tc.ext)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("preferenceScore = %d, want an error", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("preferenceScore = %d, %v; want %d, nil", got, err, tc.want)
			}
		})
	}
}

func withStatus(name string, labels map[string]string, nodes string, availableCPU string) *fleet.MemberCluster {
	m := &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if nodes != "" {
		m.Status.Properties = map[fleet.PropertyName]fleet.PropertyValue{fleet.NodeCountProperty: {Value: nodes}}
	}
	if availableCPU != "" {
		m.Status.ResourceUsage.Available = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(availableCPU)}
	}
	return m
}

func affinity(prefs ...fleet.PreferredClusterSelector) *fleet.PlacementPolicy {
	return &fleet.PlacementPolicy{PlacementType: fleet.PickNPlacementType, Affinity: &fleet.Affinity{
		ClusterAffinity: &fleet.ClusterAffinity{PreferredDuringSchedulingIgnoredDuringExecution: prefs}}}
}

// TestObserveExtremesOverTheFleet is upstream's TestPreScore.
func TestObserveExtremesOverTheFleet(t *testing.T) {
	fleetOf3 := []*fleet.MemberCluster{
		withStatus("cluster-1", nil, "10", "10"), withStatus("cluster-2", nil, "20", "12"), withStatus("cluster-3", nil, "15", "7"),
	}
	for _, tc := range []struct {
		name    string
		members []*fleet.MemberCluster
		policy  *fleet.PlacementPolicy
		want    map[string][2]string
	}{
		{name: "no scheduling policy", want: map[string][2]string{}},
		{name: "single preferred term which does not require sorting", members: []*fleet.MemberCluster{withStatus("cluster-1", nil, "", "")},
			policy: affinity(fleet.PreferredClusterSelector{Weight: 100, Preference: fleet.ClusterSelectorTerm{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eastus"}}}}), want: map[string][2]string{}},
		{name: "single preferred term which requires sorting", members: []*fleet.MemberCluster{withStatus("cluster-1", nil, "10", "")},
			policy: affinity(sorter(100, fleet.NodeCountProperty, "", nil)), want: map[string][2]string{fleet.NodeCountProperty: {"10", "10"}}},
		{name: "multiple preferred terms which require sorting", members: fleetOf3,
			policy: affinity(sorter(100, fleet.NodeCountProperty, "", nil), sorter(100, fleet.AvailableCPUCapacityProperty, "", nil)),
			want:   map[string][2]string{fleet.NodeCountProperty: {"10", "20"}, fleet.AvailableCPUCapacityProperty: {"7", "12"}}},
		{name: "no cluster reports the property", members: fleetOf3,
			policy: affinity(sorter(100, fleet.TotalCPUCapacityProperty, "", nil)), want: map[string][2]string{fleet.TotalCPUCapacityProperty: {"", ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := observeExtremes(tc.policy, tc.members)
			if err != nil {
				t.Fatal(err)
			}
			str := func(v *resource.Quantity) string {
				if v == nil {
					return ""
				}
				return v.String()
			}
			flat := map[string][2]string{}
			for k, v := range got {
				flat[k] = [2]string{str(v.min), str(v.max)}
			}
			if fmt.Sprint(flat) != fmt.Sprint(tc.want) {
				t.Fatalf("extremes = %v, want %v", flat, tc.want)
			}
		})
	}
}

// TestAffinityScoreSumsPreferredTerms is upstream's TestPluginScore.
func TestAffinityScoreSumsPreferredTerms(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ext     extremes
		policy  *fleet.PlacementPolicy
		cluster *fleet.MemberCluster
		want    int32
	}{
		{name: "single preferred term which features only label selector, matched",
			policy: affinity(fleet.PreferredClusterSelector{Weight: 50, Preference: fleet.ClusterSelectorTerm{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eastus"}}}}),
			cluster: withStatus("cluster-1", map[string]string{"region": "eastus"}, "", ""), want: 50},
		{name: "single preferred term which features only label selector, not matched",
			policy: affinity(fleet.PreferredClusterSelector{Weight: 50, Preference: fleet.ClusterSelectorTerm{
				LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"westus"}}}}}}),
			cluster: withStatus("cluster-1", map[string]string{"region": "westus"}, "", ""), want: 0},
		{name: "single preferred term which requires sorting", ext: minMax(fleet.NodeCountProperty, "10", "20"),
			policy:  affinity(sorter(50, fleet.NodeCountProperty, fleet.Ascending, nil)),
			cluster: withStatus("cluster-1", nil, "15", ""), want: 25},
		{name: "single preferred term which features label selector and requires sorting", ext: minMax(fleet.NodeCountProperty, "10", "20"),
			policy:  affinity(sorter(50, fleet.NodeCountProperty, fleet.Descending, map[string]string{"region": "westus"})),
			cluster: withStatus("cluster-1", map[string]string{"region": "westus"}, "12", ""), want: 10},
		{name: "single preferred term which features label selector and requires sorting (cannot be sorted, no data available)",
			ext:     minMax(fleet.NodeCountProperty, "10", "20"),
			policy:  affinity(sorter(50, fleet.NodeCountProperty, fleet.Descending, map[string]string{"region": "westus"})),
			cluster: withStatus("cluster-1", map[string]string{"region": "westus"}, "", ""), want: 0},
		{name: "multiple preferred terms",
			ext: extremes{fleet.NodeCountProperty: minMax(fleet.NodeCountProperty, "10", "20")[fleet.NodeCountProperty],
				fleet.AvailableCPUCapacityProperty: minMax(fleet.AvailableCPUCapacityProperty, "7", "25")[fleet.AvailableCPUCapacityProperty]},
			policy: affinity(sorter(50, fleet.NodeCountProperty, fleet.Descending, map[string]string{"region": "westus"}),
				sorter(20, fleet.AvailableCPUCapacityProperty, fleet.Ascending, map[string]string{"env": "prod"})),
			cluster: withStatus("cluster-1", map[string]string{"region": "westus", "env": "prod"}, "12", "10"), want: 27},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := affinityScore(tc.policy, tc.cluster, tc.ext)
			if err != nil || got != tc.want {
				t.Fatalf("affinityScore = %d, %v; want %d, nil", got, err, tc.want)
			}
		})
	}
}
