package v1beta1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateUpdateRunUpdate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(old, cur *UpdateRun)
		want   *want // nil: accepted
	}{
		{"unchanged", func(_, _ *UpdateRun) {}, nil},
		{"placementName is immutable", func(_, cur *UpdateRun) { cur.Spec.PlacementName = "other" },
			&want{"spec.placementName", field.ErrorTypeInvalid, "placementName is immutable"}},
		{"resourceSnapshotIndex is immutable", func(_, cur *UpdateRun) { cur.Spec.ResourceSnapshotIndex = "2" },
			&want{"spec.resourceSnapshotIndex", field.ErrorTypeInvalid, "resourceSnapshotIndex is immutable"}},
		{"stagedRolloutStrategyName is immutable", func(_, cur *UpdateRun) { cur.Spec.StagedUpdateStrategyName = "other" },
			&want{"spec.stagedRolloutStrategyName", field.ErrorTypeInvalid, "stagedRolloutStrategyName is immutable"}},
		{"Initialize to Run allowed", func(old, cur *UpdateRun) { old.Spec.State, cur.Spec.State = StateInitialize, StateRun }, nil},
		{"Run to Stop allowed", func(old, cur *UpdateRun) { old.Spec.State, cur.Spec.State = StateRun, StateStop }, nil},
		{"Stop to Run allowed", func(old, cur *UpdateRun) { old.Spec.State, cur.Spec.State = StateStop, StateRun }, nil},
		{"Stop to Stop allowed", func(old, cur *UpdateRun) { old.Spec.State, cur.Spec.State = StateStop, StateStop }, nil},
		{"Initialize to Stop rejected", func(old, cur *UpdateRun) { old.Spec.State, cur.Spec.State = StateInitialize, StateStop },
			&want{"spec.state", field.ErrorTypeInvalid, "invalid state transition: cannot transition from Initialize to Stop"}},
		{"Run to Initialize rejected", func(old, cur *UpdateRun) { old.Spec.State, cur.Spec.State = StateRun, StateInitialize },
			&want{"spec.state", field.ErrorTypeInvalid, "invalid state transition: cannot transition from Run to Initialize"}},
		{"Stop to Initialize rejected", func(old, cur *UpdateRun) { old.Spec.State, cur.Spec.State = StateStop, StateInitialize },
			&want{"spec.state", field.ErrorTypeInvalid, "invalid state transition: cannot transition from Stop to Initialize"}},
		{"Run to absent state is Run to Initialize", func(old, cur *UpdateRun) { old.Spec.State, cur.Spec.State = StateRun, "" },
			&want{"spec.state", field.ErrorTypeInvalid, "invalid state transition: cannot transition from Run to Initialize"}},
		{"old without state skips the transition rule", func(old, cur *UpdateRun) { old.Spec.State, cur.Spec.State = "", StateStop }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, cur := validRun(), validRun()
			tc.mutate(old, cur)
			errs := ValidateUpdateRunUpdate(old, cur)
			if tc.want == nil {
				if len(errs) != 0 {
					t.Fatalf("rejected: %v", errs)
				}
				return
			}
			checkOne(t, errs, *tc.want)
		})
	}
}

func TestValidatePlacementUpdate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(old, cur *Placement)
		want   *want
	}{
		{"RollingUpdate to External allowed", func(old, _ *Placement) { old.Spec.Strategy.Type = RollingUpdateRolloutStrategyType }, nil},
		{"External to RollingUpdate rejected", func(_, cur *Placement) { cur.Spec.Strategy.Type = RollingUpdateRolloutStrategyType },
			&want{"spec.strategy.type", field.ErrorTypeInvalid, "cannot change rollout strategy type from 'External' to other types"}},
		{"External to absent type rejected", func(_, cur *Placement) { cur.Spec.Strategy.Type = "" },
			&want{"spec.strategy.type", field.ErrorTypeInvalid, "cannot change rollout strategy type from 'External' to other types"}},
		{"placement type is immutable", func(_, cur *Placement) {
			n := int32(1)
			cur.Spec.Policy = &PlacementPolicy{PlacementType: PickNPlacementType, NumberOfClusters: &n}
		}, &want{"spec.policy.placementType", field.ErrorTypeInvalid, "placement type is immutable"}},
		{"nil policy equals PickAll", func(old, _ *Placement) { old.Spec.Policy = nil }, nil},
		{"tolerations may be added", func(_, cur *Placement) { cur.Spec.Policy.Tolerations = []Toleration{{Key: "k"}} }, nil},
		{"tolerations may not be removed", func(old, _ *Placement) { old.Spec.Policy.Tolerations = []Toleration{{Key: "k"}} },
			&want{"spec.policy.tolerations", field.ErrorTypeInvalid, "tolerations have been updated/deleted, only additions to tolerations are allowed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, cur := validPlacement(), validPlacement()
			tc.mutate(old, cur)
			errs := ValidatePlacementUpdate(old, cur)
			if tc.want == nil {
				if len(errs) != 0 {
					t.Fatalf("rejected: %v", errs)
				}
				return
			}
			checkOne(t, errs, *tc.want)
		})
	}
}

func TestValidateApprovalRequestUpdateSpecIsImmutable(t *testing.T) {
	old := &ApprovalRequest{Spec: ApprovalRequestSpec{TargetUpdateRun: "run", TargetStage: "canary"}}
	same := old.DeepCopy()
	same.Status.Conditions = append(same.Status.Conditions, metav1.Condition{Type: ApprovalRequestConditionApproved, Status: metav1.ConditionTrue})
	if errs := ValidateApprovalRequestUpdate(old, same); len(errs) != 0 {
		t.Errorf("status-only change rejected: %v", errs)
	}
	changed := old.DeepCopy()
	changed.Spec.TargetStage = "prod"
	checkOne(t, ValidateApprovalRequestUpdate(old, changed), want{"spec", field.ErrorTypeInvalid, "The spec field is immutable"})
}
