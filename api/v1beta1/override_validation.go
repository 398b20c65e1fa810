package v1beta1

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Defaulting and validation of overrides: the override CRD schemas (enums,
// item counts, the CEL rule on a ClusterResourceOverride's placement scope)
// and KubeFleet's override webhooks (pkg/utils/validator), whose messages
// are kept word for word, printed values included. The webhook messages
// already name the bad value, so they are reported as "Invalid value: <message>".

// MsgCROPlacementNamespaced is the CEL rule's message.
const MsgCROPlacementNamespaced = "clusterResourceOverride placement reference cannot be Namespaced scope"

// NamespaceWithResourceSelectors is the third selectionScope upstream's
// schema accepts; overrides ignore selectionScope, so they accept it too.
const NamespaceWithResourceSelectors SelectionScope = "NamespaceWithResourceSelectors"

// SetDefaultsClusterResourceOverride applies the CRD defaults: placement
// scope Cluster, selectionScope NamespaceWithResources, overrideType
// JSONPatch. Defaults matter beyond display: upstream's webhook prints
// selectors with them.
func SetDefaultsClusterResourceOverride(o *ClusterResourceOverride) {
	setDefaultsPlacementRef(o.Spec.Placement)
	for i := range o.Spec.ClusterResourceSelectors {
		if o.Spec.ClusterResourceSelectors[i].SelectionScope == "" {
			o.Spec.ClusterResourceSelectors[i].SelectionScope = NamespaceWithResources
		}
	}
	setDefaultsOverridePolicy(o.Spec.Policy)
}

// SetDefaultsResourceOverride applies the CRD defaults (placement scope
// Cluster, overrideType JSONPatch).
func SetDefaultsResourceOverride(o *ResourceOverride) {
	setDefaultsPlacementRef(o.Spec.Placement)
	setDefaultsOverridePolicy(o.Spec.Policy)
}

func setDefaultsPlacementRef(p *PlacementRef) {
	if p != nil && p.Scope == "" {
		p.Scope = ClusterScoped
	}
}

func setDefaultsOverridePolicy(p *OverridePolicy) {
	if p == nil {
		return
	}
	for i := range p.OverrideRules {
		if p.OverrideRules[i].OverrideType == "" {
			p.OverrideRules[i].OverrideType = JSONPatchOverrideType
		}
	}
}

// webhookErr reports one of the webhook's messages, which print the value
// themselves.
func webhookErr(p *field.Path, msg string) *field.Error {
	return field.Invalid(p, field.OmitValueType{}, msg)
}

// ValidateClusterResourceOverride checks one ClusterResourceOverride by
// itself; ValidateOverrideSelections checks it against the others.
func ValidateClusterResourceOverride(o *ClusterResourceOverride) field.ErrorList {
	errs := ValidateObjectMeta(o.Kind, &o.ObjectMeta)
	spec := field.NewPath("spec")
	if pl := o.Spec.Placement; pl != nil {
		// A Namespaced scope is the CRD's CEL rule (MsgCROPlacementNamespaced).
		errs = append(errs, validatePlacementRef(pl, spec.Child("placement"))...)
	}
	sp := spec.Child("clusterResourceSelectors")
	errs = append(errs, validateItemCount(sp, len(o.Spec.ClusterResourceSelectors), MaxOverrideSelectors)...)
	seen := map[ResourceSelectorTerm]bool{}
	for i, s := range o.Spec.ClusterResourceSelectors {
		p := sp.Index(i)
		if s.Kind == "" {
			errs = append(errs, field.Required(p.Child("kind"), ""))
		}
		if s.Version == "" {
			errs = append(errs, field.Required(p.Child("version"), ""))
		}
		switch s.SelectionScope {
		case "", NamespaceOnly, NamespaceWithResources, NamespaceWithResourceSelectors:
		default:
			errs = append(errs, field.NotSupported(p.Child("selectionScope"), s.SelectionScope,
				[]SelectionScope{NamespaceOnly, NamespaceWithResources, NamespaceWithResourceSelectors}))
		}
		switch {
		case s.LabelSelector != nil:
			errs = append(errs, webhookErr(p.Child("labelSelector"), fmt.Sprintf("label selector is not supported for resource selection %+v", s)))
			continue
		case s.Name == "":
			errs = append(errs, field.Required(p.Child("name"), fmt.Sprintf("resource name is required for resource selection %+v", s)))
			continue
		}
		if seen[s] {
			errs = append(errs, webhookErr(p, fmt.Sprintf("resource selector %+v already exists, and must be unique", s)))
		}
		seen[s] = true
	}
	return append(errs, validateOverridePolicy(o.Spec.Policy, spec.Child("policy"))...)
}

// ValidateResourceOverride checks one ResourceOverride by itself.
func ValidateResourceOverride(o *ResourceOverride) field.ErrorList {
	errs := ValidateObjectMeta(o.Kind, &o.ObjectMeta)
	spec := field.NewPath("spec")
	if pl := o.Spec.Placement; pl != nil {
		errs = append(errs, validatePlacementRef(pl, spec.Child("placement"))...)
	}
	sp := spec.Child("resourceSelectors")
	errs = append(errs, validateItemCount(sp, len(o.Spec.ResourceSelectors), MaxOverrideSelectors)...)
	seen := map[ResourceSelector]bool{}
	for i, s := range o.Spec.ResourceSelectors {
		p := sp.Index(i)
		for _, f := range []struct{ name, value string }{{"version", s.Version}, {"kind", s.Kind}, {"name", s.Name}} {
			if f.value == "" {
				errs = append(errs, field.Required(p.Child(f.name), ""))
			}
		}
		if seen[s] {
			errs = append(errs, webhookErr(p, fmt.Sprintf("resource selector %+v already exists, and must be unique", s)))
		}
		seen[s] = true
	}
	return append(errs, validateOverridePolicy(o.Spec.Policy, spec.Child("policy"))...)
}

func validatePlacementRef(pl *PlacementRef, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if pl.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	}
	switch pl.Scope {
	case "", ClusterScoped, NamespaceScoped:
	default:
		errs = append(errs, field.NotSupported(p.Child("scope"), pl.Scope, []ResourceScope{ClusterScoped, NamespaceScoped}))
	}
	return errs
}

// validateItemCount is the schema's minItems=1 and maxItems.
func validateItemCount(p *field.Path, n, limit int) field.ErrorList {
	switch {
	case n == 0:
		return field.ErrorList{field.Required(p, "")}
	case n > limit:
		return field.ErrorList{field.TooMany(p, n, limit)}
	}
	return nil
}

func validateOverridePolicy(policy *OverridePolicy, p *field.Path) field.ErrorList {
	if policy == nil {
		return field.ErrorList{field.Required(p, "")}
	}
	rp := p.Child("overrideRules")
	errs := validateItemCount(rp, len(policy.OverrideRules), MaxOverrideRules)
	for i, rule := range policy.OverrideRules {
		errs = append(errs, validateOverrideRule(rule, rp.Index(i))...)
	}
	return errs
}

func validateOverrideRule(rule OverrideRule, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if cs := rule.ClusterSelector; cs != nil {
		tp := p.Child("clusterSelector", "clusterSelectorTerms")
		errs = append(errs, requireTerms(cs, tp)...)
		if len(cs.ClusterSelectorTerms) > MaxOverrideSelectorTerms {
			errs = append(errs, field.TooMany(tp, len(cs.ClusterSelectorTerms), MaxOverrideSelectorTerms))
		}
		for i, term := range cs.ClusterSelectorTerms {
			if term.PropertySelector != nil || term.PropertySorter != nil {
				errs = append(errs, webhookErr(tp.Index(i), fmt.Sprintf("invalid clusterSelector %s: only labelSelector is supported", upstreamTerm(term))))
				continue
			}
			if term.LabelSelector == nil {
				errs = append(errs, webhookErr(tp.Index(i), fmt.Sprintf("invalid clusterSelector %s: labelSelector is required", upstreamTerm(term))))
				continue
			}
			if _, err := metav1.LabelSelectorAsSelector(term.LabelSelector); err != nil {
				errs = append(errs, webhookErr(tp.Index(i).Child("labelSelector"),
					fmt.Sprintf("the labelSelector in cluster selector %+v is invalid: %v", term.LabelSelector, err)))
			}
		}
	}
	pp := p.Child("jsonPatchOverrides")
	if len(rule.JSONPatchOverrides) > MaxJSONPatchOverrides {
		errs = append(errs, field.TooMany(pp, len(rule.JSONPatchOverrides), MaxJSONPatchOverrides))
	}
	switch rule.OverrideType {
	case DeleteOverrideType:
		if len(rule.JSONPatchOverrides) != 0 {
			errs = append(errs, field.Forbidden(pp, "invalid JSONPatchOverrides: JSONPatchOverrides cannot be set when the override type is Delete"))
		}
	case JSONPatchOverrideType, "":
		if len(rule.JSONPatchOverrides) == 0 {
			errs = append(errs, field.Required(pp, "invalid JSONPatchOverrides: JSONPatchOverrides cannot be empty"))
		}
		for i, patch := range rule.JSONPatchOverrides {
			errs = append(errs, validateJSONPatchOverride(patch, pp.Index(i))...)
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("overrideType"), rule.OverrideType,
			[]OverrideType{JSONPatchOverrideType, DeleteOverrideType}))
	}
	return errs
}

// upstreamTerm prints a cluster selector term as upstream's %+v does,
// except that a property selector or sorter is printed by value where
// upstream prints its memory address.
func upstreamTerm(t ClusterSelectorTerm) string {
	ptr := func(v any, isNil bool) string {
		if isNil {
			return "<nil>"
		}
		return fmt.Sprintf("%+v", v)
	}
	return fmt.Sprintf("{LabelSelector:%v PropertySelector:%s PropertySorter:%s}", t.LabelSelector,
		ptr(t.PropertySelector, t.PropertySelector == nil), ptr(t.PropertySorter, t.PropertySorter == nil))
}

func validateJSONPatchOverride(patch JSONPatchOverride, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch patch.Operator {
	case JSONPatchOverrideOpAdd, JSONPatchOverrideOpRemove, JSONPatchOverrideOpReplace:
	case "":
		errs = append(errs, field.Required(p.Child("op"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("op"), patch.Operator,
			[]JSONPatchOverrideOperator{JSONPatchOverrideOpAdd, JSONPatchOverrideOpRemove, JSONPatchOverrideOpReplace}))
	}
	if msg := jsonPatchPathProblem(patch.Path); msg != "" {
		errs = append(errs, webhookErr(p.Child("path"), fmt.Sprintf("invalid JSONPatchOverride %s: %s", patch, msg)))
	}
	if patch.Operator == JSONPatchOverrideOpRemove && len(patch.Value.Raw) != 0 {
		errs = append(errs, webhookErr(p.Child("value"), fmt.Sprintf("invalid JSONPatchOverride %s: remove operation cannot have value", patch)))
	}
	return errs
}

// jsonPatchPathProblem is upstream's rule on patch paths: a JSON pointer
// that leaves kind, apiVersion, status and metadata (other than labels and
// annotations) alone, without empty segments.
func jsonPatchPathProblem(path string) string {
	if path == "" {
		return "path cannot be empty"
	}
	if !strings.HasPrefix(path, "/") {
		return "path must start with /"
	}
	parts := strings.Split(path, "/")[1:]
	switch parts[0] {
	case "kind", "apiVersion":
		return "cannot override typeMeta fields"
	case "metadata":
		if len(parts) == 1 {
			return "cannot override field metadata"
		} else if parts[1] != "annotations" && parts[1] != "labels" {
			return "cannot override metadata fields except annotations and labels"
		}
	case "status":
		return "cannot override status fields"
	}
	for _, part := range parts {
		if strings.TrimSpace(part) == "" {
			return "path cannot contain empty string"
		}
	}
	return ""
}

// ValidateOverrideSelections checks the overrides of one tree against each
// other, as upstream's webhooks check a new override against the existing
// ones: a resource may be selected by one ClusterResourceOverride and one
// ResourceOverride per namespace at most, and there are at most 100
// ClusterResourceOverrides and 100 ResourceOverrides per namespace. In Git
// every override arrives at once, so each one of a conflicting pair is
// reported (naming the other), and the overrides past the limit in name
// order. The result maps an override's index in cros or ros to its errors.
func ValidateOverrideSelections(cros []*ClusterResourceOverride, ros []*ResourceOverride) (croErrs, roErrs map[int]field.ErrorList) {
	croErrs, roErrs = map[int]field.ErrorList{}, map[int]field.ErrorList{}
	sp := field.NewPath("spec", "clusterResourceSelectors")
	croNames := make([]string, len(cros))
	croSelectors := make([][]ResourceSelectorTerm, len(cros))
	for i, o := range cros {
		croNames[i], croSelectors[i] = o.Name, o.Spec.ClusterResourceSelectors
	}
	for i, errs := range selectedTwice(croNames, croSelectors, sp) {
		croErrs[i] = append(croErrs[i], errs...)
	}
	for i := range limitExceeded(croNames, MaxClusterResourceOverrides) {
		croErrs[i] = append(croErrs[i], field.Forbidden(field.NewPath("metadata", "name"),
			"clusterResourceOverride limit has been reached: at most 100 cluster resources can be created."))
	}

	byNamespace := map[string][]int{}
	for i, o := range ros {
		byNamespace[o.Namespace] = append(byNamespace[o.Namespace], i)
	}
	rp := field.NewPath("spec", "resourceSelectors")
	for _, idx := range byNamespace {
		names := make([]string, len(idx))
		selectors := make([][]ResourceSelector, len(idx))
		for j, i := range idx {
			names[j], selectors[j] = ros[i].Name, ros[i].Spec.ResourceSelectors
		}
		for j, errs := range selectedTwice(names, selectors, rp) {
			roErrs[idx[j]] = append(roErrs[idx[j]], errs...)
		}
		for j := range limitExceeded(names, MaxResourceOverrides) {
			roErrs[idx[j]] = append(roErrs[idx[j]], field.Forbidden(field.NewPath("metadata", "name"),
				"resourceOverride limit has been reached: at most 100 resources can be created."))
		}
	}
	return croErrs, roErrs
}

// selectedTwice reports, for each override (by index), its selectors that
// another override also has, with upstream's message. Selectors upstream
// refuses by themselves (label selectors, no name) are not compared.
func selectedTwice[S comparable](names []string, selectors [][]S, p *field.Path) map[int]field.ErrorList {
	owners := map[S][]int{}
	for i, sels := range selectors {
		for _, s := range sels {
			if term, ok := any(s).(ResourceSelectorTerm); ok && (term.LabelSelector != nil || term.Name == "") {
				continue
			}
			if o := owners[s]; len(o) == 0 || o[len(o)-1] != i {
				owners[s] = append(o, i)
			}
		}
	}
	out := map[int]field.ErrorList{}
	for i, sels := range selectors {
		for j, s := range sels {
			for _, other := range owners[s] {
				if other == i || names[other] == names[i] {
					continue
				}
				out[i] = append(out[i], webhookErr(p.Index(j), fmt.Sprintf(
					"invalid resource selector %+v: the resource has been selected by both %v and %v, which is not supported", s, names[i], names[other])))
			}
		}
	}
	return out
}

// limitExceeded returns the indexes of the names past the first limit in
// name order.
func limitExceeded(names []string, limit int) map[int]bool {
	out := map[int]bool{}
	if len(names) <= limit {
		return out
	}
	order := make([]int, len(names))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return names[order[a]] < names[order[b]] })
	for _, i := range order[limit:] {
		out[i] = true
	}
	return out
}
