package v1beta1

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Fields of KubeFleet's placement API that gitfleet accepts only with the
// value that says what gitfleet does anyway: the schema is KubeFleet's (so
// a KubeFleet manifest that leaves them at their defaults works unchanged),
// and any other value is refused, by admission here and by the CRDs' CEL
// rules (internal/crd), with these messages, never silently ignored.
const (
	MsgStatusReportingScopeUnsupported = "gitfleet does not support statusReportingScope NamespaceAccessible; only ClusterScopeOnly"
	MsgDeleteStrategyUnsupported       = "gitfleet does not support deleteStrategy.propagationPolicy Abandon; only Delete"
	MsgReportBackStrategyUnsupported   = "gitfleet does not support reportBackStrategy.type Mirror; only Disabled"
	MsgSelectionScopeUnsupported       = "gitfleet does not support selectionScope NamespaceWithResourceSelectors; only NamespaceOnly and NamespaceWithResources"
)

// StatusReportingScope says where a placement's status is reported:
// KubeFleet can mirror a ClusterResourcePlacement's status into a
// ClusterResourcePlacementStatus in the selected namespace
// (NamespaceAccessible); gitfleet reports it on the placement alone.
type StatusReportingScope string

const (
	ClusterScopeOnly    StatusReportingScope = "ClusterScopeOnly"
	NamespaceAccessible StatusReportingScope = "NamespaceAccessible"
)

// DeleteStrategy says what deleting a placement does to the placed
// resources: KubeFleet can leave them on the members (Abandon); gitfleet
// deletes them (Delete).
type DeleteStrategy struct {
	// +kubebuilder:validation:Enum=Abandon;Delete
	// +kubebuilder:default=Delete
	// +kubebuilder:validation:Optional
	PropagationPolicy DeletePropagationPolicy `json:"propagationPolicy,omitempty"`
}

// DeletePropagationPolicy is a DeleteStrategy's choice.
type DeletePropagationPolicy string

const (
	DeletePropagationPolicyAbandon DeletePropagationPolicy = "Abandon"
	DeletePropagationPolicyDelete  DeletePropagationPolicy = "Delete"
)

// ReportBackStrategy says whether members' object status is mirrored back
// to the hub (Mirror); gitfleet does not (Disabled).
type ReportBackStrategy struct {
	// +kubebuilder:default=Disabled
	// +kubebuilder:validation:Enum=Disabled;Mirror
	// +kubebuilder:validation:Required
	Type ReportBackStrategyType `json:"type"`
	// +kubebuilder:validation:Enum=OriginalResource;WorkAPI
	// +kubebuilder:validation:Optional
	Destination *ReportBackDestination `json:"destination,omitempty"`
}

// ReportBackStrategyType and ReportBackDestination are KubeFleet's values.
type (
	ReportBackStrategyType string
	ReportBackDestination  string
)

const (
	ReportBackStrategyTypeDisabled        ReportBackStrategyType = "Disabled"
	ReportBackStrategyTypeMirror          ReportBackStrategyType = "Mirror"
	ReportBackDestinationOriginalResource ReportBackDestination  = "OriginalResource"
	ReportBackDestinationWorkAPI          ReportBackDestination  = "WorkAPI"
)

// validateUnsupported refuses the values of the fields above gitfleet does
// not act on, with the API server's wording of the CRDs' CEL rules (which
// print no value), and values outside the CRDs' enums as the API server
// does.
func validateUnsupported(spec *PlacementSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	check := func(path *field.Path, value string, supported, known []string, msg string) {
		switch {
		case value == "" || value == supported[0]:
		case slices.Contains(known, value):
			errs = append(errs, field.Invalid(path, field.OmitValueType{}, msg))
		default:
			errs = append(errs, field.NotSupported(path, value, known))
		}
	}
	check(p.Child("statusReportingScope"), string(spec.StatusReportingScope),
		[]string{string(ClusterScopeOnly)}, []string{string(ClusterScopeOnly), string(NamespaceAccessible)}, MsgStatusReportingScopeUnsupported)
	st := p.Child("strategy")
	if d := spec.Strategy.DeleteStrategy; d != nil {
		check(st.Child("deleteStrategy", "propagationPolicy"), string(d.PropagationPolicy), []string{string(DeletePropagationPolicyDelete)},
			[]string{string(DeletePropagationPolicyAbandon), string(DeletePropagationPolicyDelete)}, MsgDeleteStrategyUnsupported)
	}
	if r := spec.Strategy.ReportBackStrategy; r != nil {
		check(st.Child("reportBackStrategy", "type"), string(r.Type), []string{string(ReportBackStrategyTypeDisabled)},
			[]string{string(ReportBackStrategyTypeDisabled), string(ReportBackStrategyTypeMirror)}, MsgReportBackStrategyUnsupported)
	}
	return errs
}
