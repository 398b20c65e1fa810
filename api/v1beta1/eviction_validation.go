package v1beta1

import (
	"regexp"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validation of evictions and disruption budgets: their CRD schemas and CEL
// rules (upstream's markers on eviction_types.go and
// disruptionbudget_types.go) as plain Go, with the API server's messages.
// Upstream's webhooks, which also refuse an eviction of a PickFixed or
// deleting placement and a PickAll placement's budget with maxUnavailable or
// a percentage minAvailable, read the placement; gitfleet leaves those to
// the eviction controller, which reports them on the eviction's conditions
// (a budget of the kind blocks every eviction of the placement), as
// upstream's controller does when the webhook is off.

// Messages of the eviction and budget CEL rules, copied from upstream.
const (
	MsgEvictionPlacementNameImmutable = "The PlacementName field is immutable"
	MsgEvictionClusterNameImmutable   = "The ClusterName field is immutable"
	MsgBudgetBothSpecified            = "Both MaxUnavailable and MinAvailable cannot be specified"
	MsgBudgetIntOrPercent             = "If supplied value is String should match regex '^(100|[0-9]{1,2})%$' or If supplied value is Integer must be greater than or equal to 0"
)

// MaxEvictionNameLength bounds placementName and clusterName.
const MaxEvictionNameLength = 255

var budgetPercentRE = regexp.MustCompile(`^(100|[0-9]{1,2})%$`)

// ValidateEviction checks an eviction on its own.
func ValidateEviction(e *ClusterResourcePlacementEviction) field.ErrorList {
	errs := ValidateObjectMeta(KindClusterResourcePlacementEviction, &e.ObjectMeta)
	spec := field.NewPath("spec")
	for _, f := range []struct {
		name, value string
	}{{"placementName", e.Spec.PlacementName}, {"clusterName", e.Spec.ClusterName}} {
		switch p := spec.Child(f.name); {
		case f.value == "":
			errs = append(errs, field.Required(p, ""))
		case len(f.value) > MaxEvictionNameLength:
			errs = append(errs, field.TooLong(p, "", MaxEvictionNameLength))
		}
	}
	return errs
}

// ValidateEvictionUpdate refuses a change of an eviction's spec (both fields
// are immutable).
func ValidateEvictionUpdate(old, cur *ClusterResourcePlacementEviction) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if old.Spec.PlacementName != cur.Spec.PlacementName {
		errs = append(errs, field.Invalid(spec.Child("placementName"), cur.Spec.PlacementName, MsgEvictionPlacementNameImmutable))
	}
	if old.Spec.ClusterName != cur.Spec.ClusterName {
		errs = append(errs, field.Invalid(spec.Child("clusterName"), cur.Spec.ClusterName, MsgEvictionClusterNameImmutable))
	}
	return errs
}

// ValidateDisruptionBudget checks a disruption budget on its own.
func ValidateDisruptionBudget(b *ClusterResourcePlacementDisruptionBudget) field.ErrorList {
	errs := ValidateObjectMeta(KindClusterResourcePlacementDisruptionBudget, &b.ObjectMeta)
	spec := field.NewPath("spec")
	for _, f := range []struct {
		name  string
		value *intstr.IntOrString
	}{{"maxUnavailable", b.Spec.MaxUnavailable}, {"minAvailable", b.Spec.MinAvailable}} {
		if f.value != nil && !budgetValueValid(*f.value) {
			errs = append(errs, field.Invalid(spec.Child(f.name), intOrStringValue(*f.value), MsgBudgetIntOrPercent))
		}
	}
	if b.Spec.MaxUnavailable != nil && b.Spec.MinAvailable != nil {
		// The API server names no value for an object's rule.
		errs = append(errs, field.Invalid(spec, field.OmitValueType{}, MsgBudgetBothSpecified))
	}
	return errs
}

// intOrStringValue is the value as the API server prints it: a string
// quoted, an integer bare.
func intOrStringValue(v intstr.IntOrString) any {
	if v.Type == intstr.String {
		return v.StrVal
	}
	return v.IntVal
}

// budgetValueValid is the CEL rule on maxUnavailable and minAvailable.
func budgetValueValid(v intstr.IntOrString) bool {
	if v.Type == intstr.String {
		return budgetPercentRE.MatchString(v.StrVal)
	}
	return v.IntVal >= 0
}
