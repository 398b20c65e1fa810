package admission_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/admission"
)

func run(state fleet.State) *fleet.UpdateRun {
	return &fleet.UpdateRun{
		ObjectMeta: metav1.ObjectMeta{Name: "example-run"},
		Spec:       fleet.UpdateRunSpec{PlacementName: "example-placement", StagedUpdateStrategyName: "example-strategy", State: state},
	}
}

func placement(typ fleet.RolloutStrategyType) *fleet.Placement {
	return &fleet.Placement{
		ObjectMeta: metav1.ObjectMeta{Name: "example-placement"},
		Spec: fleet.PlacementSpec{
			ResourceSelectors: []fleet.ResourceSelectorTerm{{Group: "", Version: "v1", Kind: "Namespace", Name: "test-namespace"}},
			Policy:            &fleet.PlacementPolicy{PlacementType: fleet.PickAllPlacementType},
			Strategy:          fleet.RolloutStrategy{Type: typ},
		},
	}
}

// TestUpdate: the CRD's transition rules (CEL with oldSelf) and the
// webhook's, on typed objects as render and the hubs hold them; the
// message is the one kube-apiserver gives (field: Invalid value: detail).
func TestUpdate(t *testing.T) {
	approval := &fleet.ApprovalRequest{ObjectMeta: metav1.ObjectMeta{Name: "example-run-canary"},
		Spec: fleet.ApprovalRequestSpec{TargetUpdateRun: "example-run", TargetStage: "canary"}}
	approved := approval.DeepCopy()
	approved.Status.Conditions = []metav1.Condition{{Type: fleet.ApprovalRequestConditionApproved, Status: metav1.ConditionTrue,
		Reason: "r", LastTransitionTime: metav1.Now()}}
	retargeted := approval.DeepCopy()
	retargeted.Spec.TargetStage = "prod"
	change := func(r *fleet.UpdateRun, f func(*fleet.UpdateRun)) *fleet.UpdateRun { f(r); return r }
	pickN := placement(fleet.ExternalRolloutStrategyType)
	pickN.Spec.Policy = &fleet.PlacementPolicy{PlacementType: fleet.PickNPlacementType, NumberOfClusters: new(int32(1))}
	withToleration := placement(fleet.ExternalRolloutStrategyType)
	withToleration.Spec.Policy.Tolerations = []fleet.Toleration{{Key: "k", Operator: "Exists"}}

	stored := placement(fleet.RollingUpdateRolloutStrategyType)
	stored.ResourceVersion, stored.Generation, stored.UID = "7", 3, "uid"
	stored.Status.ObservedResourceIndex = "2"
	// An object stored before a rule it breaks was added: unchanged, the
	// API server ratchets the rule (the name is over the CRD's 63).
	longRun := run(fleet.StateRun)
	longRun.Spec.PlacementName = strings.Repeat("p", 300)

	for _, tc := range []struct {
		name     string
		old, cur runtime.Object
		want     string // "": accepted
	}{
		{"unchanged run", run(fleet.StateRun), run(fleet.StateRun), ""},
		{"unchanged placement, stored with status and server metadata", stored, placement(fleet.RollingUpdateRolloutStrategyType), ""},
		{"unchanged run a rule added since refuses", longRun, longRun.DeepCopy(), ""},
		{"placementName is immutable", run(fleet.StateRun), change(run(fleet.StateRun), func(r *fleet.UpdateRun) { r.Spec.PlacementName = "other" }),
			`spec.placementName: Invalid value: "other": placementName is immutable`},
		{"resourceSnapshotIndex may be set", run(fleet.StateRun), change(run(fleet.StateRun), func(r *fleet.UpdateRun) { r.Spec.ResourceSnapshotIndex = "2" }), ""},
		{"resourceSnapshotIndex is immutable", change(run(fleet.StateRun), func(r *fleet.UpdateRun) { r.Spec.ResourceSnapshotIndex = "1" }),
			change(run(fleet.StateRun), func(r *fleet.UpdateRun) { r.Spec.ResourceSnapshotIndex = "2" }),
			`spec.resourceSnapshotIndex: Invalid value: "2": resourceSnapshotIndex is immutable`},
		{"stagedRolloutStrategyName is immutable", run(fleet.StateRun), change(run(fleet.StateRun), func(r *fleet.UpdateRun) { r.Spec.StagedUpdateStrategyName = "other" }),
			`spec.stagedRolloutStrategyName: Invalid value: "other": stagedRolloutStrategyName is immutable`},
		{"Initialize to Run", run(fleet.StateInitialize), run(fleet.StateRun), ""},
		{"Run to Stop", run(fleet.StateRun), run(fleet.StateStop), ""},
		{"Stop to Run", run(fleet.StateStop), run(fleet.StateRun), ""},
		{"Initialize to Stop", run(fleet.StateInitialize), run(fleet.StateStop),
			"spec: Invalid value: invalid state transition: cannot transition from Initialize to Stop"},
		{"Run to Initialize", run(fleet.StateRun), run(fleet.StateInitialize),
			"spec: Invalid value: invalid state transition: cannot transition from Run to Initialize"},
		{"Stop to Initialize", run(fleet.StateStop), run(fleet.StateInitialize),
			"spec: Invalid value: invalid state transition: cannot transition from Stop to Initialize"},
		{"Run to no state", run(fleet.StateRun), run(""),
			"spec: Invalid value: invalid state transition: cannot transition from Run to Initialize"},
		{"no state (Initialize by default) to Stop", run(""), run(fleet.StateStop),
			"spec: Invalid value: invalid state transition: cannot transition from Initialize to Stop"},
		{"RollingUpdate to External", placement(fleet.RollingUpdateRolloutStrategyType), placement(fleet.ExternalRolloutStrategyType), ""},
		{"External to RollingUpdate", placement(fleet.ExternalRolloutStrategyType), placement(fleet.RollingUpdateRolloutStrategyType),
			"spec.strategy.type: Invalid value: \"RollingUpdate\": cannot change rollout strategy type from 'External' to other types"},
		{"External to no type", placement(fleet.ExternalRolloutStrategyType), placement(""),
			"spec.strategy.type: Invalid value: \"RollingUpdate\": cannot change rollout strategy type from 'External' to other types"},
		{"placement type is immutable", placement(fleet.ExternalRolloutStrategyType), pickN,
			"spec.policy: Invalid value: placement type is immutable"},
		{"tolerations may be added", placement(fleet.ExternalRolloutStrategyType), withToleration, ""},
		{"tolerations may not be removed (webhook)", withToleration, placement(fleet.ExternalRolloutStrategyType),
			"spec.policy.tolerations: Invalid value: \"{Key:k Operator:Exists Value: Effect:}\": " + fleet.MsgTolerationsOnlyAdded},
		{"approval: status may change", approval, approved, ""},
		{"approval: spec is immutable", approval, retargeted, "spec: Invalid value: The spec field is immutable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := admission.Update(tc.old, tc.cur)
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("refused: %v", errs)
			case tc.want != "" && (len(errs) != 1 || errs[0].Error() != tc.want):
				t.Errorf("refused with %v; want %s", errs, tc.want)
			}
		})
	}
}
