package v1beta1

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Evictions and disruption budgets (upstream's eviction_types.go and
// disruptionbudget_types.go): a person removes a placement's resources from
// one member cluster with a ClusterResourcePlacementEviction, which the
// engine executes once, and only when the placement's
// ClusterResourcePlacementDisruptionBudget (same name as the placement)
// allows it. KubeFleet has no namespaced twins of these kinds.

// Kinds of the eviction family.
const (
	KindClusterResourcePlacementEviction         = "ClusterResourcePlacementEviction"
	KindClusterResourcePlacementDisruptionBudget = "ClusterResourcePlacementDisruptionBudget"
)

// ClusterResourcePlacementEviction is an eviction attempt on a specific placement from
// a ClusterResourcePlacement object; one may use this API to force the removal of specific
// resources from a cluster.
//
// An eviction is a voluntary disruption; its execution is subject to the disruption budget
// linked with the target ClusterResourcePlacement object (if present).
//
// Beware that an eviction alone does not guarantee that a placement will not re-appear; i.e.,
// after an eviction, the Fleet scheduler might still pick the previous target cluster for
// placement. To prevent this, considering adding proper taints to the target cluster before running
// an eviction that will exclude it from future placements; this is especially true in scenarios
// where one would like to perform a cluster replacement.
//
// For safety reasons, Fleet will only execute an eviction once; the spec in this object is immutable,
// and once executed, the object will be ignored after. To trigger another eviction attempt on the
// same placement from the same ClusterResourcePlacement object, one must re-create (delete and
// create) the same Eviction object. Note also that an Eviction object will be
// ignored once it is deemed invalid (e.g., such an object might be targeting a CRP object or
// a placement that does not exist yet), even if it does become valid later
// (e.g., the CRP object or the placement appears later). To fix the situation, re-create the
// Eviction object.
//
// Note: Eviction of resources from a cluster propagated by a PickFixed CRP is not allowed.
// If the user wants to remove resources from a cluster propagated by a PickFixed CRP simply
// remove the cluster name from cluster names field from the CRP spec.
//
// Executed evictions might be kept around for a while for auditing purposes; the Fleet controllers might
// have a TTL set up for such objects and will garbage collect them automatically. For further
// information, see the Fleet documentation.
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type ClusterResourcePlacementEviction struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the ClusterResourcePlacementEviction.
	//
	// Note that all fields in the spec are immutable.
	// +required
	Spec PlacementEvictionSpec `json:"spec"`

	// Status is the observed state of the ClusterResourcePlacementEviction.
	// +optional
	Status PlacementEvictionStatus `json:"status,omitempty"`
}

// PlacementEvictionSpec is the desired state of the parent PlacementEviction.
type PlacementEvictionSpec struct {
	// PlacementName is the name of the Placement object which
	// the Eviction object targets.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="The PlacementName field is immutable"
	// +kubebuilder:validation:MaxLength=255
	PlacementName string `json:"placementName"`

	// ClusterName is the name of the cluster that the Eviction object targets.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="The ClusterName field is immutable"
	// +kubebuilder:validation:MaxLength=255
	ClusterName string `json:"clusterName"`
}

// PlacementEvictionStatus is the observed state of the parent PlacementEviction.
type PlacementEvictionStatus struct {
	// Conditions is the list of currently observed conditions for the
	// PlacementEviction object.
	//
	// Available condition types include:
	// * Valid: whether the Eviction object is valid, i.e., it targets at a valid placement.
	// * Executed: whether the Eviction object has been executed.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PlacementEvictionConditionType identifies a specific condition of the
// PlacementEviction.
type PlacementEvictionConditionType string

const (
	// PlacementEvictionConditionTypeValid: False is terminal, the eviction
	// is not evaluated again even if its target appears later.
	PlacementEvictionConditionTypeValid PlacementEvictionConditionType = "Valid"
	// PlacementEvictionConditionTypeExecuted: either status is terminal, an
	// eviction is executed (or refused by the budget) once.
	PlacementEvictionConditionTypeExecuted PlacementEvictionConditionType = "Executed"
)

// Reasons and messages of the eviction's conditions (upstream's
// pkg/utils/condition/reason.go), copied exactly.
const (
	EvictionValidReason       = "ClusterResourcePlacementEvictionValid"
	EvictionInvalidReason     = "ClusterResourcePlacementEvictionInvalid"
	EvictionExecutedReason    = "ClusterResourcePlacementEvictionExecuted"
	EvictionNotExecutedReason = "ClusterResourcePlacementEvictionNotExecuted"

	EvictionInvalidMissingCRPMessage                = "Failed to find ClusterResourcePlacement targeted by eviction"
	EvictionInvalidDeletingCRPMessage               = "Found deleting ClusterResourcePlacement targeted by eviction"
	EvictionInvalidPickFixedCRPMessage              = "Found ClusterResourcePlacement with PickFixed placement type targeted by eviction"
	EvictionInvalidMissingCRBMessage                = "Failed to find scheduler decision for placement in cluster targeted by eviction"
	EvictionInvalidMultipleCRBMessage               = "Found more than one scheduler decision for placement in cluster targeted by eviction"
	EvictionValidMessage                            = "Eviction is valid"
	EvictionAllowedNoPDBMessage                     = "Eviction is allowed, no ClusterResourcePlacementDisruptionBudget specified"
	EvictionAllowedPlacementRemovedMessage          = "Eviction is allowed, resources propagated by placement is currently being removed from cluster targeted by eviction"
	EvictionAllowedPlacementFailedMessage           = "Eviction is allowed, placement has failed"
	EvictionBlockedMisconfiguredPDBSpecifiedMessage = "Eviction is blocked by misconfigured ClusterResourcePlacementDisruptionBudget, either MaxUnavailable is specified or MinAvailable is specified as a percentage for PickAll ClusterResourcePlacement"
	EvictionBlockedMissingPlacementMessage          = "Eviction is blocked, placement has not propagated resources to target cluster yet"
	EvictionAllowedPDBSpecifiedMessageFmt           = "Eviction is allowed by specified ClusterResourcePlacementDisruptionBudget, availablePlacements: %d, totalPlacements: %d"
	EvictionBlockedPDBSpecifiedMessageFmt           = "Eviction is blocked by specified ClusterResourcePlacementDisruptionBudget, availablePlacements: %d, totalPlacements: %d"
)

// SetConditions sets the given conditions on the eviction.
func (e *ClusterResourcePlacementEviction) SetConditions(conditions ...metav1.Condition) {
	for _, c := range conditions {
		meta.SetStatusCondition(&e.Status.Conditions, c)
	}
}

// GetCondition returns the eviction's condition of the given type, or nil.
func (e *ClusterResourcePlacementEviction) GetCondition(conditionType string) *metav1.Condition {
	return meta.FindStatusCondition(e.Status.Conditions, conditionType)
}

// IsTerminal reports whether the eviction is done with, as upstream's
// IsEvictionInTerminalState: Valid=False of its generation, or any Executed
// condition (an eviction the budget blocked is not tried again either).
func (e *ClusterResourcePlacementEviction) IsTerminal() bool {
	if c := e.GetCondition(string(PlacementEvictionConditionTypeValid)); c != nil &&
		c.Status == metav1.ConditionFalse && c.ObservedGeneration == e.Generation {
		return true
	}
	return e.GetCondition(string(PlacementEvictionConditionTypeExecuted)) != nil
}
