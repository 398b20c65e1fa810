package v1beta1

import (
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Admission of updates: what the API server (CEL transition rules) and the
// fleet webhooks reject when an object that already exists changes. In Git
// every push is an update of the last accepted version; a rejected change is
// reported with these messages and the last accepted spec stays in force.
// Callers validate the new object on its own (Validate*) as well.

// Transition messages (spec §1.2, §1.5, §1.6).
const (
	MsgPlacementNameImmutable         = "placementName is immutable"
	MsgResourceSnapshotIndexImmutable = "resourceSnapshotIndex is immutable"
	MsgStrategyNameImmutable          = "stagedRolloutStrategyName is immutable"
	MsgApprovalSpecImmutable          = "The spec field is immutable"
	MsgExternalIsSticky               = "cannot change rollout strategy type from 'External' to other types"
	MsgPlacementTypeImmutable         = "placement type is immutable"
	MsgTolerationsOnlyAdded           = "tolerations have been updated/deleted, only additions to tolerations are allowed"
)

// allowedStateTransitions lists the changes of spec.state the CEL rules
// accept besides keeping the same state.
var allowedStateTransitions = map[State]map[State]bool{
	StateInitialize: {StateRun: true},
	StateRun:        {StateStop: true},
	StateStop:       {StateRun: true},
}

// ValidateUpdateRunUpdate rejects changes to a run's immutable fields and
// forbidden state transitions (Initialize→Stop, Run→Initialize,
// Stop→Initialize). An empty state counts as its default, Initialize; the
// rule is skipped when the old object had no state at all, as upstream.
func ValidateUpdateRunUpdate(old, cur *UpdateRun) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if old.Spec.PlacementName != cur.Spec.PlacementName {
		errs = append(errs, field.Invalid(spec.Child("placementName"), cur.Spec.PlacementName, MsgPlacementNameImmutable))
	}
	if old.Spec.ResourceSnapshotIndex != cur.Spec.ResourceSnapshotIndex {
		errs = append(errs, field.Invalid(spec.Child("resourceSnapshotIndex"), cur.Spec.ResourceSnapshotIndex, MsgResourceSnapshotIndexImmutable))
	}
	if old.Spec.StagedUpdateStrategyName != cur.Spec.StagedUpdateStrategyName {
		errs = append(errs, field.Invalid(spec.Child("stagedRolloutStrategyName"), cur.Spec.StagedUpdateStrategyName, MsgStrategyNameImmutable))
	}
	from, to := old.Spec.State, cur.Spec.State
	if from == "" {
		return errs
	}
	if to == "" {
		to = StateInitialize
	}
	if from != to && !allowedStateTransitions[from][to] {
		errs = append(errs, field.Invalid(spec.Child("state"), to,
			fmt.Sprintf("invalid state transition: cannot transition from %s to %s", from, to)))
	}
	return errs
}

// ValidatePlacementUpdate rejects leaving the External rollout strategy
// (the CEL rule), changing the placement type and updating or deleting
// tolerations (the placement webhook). RollingUpdate→External is allowed.
func ValidatePlacementUpdate(old, cur *Placement) field.ErrorList {
	var errs field.ErrorList
	if old.Spec.Strategy.Type == ExternalRolloutStrategyType && cur.Spec.Strategy.Type != ExternalRolloutStrategyType {
		errs = append(errs, field.Invalid(field.NewPath("spec", "strategy", "type"), cur.Spec.Strategy.Type, MsgExternalIsSticky))
	}
	if placementTypeOf(old.Spec.Policy) != placementTypeOf(cur.Spec.Policy) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "policy", "placementType"), placementTypeOf(cur.Spec.Policy), MsgPlacementTypeImmutable))
	}
	if old.Spec.Policy != nil && cur.Spec.Policy != nil {
		kept := make(map[Toleration]bool, len(cur.Spec.Policy.Tolerations))
		for _, t := range cur.Spec.Policy.Tolerations {
			kept[t] = true
		}
		for _, t := range old.Spec.Policy.Tolerations {
			if !kept[t] {
				errs = append(errs, field.Invalid(field.NewPath("spec", "policy", "tolerations"), fmt.Sprintf("%+v", t), MsgTolerationsOnlyAdded))
				break
			}
		}
	}
	return errs
}

// placementTypeOf treats a nil policy or empty type as PickAll (the default).
func placementTypeOf(p *PlacementPolicy) PlacementType {
	if p == nil || p.PlacementType == "" {
		return PickAllPlacementType
	}
	return p.PlacementType
}

// ValidateApprovalRequestUpdate rejects any change of an approval request's
// spec; only its status (the Approved condition) may change.
func ValidateApprovalRequestUpdate(old, cur *ApprovalRequest) field.ErrorList {
	if !reflect.DeepEqual(old.Spec, cur.Spec) {
		return field.ErrorList{field.Invalid(field.NewPath("spec"), cur.Spec, MsgApprovalSpecImmutable)}
	}
	return nil
}
