package scheduler

import (
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// Property-based scheduling, as KubeFleet's ClusterAffinity plugin does it
// (pkg/scheduler/framework/plugins/clusteraffinity): a required term's
// propertySelector filters, a preferred term's propertySorter scores by
// linear interpolation between the lowest and highest value observed
// across the fleet. A property a cluster does not report is no error: the
// selector does not match it, the sorter gives it 0.

// propertyValue is the cluster's observed value of a property: a resource
// property (resources.kubernetes-fleet.io/<capacity type>-<resource>) from
// status.resourceUsage, any other from status.properties. Nil when the
// cluster does not report it.
func propertyValue(m *fleet.MemberCluster, name string) (*resource.Quantity, error) {
	if rest, ok := strings.CutPrefix(name, fleet.ResourcePropertyNamePrefix); ok {
		q, err := resourceUsageValue(m, rest)
		if err != nil {
			return nil, fmt.Errorf("failed to retrieve resource property value for %s from cluster %s: %w", rest, m.Name, err)
		}
		return q, nil
	}
	v, ok := m.Status.Properties[fleet.PropertyName(name)]
	if !ok {
		return nil, nil
	}
	q, err := resource.ParseQuantity(v.Value)
	if err != nil {
		return nil, fmt.Errorf("value %s of property %s from cluster %s is not a valid quantity: %w", v.Value, name, m.Name, err)
	}
	return &q, nil
}

// resourceUsageValue reads "<capacity type>-<resource>" from the
// cluster's resource usage.
func resourceUsageValue(m *fleet.MemberCluster, name string) (*resource.Quantity, error) {
	segs := strings.Split(name, "-")
	if len(segs) != 2 || segs[0] == "" || segs[1] == "" {
		return nil, fmt.Errorf("invalid resource property name: %s", name)
	}
	var list corev1.ResourceList
	switch segs[0] {
	case fleet.TotalCapacityName:
		list = m.Status.ResourceUsage.Capacity
	case fleet.AllocatableCapacityName:
		list = m.Status.ResourceUsage.Allocatable
	case fleet.AvailableCapacityName:
		list = m.Status.ResourceUsage.Available
	default:
		return nil, fmt.Errorf("invalid capacity type %s in resource property name %s", segs[0], name)
	}
	q, ok := list[corev1.ResourceName(segs[1])]
	if !ok {
		return nil, nil
	}
	return &q, nil
}

// matchesTerm is a required term: its label selector AND its property
// selector (every expression).
func matchesTerm(term fleet.ClusterSelectorTerm, m *fleet.MemberCluster) (bool, error) {
	if term.LabelSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
		if err != nil {
			return false, fmt.Errorf("invalid cluster label selector: %w", err)
		}
		if !sel.Matches(labels.Set(m.Labels)) {
			return false, nil
		}
	}
	if term.PropertySelector == nil {
		return true, nil
	}
	for _, exp := range term.PropertySelector.MatchExpressions {
		ok, err := matchesRequirement(exp, m)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

func matchesRequirement(exp fleet.PropertySelectorRequirement, m *fleet.MemberCluster) (bool, error) {
	q, err := propertyValue(m, exp.Name)
	if err != nil || q == nil {
		return false, err
	}
	if len(exp.Values) != 1 {
		return false, fmt.Errorf("more than one value in the property selector expression")
	}
	want, err := resource.ParseQuantity(exp.Values[0])
	if err != nil {
		return false, fmt.Errorf("value specified in property selector %s is not a valid resource quantity: %w", exp.Values[0], err)
	}
	c := q.Cmp(want)
	switch exp.Operator {
	case fleet.PropertySelectorEqualTo:
		return c == 0, nil
	case fleet.PropertySelectorNotEqualTo:
		return c != 0, nil
	case fleet.PropertySelectorGreaterThan:
		return c > 0, nil
	case fleet.PropertySelectorGreaterThanOrEqualTo:
		return c >= 0, nil
	case fleet.PropertySelectorLessThan:
		return c < 0, nil
	case fleet.PropertySelectorLessThanOrEqualTo:
		return c <= 0, nil
	default:
		return false, fmt.Errorf("invalid operator: %s", exp.Operator)
	}
}

// extremes are the lowest and highest value of each sorted property
// observed across the fleet; both nil when no cluster reports it.
type extremes map[string]struct{ min, max *resource.Quantity }

// observeExtremes reads, for every property a preferred term sorts by, its
// extremes over all members (KubeFleet's PreScore: every cluster of the
// fleet, not only the eligible ones).
func observeExtremes(policy *fleet.PlacementPolicy, members []*fleet.MemberCluster) (extremes, error) {
	out := extremes{}
	if policy == nil || policy.Affinity == nil || policy.Affinity.ClusterAffinity == nil {
		return out, nil
	}
	for _, pref := range policy.Affinity.ClusterAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		sorter := pref.Preference.PropertySorter
		if sorter == nil {
			continue
		}
		var lo, hi *resource.Quantity
		for _, m := range members {
			q, err := propertyValue(m, sorter.Name)
			if err != nil {
				return nil, err
			}
			if q == nil {
				continue
			}
			if lo == nil || q.Cmp(*lo) < 0 {
				lo = q
			}
			if hi == nil || q.Cmp(*hi) > 0 {
				hi = q
			}
		}
		out[sorter.Name] = struct{ min, max *resource.Quantity }{lo, hi}
	}
	return out, nil
}

// preferenceScore is one preferred term's score for m: its weight when the
// label selector matches and nothing is sorted; the interpolated weight
// when a property is sorted; 0 when the label selector does not match.
// (A preferred term's propertySelector is refused by validation, as
// KubeFleet's webhook refuses it, and its scheduler ignores it.)
func preferenceScore(pref fleet.PreferredClusterSelector, m *fleet.MemberCluster, ext extremes) (int32, error) {
	if pref.Preference.LabelSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(pref.Preference.LabelSelector)
		if err != nil {
			return 0, fmt.Errorf("failed to parse label selector: %w", err)
		}
		if !sel.Matches(labels.Set(m.Labels)) {
			return 0, nil
		}
	}
	sorter := pref.Preference.PropertySorter
	if sorter == nil {
		return pref.Weight, nil
	}
	return interpolateWeight(m, sorter.Name, sorter.SortOrder, pref.Weight, ext)
}

// interpolateWeight scales weight by where m's value lies between the
// fleet's extremes: Descending gives the maximum the full weight,
// Ascending the minimum; rounded to the nearest integer. All clusters equal
// (min == max) gives 0, as KubeFleet does.
func interpolateWeight(m *fleet.MemberCluster, property string, order fleet.PropertySortOrder, weight int32, ext extremes) (int32, error) {
	q, err := propertyValue(m, property)
	if err != nil {
		return 0, fmt.Errorf("failed to perform weight interpolation based on %s for cluster %s: %w", property, m.Name, err)
	}
	if q == nil {
		return 0, nil
	}
	mm, ok := ext[property]
	if !ok {
		return 0, fmt.Errorf("failed to look up extremums for property %s, no state is prepared", property)
	}
	if mm.min == nil || mm.max == nil {
		return 0, fmt.Errorf("extremums for property %s are not available, yet a reading can be found from cluster %s", property, m.Name)
	}
	f, lo, hi := q.AsApproximateFloat64(), mm.min.AsApproximateFloat64(), mm.max.AsApproximateFloat64()
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) || lo > hi || f < lo || f > hi {
		return 0, fmt.Errorf("cannot interpolate weight, observed value %v, observed min %v, observed max %v", f, lo, hi)
	}
	if lo == hi {
		return 0, nil
	}
	switch order {
	case fleet.Descending:
		return int32(math.Round((f - lo) / (hi - lo) * float64(weight))), nil
	case fleet.Ascending:
		return int32(math.Round((1 - (f-lo)/(hi-lo)) * float64(weight))), nil
	default:
		return 0, fmt.Errorf("cannot interpolate weight as sort order %s is invalid", order)
	}
}
