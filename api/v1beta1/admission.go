package v1beta1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Admission of updates: what the API server (CEL transition rules) and the
// fleet webhooks reject when an object that already exists changes. In Git
// every push is an update of the last accepted version; a rejected change is
// reported with these messages and the last accepted spec stays in force.
//
// The transition rules themselves live in config/crd (x-kubernetes-validations
// with oldSelf) and both hubs apply them with the API server's code
// (internal/admission); what is left here is what only KubeFleet's webhooks
// refuse.

// Transition messages (spec §1.2, §1.5, §1.6): the CEL rules' messages,
// for the tests and callers that match on them.
const (
	MsgPlacementNameImmutable         = "placementName is immutable"
	MsgResourceSnapshotIndexImmutable = "resourceSnapshotIndex is immutable"
	MsgStrategyNameImmutable          = "stagedRolloutStrategyName is immutable"
	MsgApprovalSpecImmutable          = "The spec field is immutable"
	MsgExternalIsSticky               = "cannot change rollout strategy type from 'External' to other types"
	MsgPlacementTypeImmutable         = "placement type is immutable"
	MsgTolerationsOnlyAdded           = "tolerations have been updated/deleted, only additions to tolerations are allowed"
)

// ValidatePlacementUpdate rejects updating or deleting tolerations (the
// placement webhook); the rollout strategy and placement type rules are
// the CRD's.
func ValidatePlacementUpdate(old, cur *Placement) field.ErrorList {
	if old.Spec.Policy == nil || cur.Spec.Policy == nil {
		return nil
	}
	kept := make(map[Toleration]bool, len(cur.Spec.Policy.Tolerations))
	for _, t := range cur.Spec.Policy.Tolerations {
		kept[t] = true
	}
	for _, t := range old.Spec.Policy.Tolerations {
		if !kept[t] {
			return field.ErrorList{field.Invalid(field.NewPath("spec", "policy", "tolerations"), fmt.Sprintf("%+v", t), MsgTolerationsOnlyAdded)}
		}
	}
	return nil
}
