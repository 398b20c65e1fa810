package v1beta1

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func req(op PropertySelectorOperator, v string) PropertySelectorRequirement {
	return PropertySelectorRequirement{Name: NodeCountProperty, Operator: op, Values: []string{v}}
}

// TestRequirementsThatExcludeEveryValue is upstream's
// TestValidateRequirementsConsistency (pkg/utils/validator).
func TestRequirementsThatExcludeEveryValue(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reqs   []PropertySelectorRequirement
		errSub string
	}{
		{name: "empty input"},
		{name: "single requirement", reqs: []PropertySelectorRequirement{req(PropertySelectorEqualTo, "5")}},
		{name: "two compatible Eq with same value", reqs: []PropertySelectorRequirement{req(PropertySelectorEqualTo, "5"), req(PropertySelectorEqualTo, "5")}},
		{name: "Eq + Ne with different values", reqs: []PropertySelectorRequirement{req(PropertySelectorEqualTo, "5"), req(PropertySelectorNotEqualTo, "10")}},
		{name: "two Ne", reqs: []PropertySelectorRequirement{req(PropertySelectorNotEqualTo, "5"), req(PropertySelectorNotEqualTo, "10")}},
		{name: "Gt + Lt with non-empty interval", reqs: []PropertySelectorRequirement{req(PropertySelectorGreaterThan, "5"), req(PropertySelectorLessThan, "10")}},
		{name: "Gte x + Lte x pinpoints x", reqs: []PropertySelectorRequirement{req(PropertySelectorGreaterThanOrEqualTo, "10"), req(PropertySelectorLessThanOrEqualTo, "10")}},
		{name: "Eq inside bounds", reqs: []PropertySelectorRequirement{req(PropertySelectorGreaterThanOrEqualTo, "5"), req(PropertySelectorEqualTo, "7"), req(PropertySelectorLessThanOrEqualTo, "10")}},
		{name: "redundant lower bounds keep most restrictive (compatible)", reqs: []PropertySelectorRequirement{req(PropertySelectorGreaterThan, "5"), req(PropertySelectorGreaterThan, "10"), req(PropertySelectorLessThan, "20")}},
		{name: "value with units (memory quantity)", reqs: []PropertySelectorRequirement{req(PropertySelectorGreaterThanOrEqualTo, "100Mi"), req(PropertySelectorLessThan, "1Gi")}},
		{name: "two Eq with different values", reqs: []PropertySelectorRequirement{req(PropertySelectorEqualTo, "5"), req(PropertySelectorEqualTo, "10")}, errSub: "conflicting Eq values 5 and 10"},
		{name: "Eq + Ne with same value", reqs: []PropertySelectorRequirement{req(PropertySelectorEqualTo, "5"), req(PropertySelectorNotEqualTo, "5")}, errSub: "conflicting Eq and Ne on same value 5"},
		{name: "Gt 10 + Lt 5", reqs: []PropertySelectorRequirement{req(PropertySelectorGreaterThan, "10"), req(PropertySelectorLessThan, "5")}, errSub: "lower bound (10) and upper bound (5) exclude all values"},
		{name: "Gt x + Lt x boundary", reqs: []PropertySelectorRequirement{req(PropertySelectorGreaterThan, "10"), req(PropertySelectorLessThan, "10")}, errSub: "exclude all values"},
		{name: "Gt x + Lte x boundary", reqs: []PropertySelectorRequirement{req(PropertySelectorGreaterThan, "10"), req(PropertySelectorLessThanOrEqualTo, "10")}, errSub: "exclude all values"},
		{name: "Gte x + Lt x boundary", reqs: []PropertySelectorRequirement{req(PropertySelectorGreaterThanOrEqualTo, "10"), req(PropertySelectorLessThan, "10")}, errSub: "exclude all values"},
		{name: "least-restrictive lower hides contradiction (still detected via most-restrictive)",
			reqs: []PropertySelectorRequirement{req(PropertySelectorGreaterThan, "10"), req(PropertySelectorGreaterThan, "5"), req(PropertySelectorLessThan, "7")}, errSub: "exclude all values"},
		{name: "Eq below lower bound", reqs: []PropertySelectorRequirement{req(PropertySelectorGreaterThanOrEqualTo, "10"), req(PropertySelectorEqualTo, "5")}, errSub: "eq value 5 violates lower bound 10"},
		{name: "Eq above upper bound", reqs: []PropertySelectorRequirement{req(PropertySelectorLessThanOrEqualTo, "10"), req(PropertySelectorEqualTo, "20")}, errSub: "eq value 20 violates upper bound 10"},
		{name: "Eq equals strict lower bound", reqs: []PropertySelectorRequirement{req(PropertySelectorGreaterThan, "10"), req(PropertySelectorEqualTo, "10")}, errSub: "violates lower bound"},
		{name: "Eq equals strict upper bound", reqs: []PropertySelectorRequirement{req(PropertySelectorLessThan, "10"), req(PropertySelectorEqualTo, "10")}, errSub: "violates upper bound"},
		{name: "malformed value is ignored for consistency check", reqs: []PropertySelectorRequirement{req(PropertySelectorEqualTo, "not-a-number"), req(PropertySelectorEqualTo, "5")}},
		{name: "Eq + Ne with same canonical value but different format", reqs: []PropertySelectorRequirement{req(PropertySelectorEqualTo, "1000m"), req(PropertySelectorNotEqualTo, "1")}, errSub: "conflicting Eq and Ne"},
		{name: "Eq + Lt bound with same canonical value but different format", reqs: []PropertySelectorRequirement{req(PropertySelectorLessThan, "1024"), req(PropertySelectorEqualTo, "1Ki")}, errSub: "violates upper bound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := requirementsConflict(tc.reqs)
			if tc.errSub == "" && got != "" || !strings.Contains(got, tc.errSub) {
				t.Fatalf("requirementsConflict = %q, want %q", got, tc.errSub)
			}
		})
	}
}

func pickN(a *ClusterAffinity) *Placement {
	n := int32(1)
	return &Placement{
		TypeMeta:   metav1.TypeMeta{Kind: KindClusterResourcePlacement},
		ObjectMeta: metav1.ObjectMeta{Name: "crp"},
		Spec: PlacementSpec{
			ResourceSelectors: []ResourceSelectorTerm{{Version: "v1", Kind: "Namespace", Name: "app"}},
			Policy:            &PlacementPolicy{PlacementType: PickNPlacementType, NumberOfClusters: &n, Affinity: &Affinity{ClusterAffinity: a}},
		},
	}
}

func required(t ClusterSelectorTerm) *ClusterAffinity {
	return &ClusterAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &ClusterSelector{ClusterSelectorTerms: []ClusterSelectorTerm{t}}}
}

func preferred(t ClusterSelectorTerm) *ClusterAffinity {
	return &ClusterAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []PreferredClusterSelector{{Weight: 10, Preference: t}}}
}

func selector(name string, op PropertySelectorOperator, values ...string) *PropertySelector {
	return &PropertySelector{MatchExpressions: []PropertySelectorRequirement{{Name: name, Operator: op, Values: values}}}
}

const reqTerm = "spec.policy.affinity.clusterAffinity.requiredDuringSchedulingIgnoredDuringExecution.clusterSelectorTerms[0]"
const prefTerm = "spec.policy.affinity.clusterAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference"

// TestPlacementPropertyTerms: the webhook's messages (upstream's
// TestValidatePlacementPolicy cases) and the CRD schema's.
func TestPlacementPropertyTerms(t *testing.T) {
	for _, tc := range []struct {
		name     string
		affinity *ClusterAffinity
		want     string // "" when valid
	}{
		{name: "valid property selector", affinity: required(ClusterSelectorTerm{PropertySelector: selector(AllocatableCPUCapacityProperty, PropertySelectorGreaterThanOrEqualTo, "4")})},
		{name: "valid property sorter", affinity: preferred(ClusterSelectorTerm{PropertySorter: &PropertySorter{Name: NodeCountProperty, SortOrder: Descending}})},
		{name: "valid non-resource property with a prefix", affinity: required(ClusterSelectorTerm{PropertySelector: selector("kubernetes.azure.com/vm-sizes/Standard_D8s_v3/count", PropertySelectorEqualTo, "2")})},
		{name: "property sorter in a required term", affinity: required(ClusterSelectorTerm{PropertySorter: &PropertySorter{Name: NodeCountProperty, SortOrder: Ascending}}),
			want: reqTerm + ".propertySorter: Invalid value: PropertySorter is not allowed for RequiredDuringSchedulingIgnoredDuringExecution affinity"},
		{name: "property selector in a preferred term", affinity: preferred(ClusterSelectorTerm{PropertySelector: selector(NodeCountProperty, PropertySelectorEqualTo, "2")}),
			want: prefTerm + ".propertySelector: Invalid value: PropertySelector is not allowed for PreferredDuringSchedulingIgnoredDuringExecution affinity"},
		{name: "unsupported operator", affinity: required(ClusterSelectorTerm{PropertySelector: selector(NodeCountProperty, "Gte", "2")}),
			want: reqTerm + ".propertySelector.matchExpressions[0]: Invalid value: invalid requirement on property kubernetes-fleet.io/node-count: unsupported operator Gte"},
		{name: "value not a quantity", affinity: required(ClusterSelectorTerm{PropertySelector: selector(NodeCountProperty, PropertySelectorEqualTo, "five")})},
		{name: "two values", affinity: required(ClusterSelectorTerm{PropertySelector: selector(NodeCountProperty, PropertySelectorEqualTo, "1", "2")}),
			want: reqTerm + ".propertySelector.matchExpressions[0].values: Too many: 2: must have at most 1 item"},
		{name: "no values", affinity: required(ClusterSelectorTerm{PropertySelector: selector(NodeCountProperty, PropertySelectorEqualTo)}),
			want: reqTerm + ".propertySelector.matchExpressions[0].values: Required value"},
		{name: "unknown capacity type", affinity: required(ClusterSelectorTerm{PropertySelector: selector("resources.kubernetes-fleet.io/node-count", PropertySelectorEqualTo, "2")}),
			want: "invalid capacity type in resource property name resources.kubernetes-fleet.io/node-count, supported values are [allocatable available total]"},
		{name: "resource property without a capacity type", affinity: required(ClusterSelectorTerm{PropertySelector: selector("resources.kubernetes-fleet.io/totalcpu", PropertySelectorEqualTo, "2")}),
			want: "invalid resource property name resources.kubernetes-fleet.io/totalcpu, expected format is [PREFIX]/[CAPACITY_TYPE]-[RESOURCE_NAME]"},
		{name: "resource property name with special characters", affinity: required(ClusterSelectorTerm{PropertySelector: selector("resources.kubernetes-fleet.io/total-nospecialchars%^=@", PropertySelectorEqualTo, "2")}),
			want: "property name resources.kubernetes-fleet.io/total-nospecialchars%^=@ is not valid"},
		{name: "invalid first segment", affinity: required(ClusterSelectorTerm{PropertySelector: selector("St@ndard_D8s_v3/count", PropertySelectorEqualTo, "2")}),
			want: "property name first segment St@ndard_D8s_v3 is not valid"},
		{name: "invalid later segment", affinity: required(ClusterSelectorTerm{PropertySelector: selector("kubernetes.azure.com/vm-sizes/$", PropertySelectorEqualTo, "2")}),
			want: "property name segment $ is not valid"},
		{name: "inconsistent requirements", affinity: required(ClusterSelectorTerm{PropertySelector: &PropertySelector{MatchExpressions: []PropertySelectorRequirement{
			req(PropertySelectorGreaterThan, "10"), req(PropertySelectorLessThan, "5")}}}),
			want: reqTerm + ".propertySelector.matchExpressions: Invalid value: inconsistent requirements on property kubernetes-fleet.io/node-count: lower bound (10) and upper bound (5) exclude all values"},
		{name: "sort order not in the enum", affinity: preferred(ClusterSelectorTerm{PropertySorter: &PropertySorter{Name: NodeCountProperty, SortOrder: "random-order"}}),
			want: prefTerm + `.propertySorter.sortOrder: Unsupported value: "random-order": supported values: "Ascending", "Descending"`},
		{name: "sorter without a name", affinity: preferred(ClusterSelectorTerm{PropertySorter: &PropertySorter{SortOrder: Ascending}}),
			want: prefTerm + ".propertySorter.name: Required value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidatePlacement(pickN(tc.affinity))
			if tc.name == "value not a quantity" {
				if len(errs) != 1 || !strings.Contains(errs[0].Error(), `invalid requirement on property kubernetes-fleet.io/node-count: value "five" is not a valid resource.Quantity`) {
					t.Fatalf("errors = %v", errs)
				}
				return
			}
			if tc.want == "" {
				if len(errs) != 0 {
					t.Fatalf("errors = %v, want none", errs)
				}
				return
			}
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) {
				t.Fatalf("errors = %v, want one containing %q", errs, tc.want)
			}
		})
	}
}

// TestOverridePropertyTermsAreRefused: KubeFleet's override webhook takes
// only label selectors.
func TestOverridePropertyTermsAreRefused(t *testing.T) {
	o := &ClusterResourceOverride{
		TypeMeta:   metav1.TypeMeta{Kind: KindClusterResourceOverride},
		ObjectMeta: metav1.ObjectMeta{Name: "cro"},
		Spec: ClusterResourceOverrideSpec{
			ClusterResourceSelectors: []ResourceSelectorTerm{{Version: "v1", Kind: "Namespace", Name: "app"}},
			Policy: &OverridePolicy{OverrideRules: []OverrideRule{{
				ClusterSelector: &ClusterSelector{ClusterSelectorTerms: []ClusterSelectorTerm{{
					PropertySelector: selector(NodeCountProperty, PropertySelectorGreaterThan, "3")}}},
				OverrideType: DeleteOverrideType,
			}}},
		},
	}
	errs := ValidateClusterResourceOverride(o)
	want := "spec.policy.overrideRules[0].clusterSelector.clusterSelectorTerms[0]: Invalid value: invalid clusterSelector " +
		"{LabelSelector:nil PropertySelector:&{MatchExpressions:[{Name:kubernetes-fleet.io/node-count Operator:Gt Values:[3]}]} PropertySorter:<nil>}: only labelSelector is supported"
	if len(errs) != 1 || errs[0].Error() != want {
		t.Fatalf("errors = %v, want %s", errs, want)
	}
}
