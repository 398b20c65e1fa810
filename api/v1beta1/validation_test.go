package v1beta1

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// want is the single error a broken object must produce.
type want struct {
	field  string
	typ    field.ErrorType
	detail string // exact Detail; "" means any
}

func checkOne(t *testing.T, errs field.ErrorList, w want) {
	t.Helper()
	if len(errs) != 1 {
		t.Fatalf("got %d errors, want exactly 1 (%s %s %q):\n%v", len(errs), w.field, w.typ, w.detail, errs)
	}
	e := errs[0]
	if e.Field != w.field || e.Type != w.typ || (w.detail != "" && e.Detail != w.detail) {
		t.Errorf("got %s %s %q, want %s %s %q", e.Field, e.Type, e.Detail, w.field, w.typ, w.detail)
	}
}

func validRun() *UpdateRun {
	return &UpdateRun{
		TypeMeta:   metav1.TypeMeta{Kind: KindClusterStagedUpdateRun},
		ObjectMeta: metav1.ObjectMeta{Name: "example-run"},
		Spec:       UpdateRunSpec{PlacementName: "example-placement", StagedUpdateStrategyName: "example-strategy", State: StateRun},
	}
}

// The name's length and the state's values are the CRD's rules
// (internal/crd testdata/refused).
func TestValidateUpdateRun(t *testing.T) {
	if errs := ValidateUpdateRun(validRun()); len(errs) != 0 {
		t.Fatalf("valid run rejected: %v", errs)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*UpdateRun)
		want   want
	}{
		{"placementName required", func(r *UpdateRun) { r.Spec.PlacementName = "" },
			want{"spec.placementName", field.ErrorTypeRequired, ""}},
		{"placementName max 255", func(r *UpdateRun) { r.Spec.PlacementName = strings.Repeat("p", 256) },
			want{"spec.placementName", field.ErrorTypeTooLong, "may not be more than 255 bytes"}},
		{"stagedRolloutStrategyName required", func(r *UpdateRun) { r.Spec.StagedUpdateStrategyName = "" },
			want{"spec.stagedRolloutStrategyName", field.ErrorTypeRequired, ""}},
		{"cluster-scoped run with a namespace", func(r *UpdateRun) { r.Namespace = "team-a" },
			want{"metadata.namespace", field.ErrorTypeForbidden, ""}},
		{"namespaced run without a namespace", func(r *UpdateRun) { r.Kind = KindStagedUpdateRun },
			want{"metadata.namespace", field.ErrorTypeRequired, ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := validRun()
			tc.mutate(r)
			checkOne(t, ValidateUpdateRun(r), tc.want)
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

func validStrategy() *UpdateStrategy {
	return &UpdateStrategy{
		TypeMeta:   metav1.TypeMeta{Kind: KindClusterStagedUpdateStrategy},
		ObjectMeta: metav1.ObjectMeta{Name: "example-strategy"},
		Spec: UpdateStrategySpec{Stages: []StageConfig{
			{
				Name:            "staging",
				LabelSelector:   &metav1.LabelSelector{MatchLabels: map[string]string{"environment": "staging"}},
				AfterStageTasks: []StageTask{{Type: StageTaskTypeTimedWait, WaitTime: &metav1.Duration{Duration: time.Minute}}},
			},
			{
				Name:             "canary",
				LabelSelector:    &metav1.LabelSelector{MatchLabels: map[string]string{"environment": "canary"}},
				SortingLabelKey:  ptrTo("order"),
				MaxConcurrency:   ptrTo(intstr.FromString("50%")),
				BeforeStageTasks: []StageTask{{Type: StageTaskTypeApproval}},
				AfterStageTasks:  []StageTask{{Type: StageTaskTypeApproval}, {Type: StageTaskTypeTimedWait, WaitTime: &metav1.Duration{Duration: 90 * time.Second}}},
			},
		}},
	}
}

func TestValidateUpdateStrategy(t *testing.T) {
	if errs := ValidateUpdateStrategy(validStrategy()); len(errs) != 0 {
		t.Fatalf("valid strategy rejected: %v", errs)
	}
	gated := validStrategy()
	gated.Spec.DeleteStage = &DeleteStageConfig{BeforeStageTasks: []StageTask{{Type: StageTaskTypeApproval}}}
	if errs := ValidateUpdateStrategy(gated); len(errs) != 0 {
		t.Fatalf("an approval before the deletion stage rejected: %v", errs)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*UpdateStrategySpec)
		want   want
	}{
		{"stages required", func(s *UpdateStrategySpec) { s.Stages = nil },
			want{"spec.stages", field.ErrorTypeRequired, ""}},
		{"duplicate stage names (gitfleet enforces)", func(s *UpdateStrategySpec) { s.Stages[1].Name = "staging" },
			want{"spec.stages[1].name", field.ErrorTypeDuplicate, ""}},
		{"invalid stage label selector", func(s *UpdateStrategySpec) {
			s.Stages[0].LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Maybe"}}}
		}, want{"spec.stages[0].labelSelector", field.ErrorTypeInvalid, `the stage label selector is invalid: "Maybe" is not a valid label selector operator`}},
		{"invalid sortingLabelKey", func(s *UpdateStrategySpec) { s.Stages[1].SortingLabelKey = ptrTo("not a key") },
			want{"spec.stages[1].sortingLabelKey", field.ErrorTypeInvalid, ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := validStrategy()
			tc.mutate(&s.Spec)
			checkOne(t, ValidateUpdateStrategy(s), tc.want)
		})
	}
}

func validPlacement() *Placement {
	return &Placement{
		TypeMeta:   metav1.TypeMeta{Kind: KindClusterResourcePlacement},
		ObjectMeta: metav1.ObjectMeta{Name: "example-placement"},
		Spec: PlacementSpec{
			ResourceSelectors: []ResourceSelectorTerm{{Group: "", Version: "v1", Kind: "Namespace", Name: "test-namespace"}},
			Policy:            &PlacementPolicy{PlacementType: PickAllPlacementType},
			Strategy:          RolloutStrategy{Type: ExternalRolloutStrategyType},
		},
	}
}

func TestValidatePlacement(t *testing.T) {
	if errs := ValidatePlacement(validPlacement()); len(errs) != 0 {
		t.Fatalf("valid placement rejected: %v", errs)
	}
	defaulted := validPlacement()
	SetDefaultsPlacement(defaulted)
	if errs := ValidatePlacement(defaulted); len(errs) != 0 {
		t.Fatalf("defaulted valid placement rejected: %v", errs)
	}
	bad := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpIn}}}
	for _, tc := range []struct {
		name   string
		mutate func(*Placement)
		want   want
	}{
		{"name longer than 63", func(p *Placement) { p.Name = strings.Repeat("a", 64) },
			want{"metadata.name", field.ErrorTypeInvalid, "the name field cannot have length exceeding 63"}},
		{"invalid resource label selector", func(p *Placement) {
			p.Spec.ResourceSelectors[0].Name = ""
			p.Spec.ResourceSelectors[0].LabelSelector = bad
		}, want{"spec.resourceSelectors[0].labelSelector", field.ErrorTypeInvalid, "the labelSelector in resource selector is invalid: values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"}},
		{"ResourcePlacement cannot select a Namespace", func(p *Placement) { p.Kind = KindResourcePlacement; p.Namespace = "app" },
			want{"spec.resourceSelectors[0]", field.ErrorTypeInvalid, "the resource is not found in schema (please retry) or it is a cluster scoped resource: /v1, Kind=Namespace"}},
		{"External rejects a rollingUpdate block", func(p *Placement) { p.Spec.Strategy.RollingUpdate = &RollingUpdateConfig{} },
			want{"spec.strategy.rollingUpdate", field.ErrorTypeInvalid, MsgExternalNoRollingUpdate}},
		{"bad maxSurge", func(p *Placement) {
			p.Spec.Strategy = RolloutStrategy{RollingUpdate: &RollingUpdateConfig{MaxSurge: ptrTo(intstr.FromString("lots"))}}
		}, want{"spec.strategy.rollingUpdate.maxSurge", field.ErrorTypeInvalid, ""}},
		{"PickFixed needs clusterNames", func(p *Placement) { p.Spec.Policy.PlacementType = PickFixedPlacementType },
			want{"spec.policy.clusterNames", field.ErrorTypeRequired, "cluster names cannot be empty for policy type PickFixed"}},
		{"PickFixed cluster names unique", func(p *Placement) {
			p.Spec.Policy = &PlacementPolicy{PlacementType: PickFixedPlacementType, ClusterNames: []string{"m1", "m1"}}
		}, want{"spec.policy.clusterNames[1]", field.ErrorTypeDuplicate, ""}},
		{"invalid affinity label selector", func(p *Placement) {
			p.Spec.Policy.Affinity = &Affinity{ClusterAffinity: &ClusterAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &ClusterSelector{
				ClusterSelectorTerms: []ClusterSelectorTerm{{LabelSelector: bad}}}}}
		}, want{"spec.policy.affinity.clusterAffinity.requiredDuringSchedulingIgnoredDuringExecution.clusterSelectorTerms[0].labelSelector", field.ErrorTypeInvalid, ""}},
		{"required affinity needs clusterSelectorTerms, as the CRD schema says", func(p *Placement) {
			p.Spec.Policy.Affinity = &Affinity{ClusterAffinity: &ClusterAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &ClusterSelector{}}}
		}, want{"spec.policy.affinity.clusterAffinity.requiredDuringSchedulingIgnoredDuringExecution.clusterSelectorTerms", field.ErrorTypeRequired, ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := validPlacement()
			tc.mutate(p)
			checkOne(t, ValidatePlacement(p), tc.want)
		})
	}
}

func TestValidateApprovalRequest(t *testing.T) {
	valid := func() *ApprovalRequest {
		return &ApprovalRequest{
			TypeMeta:   metav1.TypeMeta{Kind: KindClusterApprovalRequest},
			ObjectMeta: metav1.ObjectMeta{Name: "example-run-after-canary"},
			Spec:       ApprovalRequestSpec{TargetUpdateRun: "example-run", TargetStage: "canary"},
		}
	}
	if errs := ValidateApprovalRequest(valid()); len(errs) != 0 {
		t.Fatalf("valid approval request rejected: %v", errs)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*ApprovalRequest)
		want   want
	}{
		{"parentStageRollout required", func(a *ApprovalRequest) { a.Spec.TargetUpdateRun = "" },
			want{"spec.parentStageRollout", field.ErrorTypeRequired, ""}},
		{"targetStage required", func(a *ApprovalRequest) { a.Spec.TargetStage = "" },
			want{"spec.targetStage", field.ErrorTypeRequired, ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := valid()
			tc.mutate(a)
			checkOne(t, ValidateApprovalRequest(a), tc.want)
		})
	}
}

func TestValidateMemberCluster(t *testing.T) {
	valid := func() *MemberCluster {
		return &MemberCluster{
			TypeMeta: metav1.TypeMeta{Kind: KindMemberCluster},
			ObjectMeta: metav1.ObjectMeta{Name: "member1", Labels: map[string]string{"environment": "canary", "order": "2"},
				Annotations: map[string]string{DriverAnnotation: DriverSimulated, SimAvailableAfterAnnotation: "10s"}},
			Spec: MemberClusterSpec{Taints: []Taint{{Key: "k", Value: "v", Effect: "NoSchedule"}}},
		}
	}
	if errs := ValidateMemberCluster(valid()); len(errs) != 0 {
		t.Fatalf("valid member cluster rejected: %v", errs)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*MemberCluster)
		want   want
	}{
		{"name is a DNS label (no dots)", func(m *MemberCluster) { m.Name = "member.one" },
			want{"metadata.name", field.ErrorTypeInvalid, ""}},
		{"cluster-scoped", func(m *MemberCluster) { m.Namespace = "fleet-system" },
			want{"metadata.namespace", field.ErrorTypeForbidden, ""}},
		{"taints unique", func(m *MemberCluster) { m.Spec.Taints = append(m.Spec.Taints, m.Spec.Taints[0]) },
			want{"spec.taints[1]", field.ErrorTypeInvalid, "taints must be unique"}},
		{"unknown driver", func(m *MemberCluster) { m.Annotations[DriverAnnotation] = "ssh" },
			want{"metadata.annotations[gitfleet.io/driver]", field.ErrorTypeNotSupported, ""}},
		{"bad sim-available-after", func(m *MemberCluster) { m.Annotations[SimAvailableAfterAnnotation] = "soon" },
			want{"metadata.annotations[gitfleet.io/sim-available-after]", field.ErrorTypeInvalid, "must be a non-negative duration such as 30s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := valid()
			tc.mutate(m)
			checkOne(t, ValidateMemberCluster(m), tc.want)
		})
	}
}
