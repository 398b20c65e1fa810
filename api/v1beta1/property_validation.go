package v1beta1

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validation of property selectors and sorters: the CRD schema (required
// fields, at most one value, the sort order enum) and KubeFleet's placement
// webhook (pkg/utils/validator/placement.go: a selector only in required
// terms, a sorter only in preferred ones, property names, operators,
// quantities, requirements that exclude every value), with its messages.

// MaxPropertySelectorValues is the CRD's maxItems of a requirement's values.
const MaxPropertySelectorValues = 1

// Webhook messages of misplaced property terms.
const (
	MsgPropertySorterInRequired    = "PropertySorter is not allowed for RequiredDuringSchedulingIgnoredDuringExecution affinity"
	MsgPropertySelectorInPreferred = "PropertySelector is not allowed for PreferredDuringSchedulingIgnoredDuringExecution affinity"
)

// PropertySelectorOperators are the operators KubeFleet supports, each
// with exactly one value.
var PropertySelectorOperators = []PropertySelectorOperator{
	PropertySelectorGreaterThan, PropertySelectorGreaterThanOrEqualTo, PropertySelectorEqualTo,
	PropertySelectorNotEqualTo, PropertySelectorLessThan, PropertySelectorLessThanOrEqualTo,
}

// resourceCapacityTypes are the capacity types of resource property names,
// sorted as upstream prints them.
var resourceCapacityTypes = []string{AllocatableCapacityName, AvailableCapacityName, TotalCapacityName}

// validateRequiredPropertyTerm checks the property fields of a required
// cluster selector term at p.
func validateRequiredPropertyTerm(t ClusterSelectorTerm, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.PropertySorter != nil {
		if schema := validatePropertySorterSchema(t.PropertySorter, p.Child("propertySorter")); len(schema) > 0 {
			errs = append(errs, schema...) // the API server refuses before the webhook sees it
		} else {
			errs = append(errs, webhookErr(p.Child("propertySorter"), MsgPropertySorterInRequired))
		}
	}
	if t.PropertySelector != nil {
		errs = append(errs, validatePropertySelector(t.PropertySelector, p.Child("propertySelector"))...)
	}
	return errs
}

// validatePreferredPropertyTerm checks the property fields of a preferred
// term's preference at p.
func validatePreferredPropertyTerm(t ClusterSelectorTerm, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.PropertySelector != nil {
		if schema := validatePropertySelectorSchema(t.PropertySelector, p.Child("propertySelector")); len(schema) > 0 {
			errs = append(errs, schema...)
		} else {
			errs = append(errs, webhookErr(p.Child("propertySelector"), MsgPropertySelectorInPreferred))
		}
	}
	if s := t.PropertySorter; s != nil {
		sp := p.Child("propertySorter")
		if schema := validatePropertySorterSchema(s, sp); len(schema) > 0 {
			return append(errs, schema...)
		}
		if msg := propertyNameProblem(s.Name); msg != "" {
			errs = append(errs, webhookErr(sp.Child("name"), msg))
		}
	}
	return errs
}

// validatePropertySorterSchema is what the CRD schema refuses.
func validatePropertySorterSchema(s *PropertySorter, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	}
	switch s.SortOrder {
	case Ascending, Descending:
	case "":
		errs = append(errs, field.Required(p.Child("sortOrder"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("sortOrder"), s.SortOrder, []PropertySortOrder{Ascending, Descending}))
	}
	return errs
}

// validatePropertySelectorSchema is what the CRD schema refuses.
func validatePropertySelectorSchema(s *PropertySelector, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.MatchExpressions == nil {
		return field.ErrorList{field.Required(p.Child("matchExpressions"), "")}
	}
	for i, req := range s.MatchExpressions {
		rp := p.Child("matchExpressions").Index(i)
		if req.Name == "" {
			errs = append(errs, field.Required(rp.Child("name"), ""))
		}
		if req.Operator == "" {
			errs = append(errs, field.Required(rp.Child("operator"), ""))
		}
		switch {
		case req.Values == nil:
			errs = append(errs, field.Required(rp.Child("values"), ""))
		case len(req.Values) > MaxPropertySelectorValues:
			errs = append(errs, field.TooMany(rp.Child("values"), len(req.Values), MaxPropertySelectorValues))
		}
	}
	return errs
}

// validatePropertySelector is the schema, then the webhook's rules on
// each requirement and on the requirements of one property together.
func validatePropertySelector(s *PropertySelector, p *field.Path) field.ErrorList {
	if errs := validatePropertySelectorSchema(s, p); len(errs) > 0 {
		return errs // the API server refuses before the webhook sees it
	}
	var errs field.ErrorList
	byName := map[string][]PropertySelectorRequirement{}
	for i, req := range s.MatchExpressions {
		rp := p.Child("matchExpressions").Index(i)
		if msg := propertyNameProblem(req.Name); msg != "" {
			errs = append(errs, webhookErr(rp.Child("name"), fmt.Sprintf("invalid property name %s: %s", req.Name, msg)))
		}
		if msg := operatorAndValuesProblem(req.Operator, req.Values); msg != "" {
			errs = append(errs, webhookErr(rp, fmt.Sprintf("invalid requirement on property %s: %s", req.Name, msg)))
		}
		byName[req.Name] = append(byName[req.Name], req)
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if msg := requirementsConflict(byName[n]); msg != "" {
			errs = append(errs, webhookErr(p.Child("matchExpressions"), fmt.Sprintf("inconsistent requirements on property %s: %s", n, msg)))
		}
	}
	return errs
}

// propertyNameProblem is upstream's validateName: a resource property is
// [PREFIX]/[CAPACITY_TYPE]-[RESOURCE_NAME], any other an optionally
// prefixed qualified name.
func propertyNameProblem(name string) string {
	if rest, ok := strings.CutPrefix(name, ResourcePropertyNamePrefix); ok {
		segs := strings.SplitN(rest, "-", 2)
		if len(segs) != 2 {
			return fmt.Sprintf("invalid resource property name %s, expected format is [PREFIX]/[CAPACITY_TYPE]-[RESOURCE_NAME]", name)
		}
		known := false
		for _, c := range resourceCapacityTypes {
			known = known || segs[0] == c
		}
		if !known {
			return fmt.Sprintf("invalid capacity type in resource property name %s, supported values are %+v", name, resourceCapacityTypes)
		}
		if errs := validation.IsQualifiedName(name); errs != nil {
			return fmt.Sprintf("property name %s is not valid: %s", name, strings.Join(errs, "; "))
		}
		return ""
	}
	segs := strings.Split(name, "/")
	if len(segs) <= 1 {
		if errs := validation.IsQualifiedName(name); errs != nil {
			return fmt.Sprintf("property name %s is not valid: %s", name, strings.Join(errs, "; "))
		}
		return ""
	}
	prefix := segs[0]
	sub, qual := validation.IsDNS1123Subdomain(prefix), validation.IsQualifiedName(prefix)
	if len(sub) != 0 && len(qual) != 0 {
		return fmt.Sprintf("property name first segment %s is not valid: it is neither a valid DNS subdomain (%s) nor a valid qualified name (%s)",
			prefix, strings.Join(sub, "; "), strings.Join(qual, "; "))
	}
	for _, seg := range segs[1:] {
		if errs := validation.IsQualifiedName(seg); errs != nil {
			return fmt.Sprintf("property name segment %s is not valid: %s", seg, strings.Join(errs, "; "))
		}
	}
	return ""
}

func operatorAndValuesProblem(op PropertySelectorOperator, values []string) string {
	supported := false
	for _, o := range PropertySelectorOperators {
		supported = supported || op == o
	}
	if !supported {
		return fmt.Sprintf("unsupported operator %s", op)
	}
	if len(values) != 1 {
		return fmt.Sprintf("operator %s requires exactly one value, got %d", op, len(values))
	}
	if _, err := resource.ParseQuantity(values[0]); err != nil {
		return fmt.Sprintf("value %q is not a valid resource.Quantity: %v", values[0], err)
	}
	return ""
}

// bound is a lower or upper bound of a property; strict for Gt and Lt.
type bound struct {
	q      resource.Quantity
	strict bool
}

// requirementsConflict reports requirements on one property that no value
// satisfies: two different Eq, Eq and Ne on one value, bounds that exclude
// every value, an Eq outside the bounds. Malformed requirements are left
// to operatorAndValuesProblem.
func requirementsConflict(reqs []PropertySelectorRequirement) string {
	if len(reqs) < 2 {
		return ""
	}
	var lower, upper *bound
	var eq *resource.Quantity
	var ne []resource.Quantity
	for _, req := range reqs {
		if operatorAndValuesProblem(req.Operator, req.Values) != "" {
			continue
		}
		q := resource.MustParse(req.Values[0])
		switch req.Operator {
		case PropertySelectorGreaterThan, PropertySelectorGreaterThanOrEqualTo:
			b := bound{q, req.Operator == PropertySelectorGreaterThan}
			if lower == nil || tighter(b, *lower, 1) {
				lower = &b
			}
		case PropertySelectorLessThan, PropertySelectorLessThanOrEqualTo:
			b := bound{q, req.Operator == PropertySelectorLessThan}
			if upper == nil || tighter(b, *upper, -1) {
				upper = &b
			}
		case PropertySelectorEqualTo:
			if eq != nil && eq.Cmp(q) != 0 {
				return fmt.Sprintf("conflicting Eq values %s and %s", eq.String(), q.String())
			}
			eq = &q
		case PropertySelectorNotEqualTo:
			ne = append(ne, q)
		}
	}
	if eq != nil {
		for _, v := range ne {
			if eq.Cmp(v) == 0 {
				return fmt.Sprintf("conflicting Eq and Ne on same value %s", eq.String())
			}
		}
	}
	if lower != nil && upper != nil {
		c := lower.q.Cmp(upper.q)
		if c > 0 || (c == 0 && (lower.strict || upper.strict)) {
			return fmt.Sprintf("lower bound (%s) and upper bound (%s) exclude all values", lower.q.String(), upper.q.String())
		}
	}
	if eq != nil && lower != nil {
		if c := eq.Cmp(lower.q); c < 0 || (c == 0 && lower.strict) {
			return fmt.Sprintf("eq value %s violates lower bound %s", eq.String(), lower.q.String())
		}
	}
	if eq != nil && upper != nil {
		if c := eq.Cmp(upper.q); c > 0 || (c == 0 && upper.strict) {
			return fmt.Sprintf("eq value %s violates upper bound %s", eq.String(), upper.q.String())
		}
	}
	return ""
}

// tighter reports whether a restricts more than b: further in direction
// (1 for a lower bound, -1 for an upper one), or strict at the same value.
func tighter(a, b bound, direction int) bool {
	if c := a.q.Cmp(b.q); c != 0 {
		return c == direction
	}
	return a.strict && !b.strict
}

// validatePropertyAnnotations checks the annotations a simulated member
// reports as properties: each value a quantity, each resource property
// name of the form the scheduler reads.
func validatePropertyAnnotations(annotations map[string]string) field.ErrorList {
	var errs field.ErrorList
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		if IsPropertyName(k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	p := field.NewPath("metadata", "annotations")
	for _, k := range keys {
		if msg := propertyNameProblem(k); msg != "" {
			errs = append(errs, field.Invalid(p.Key(k), annotations[k], msg))
			continue
		}
		if _, err := resource.ParseQuantity(annotations[k]); err != nil {
			errs = append(errs, field.Invalid(p.Key(k), annotations[k], "must be a Kubernetes quantity such as 3, 7.5 or 64Gi"))
		}
	}
	return errs
}
