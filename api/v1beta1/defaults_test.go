package v1beta1

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestSetDefaultsUpdateRunStateIsInitializeWhenEmpty(t *testing.T) {
	for _, tc := range []struct {
		in, want State
	}{
		{"", StateInitialize},
		{StateRun, StateRun},
		{StateStop, StateStop},
	} {
		r := &UpdateRun{Spec: UpdateRunSpec{State: tc.in}}
		SetDefaultsUpdateRun(r)
		if r.Spec.State != tc.want {
			t.Errorf("state %q defaulted to %q, want %q", tc.in, r.Spec.State, tc.want)
		}
	}
}

func TestSetDefaultsUpdateRunDefaultsItsStrategySnapshot(t *testing.T) {
	r := &UpdateRun{Status: UpdateRunStatus{StagedUpdateStrategySnapshot: &UpdateStrategySpec{Stages: []StageConfig{{Name: "a"}}}}}
	SetDefaultsUpdateRun(r)
	if got := r.Status.StagedUpdateStrategySnapshot.Stages[0].MaxConcurrency; got == nil || *got != intstr.FromInt32(1) {
		t.Errorf("snapshot stage a maxConcurrency = %v, want int 1 (the CRD default)", got)
	}
}

func TestSetDefaultsUpdateStrategyMaxConcurrencyIsOneOnlyWhenNil(t *testing.T) {
	pct := intstr.FromString("50%")
	s := &UpdateStrategy{Spec: UpdateStrategySpec{Stages: []StageConfig{{Name: "a"}, {Name: "b", MaxConcurrency: &pct}}}}
	SetDefaultsUpdateStrategy(s)
	if got := s.Spec.Stages[0].MaxConcurrency; got == nil || *got != intstr.FromInt32(1) {
		t.Errorf("stage a maxConcurrency = %v, want int 1", got)
	}
	if got := s.Spec.Stages[1].MaxConcurrency; got.StrVal != "50%" {
		t.Errorf("stage b maxConcurrency = %v, want 50%% kept", got)
	}
}

func TestSetDefaultsPlacement(t *testing.T) {
	t.Run("empty placement gets PickAll, RollingUpdate knobs, apply strategy and history limit", func(t *testing.T) {
		p := &Placement{}
		SetDefaultsPlacement(p)
		if p.Spec.Policy == nil || p.Spec.Policy.PlacementType != PickAllPlacementType {
			t.Errorf("policy = %+v, want PickAll", p.Spec.Policy)
		}
		st := p.Spec.Strategy
		if st.Type != RollingUpdateRolloutStrategyType {
			t.Errorf("strategy type = %q, want RollingUpdate", st.Type)
		}
		if ru := st.RollingUpdate; ru == nil || ru.MaxUnavailable.StrVal != "25%" || ru.MaxSurge.StrVal != "25%" || *ru.UnavailablePeriodSeconds != 60 {
			t.Errorf("rollingUpdate = %+v, want 25%%/25%%/60", ru)
		}
		want := &ApplyStrategy{
			Type: ApplyStrategyTypeClientSideApply, ComparisonOption: ComparisonOptionTypePartialComparison,
			WhenToApply: WhenToApplyTypeAlways, WhenToTakeOver: WhenToTakeOverTypeAlways,
		}
		if !reflect.DeepEqual(st.ApplyStrategy, want) {
			t.Errorf("applyStrategy = %+v, want %+v", st.ApplyStrategy, want)
		}
		if p.Spec.RevisionHistoryLimit == nil || *p.Spec.RevisionHistoryLimit != 10 {
			t.Errorf("revisionHistoryLimit = %v, want 10", p.Spec.RevisionHistoryLimit)
		}
	})
	t.Run("External gets no rollingUpdate block", func(t *testing.T) {
		p := &Placement{Spec: PlacementSpec{Strategy: RolloutStrategy{Type: ExternalRolloutStrategyType}}}
		SetDefaultsPlacement(p)
		if p.Spec.Strategy.RollingUpdate != nil {
			t.Errorf("rollingUpdate = %+v, want nil for External", p.Spec.Strategy.RollingUpdate)
		}
		if errs := validateRolloutStrategy(&p.Spec.Strategy, nil); len(errs) != 0 {
			t.Errorf("defaulted External strategy does not validate: %v", errs)
		}
	})
	t.Run("explicit values are kept", func(t *testing.T) {
		limit := int32(3)
		p := &Placement{Spec: PlacementSpec{
			Policy:               &PlacementPolicy{PlacementType: PickNPlacementType, Tolerations: []Toleration{{Key: "k"}}, TopologySpreadConstraints: []TopologySpreadConstraint{{TopologyKey: "zone"}}},
			Strategy:             RolloutStrategy{ApplyStrategy: &ApplyStrategy{Type: ApplyStrategyTypeReportDiff, WhenToTakeOver: WhenToTakeOverTypeNever}},
			RevisionHistoryLimit: &limit,
		}}
		SetDefaultsPlacement(p)
		if p.Spec.Policy.PlacementType != PickNPlacementType || *p.Spec.RevisionHistoryLimit != 3 {
			t.Errorf("explicit policy/limit overwritten: %+v %d", p.Spec.Policy, *p.Spec.RevisionHistoryLimit)
		}
		as := p.Spec.Strategy.ApplyStrategy
		if as.Type != ApplyStrategyTypeReportDiff || as.WhenToTakeOver != WhenToTakeOverTypeNever || as.WhenToApply != WhenToApplyTypeAlways {
			t.Errorf("applyStrategy = %+v", as)
		}
		if p.Spec.Policy.Tolerations[0].Operator != TolerationOpEqual {
			t.Errorf("toleration operator = %q, want Equal", p.Spec.Policy.Tolerations[0].Operator)
		}
		if c := p.Spec.Policy.TopologySpreadConstraints[0]; *c.MaxSkew != 1 || c.WhenUnsatisfiable != DoNotSchedule {
			t.Errorf("topology spread constraint = %+v", c)
		}
	})
}

func TestSetDefaultsPlacementAppliesTheCRDDefaults(t *testing.T) {
	p := &Placement{Spec: PlacementSpec{
		ResourceSelectors: []ResourceSelectorTerm{{Version: "v1", Kind: "Namespace", Name: "a"},
			{Version: "v1", Kind: "Namespace", Name: "b", SelectionScope: NamespaceOnly}},
		Strategy: RolloutStrategy{DeleteStrategy: &DeleteStrategy{}, ReportBackStrategy: &ReportBackStrategy{}},
	}}
	SetDefaultsPlacement(p)
	s := p.Spec
	if s.StatusReportingScope != ClusterScopeOnly {
		t.Errorf("statusReportingScope = %q, want ClusterScopeOnly", s.StatusReportingScope)
	}
	if got := []SelectionScope{s.ResourceSelectors[0].SelectionScope, s.ResourceSelectors[1].SelectionScope}; got[0] != NamespaceWithResources || got[1] != NamespaceOnly {
		t.Errorf("selectionScopes = %v, want [NamespaceWithResources NamespaceOnly]", got)
	}
	if s.Strategy.DeleteStrategy.PropagationPolicy != DeletePropagationPolicyDelete || s.Strategy.ReportBackStrategy.Type != ReportBackStrategyTypeDisabled {
		t.Errorf("deleteStrategy %+v, reportBackStrategy %+v; want Delete, Disabled", s.Strategy.DeleteStrategy, s.Strategy.ReportBackStrategy)
	}
	bare := &Placement{}
	SetDefaultsPlacement(bare)
	if bare.Spec.Strategy.DeleteStrategy != nil || bare.Spec.Strategy.ReportBackStrategy != nil {
		t.Errorf("absent delete and report-back strategies were created: %+v", bare.Spec.Strategy)
	}
}

func TestSetDefaultsMemberCluster(t *testing.T) {
	m := &MemberCluster{Spec: MemberClusterSpec{DeleteOptions: &DeleteOptions{}}}
	SetDefaultsMemberCluster(m)
	if m.Spec.HeartbeatPeriodSeconds != 60 || m.Spec.DeleteOptions.ValidationMode != DeleteValidationModeStrict {
		t.Errorf("spec = %+v, deleteOptions %+v; want heartbeat 60, validationMode Strict", m.Spec, m.Spec.DeleteOptions)
	}
	kept := &MemberCluster{Spec: MemberClusterSpec{HeartbeatPeriodSeconds: 5}}
	SetDefaultsMemberCluster(kept)
	if kept.Spec.HeartbeatPeriodSeconds != 5 || kept.Spec.DeleteOptions != nil {
		t.Errorf("spec = %+v; want heartbeat 5 kept and no deleteOptions", kept.Spec)
	}
}

func TestDefaultApplyStrategyDoesNotMutateItsInput(t *testing.T) {
	in := &ApplyStrategy{Type: ApplyStrategyTypeServerSideApply}
	out := DefaultApplyStrategy(in)
	if in.ComparisonOption != "" || in.ServerSideApplyConfig != nil {
		t.Errorf("input mutated: %+v", in)
	}
	if out.Type != ApplyStrategyTypeServerSideApply || out.ComparisonOption != ComparisonOptionTypePartialComparison {
		t.Errorf("out = %+v", out)
	}
	if nilOut := DefaultApplyStrategy(nil); nilOut.Type != ApplyStrategyTypeClientSideApply {
		t.Errorf("DefaultApplyStrategy(nil) = %+v", nilOut)
	}
}

// The seeds' appliedStrategy shows no serverSideApplyConfig for the default
// ClientSideApply; only ServerSideApply gets the explicit block.
func TestDefaultApplyStrategyServerSideApplyConfigOnlyForServerSideApply(t *testing.T) {
	if got := DefaultApplyStrategy(nil); got.ServerSideApplyConfig != nil {
		t.Errorf("ClientSideApply default has serverSideApplyConfig %+v, want none", got.ServerSideApplyConfig)
	}
	got := DefaultApplyStrategy(&ApplyStrategy{Type: ApplyStrategyTypeServerSideApply})
	if got.ServerSideApplyConfig == nil || got.ServerSideApplyConfig.ForceConflicts {
		t.Errorf("ServerSideApply default serverSideApplyConfig = %+v, want {force: false}", got.ServerSideApplyConfig)
	}
}
