package v1beta1

import (
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Defaulting, as KubeFleet applies it: the CRD defaults of the staged-update
// kinds and pkg/utils/defaulter for placements. gitfleet applies them when
// it reads a manifest, so the engine never has to guess an absent field and
// status files show the same values `kubectl get -o yaml` would.

// Defaults of RollingUpdate placements and topology spread constraints.
const (
	DefaultMaxUnavailable           = "25%"
	DefaultMaxSurge                 = "25%"
	DefaultUnavailablePeriodSeconds = 60
	DefaultMaxSkew                  = 1
	// DoNotSchedule is the default whenUnsatisfiable of a topology spread
	// constraint; ScheduleAnyway is the other accepted value.
	DoNotSchedule  = "DoNotSchedule"
	ScheduleAnyway = "ScheduleAnyway"
	// TolerationOpEqual is the default toleration operator.
	TolerationOpEqual  = "Equal"
	TolerationOpExists = "Exists"
	// DefaultHeartbeatPeriodSeconds is a member's default heartbeat period.
	DefaultHeartbeatPeriodSeconds = 60
	// DeleteValidationModeStrict is the default of a member's
	// deleteOptions.validationMode; Skip is the other accepted value.
	DeleteValidationModeStrict = "Strict"
	DeleteValidationModeSkip   = "Skip"
)

// SetDefaultsMemberCluster applies the MemberCluster CRD's defaults: a
// heartbeat period of 60 seconds and, when deleteOptions is present, its
// validationMode Strict.
func SetDefaultsMemberCluster(m *MemberCluster) {
	if m.Spec.HeartbeatPeriodSeconds == 0 {
		m.Spec.HeartbeatPeriodSeconds = DefaultHeartbeatPeriodSeconds
	}
	if d := m.Spec.DeleteOptions; d != nil && d.ValidationMode == "" {
		d.ValidationMode = DeleteValidationModeStrict
	}
}

// SetDefaultsUpdateRun defaults spec.state to Initialize (the CRD default),
// which is why a run pushed without a state is only planned, not executed,
// and the stages of its strategy snapshot as the CRD does.
func SetDefaultsUpdateRun(r *UpdateRun) {
	if r.Spec.State == "" {
		r.Spec.State = StateInitialize
	}
	if r.Status.StagedUpdateStrategySnapshot != nil {
		SetDefaultsUpdateStrategySpec(r.Status.StagedUpdateStrategySnapshot)
	}
}

// SetDefaultsUpdateStrategy defaults every stage's maxConcurrency to 1.
func SetDefaultsUpdateStrategy(s *UpdateStrategy) {
	SetDefaultsUpdateStrategySpec(&s.Spec)
}

// SetDefaultsUpdateStrategySpec is SetDefaultsUpdateStrategy for a bare spec
// (a run's frozen strategy snapshot).
func SetDefaultsUpdateStrategySpec(spec *UpdateStrategySpec) {
	for i := range spec.Stages {
		if spec.Stages[i].MaxConcurrency == nil {
			one := intstr.FromInt32(1)
			spec.Stages[i].MaxConcurrency = &one
		}
	}
}

// SetDefaultsPlacement mirrors KubeFleet's SetDefaultsClusterResourcePlacement:
// nil policy is PickAll, empty strategy type is RollingUpdate (with its
// 25%/25%/60s knobs), the apply strategy is always present and defaulted,
// and revisionHistoryLimit is 10. It applies the CRD's defaults too, which
// a Kubernetes hub's API server writes before any controller runs:
// statusReportingScope ClusterScopeOnly, each resource selector's
// selectionScope NamespaceWithResources, and the propagation policy and
// report-back type of a delete and report-back strategy that is present.
func SetDefaultsPlacement(p *Placement) {
	spec := &p.Spec
	if spec.StatusReportingScope == "" {
		spec.StatusReportingScope = ClusterScopeOnly
	}
	for i := range spec.ResourceSelectors {
		if spec.ResourceSelectors[i].SelectionScope == "" {
			spec.ResourceSelectors[i].SelectionScope = NamespaceWithResources
		}
	}
	if d := spec.Strategy.DeleteStrategy; d != nil && d.PropagationPolicy == "" {
		d.PropagationPolicy = DeletePropagationPolicyDelete
	}
	if r := spec.Strategy.ReportBackStrategy; r != nil && r.Type == "" {
		r.Type = ReportBackStrategyTypeDisabled
	}
	if spec.Policy == nil {
		spec.Policy = &PlacementPolicy{PlacementType: PickAllPlacementType}
	}
	for i := range spec.Policy.TopologySpreadConstraints {
		c := &spec.Policy.TopologySpreadConstraints[i]
		if c.MaxSkew == nil {
			skew := int32(DefaultMaxSkew)
			c.MaxSkew = &skew
		}
		if c.WhenUnsatisfiable == "" {
			c.WhenUnsatisfiable = DoNotSchedule
		}
	}
	for i := range spec.Policy.Tolerations {
		if spec.Policy.Tolerations[i].Operator == "" {
			spec.Policy.Tolerations[i].Operator = TolerationOpEqual
		}
	}

	st := &spec.Strategy
	if st.Type == "" {
		st.Type = RollingUpdateRolloutStrategyType
	}
	if st.Type == RollingUpdateRolloutStrategyType {
		if st.RollingUpdate == nil {
			st.RollingUpdate = &RollingUpdateConfig{}
		}
		ru := st.RollingUpdate
		if ru.MaxUnavailable == nil {
			v := intstr.FromString(DefaultMaxUnavailable)
			ru.MaxUnavailable = &v
		}
		if ru.MaxSurge == nil {
			v := intstr.FromString(DefaultMaxSurge)
			ru.MaxSurge = &v
		}
		if ru.UnavailablePeriodSeconds == nil {
			v := DefaultUnavailablePeriodSeconds
			ru.UnavailablePeriodSeconds = &v
		}
	}
	st.ApplyStrategy = DefaultApplyStrategy(st.ApplyStrategy)

	if spec.RevisionHistoryLimit == nil {
		limit := int32(DefaultRevisionHistoryLimit)
		spec.RevisionHistoryLimit = &limit
	}
}

// DefaultApplyStrategy returns a defaulted copy of a (possibly nil) apply
// strategy: ClientSideApply, PartialComparison, whenToApply Always,
// whenToTakeOver Always, and — for ServerSideApply only — an explicit
// serverSideApplyConfig. The seeds' appliedStrategy (what users see in a
// run's status) carries no serverSideApplyConfig for ClientSideApply, so
// gitfleet leaves it out there. Runs freeze this value and compare it with
// bindings by deep equality, so every caller must default through here.
func DefaultApplyStrategy(in *ApplyStrategy) *ApplyStrategy {
	out := &ApplyStrategy{}
	if in != nil {
		out = in.DeepCopy()
	}
	if out.Type == "" {
		out.Type = ApplyStrategyTypeClientSideApply
	}
	if out.ComparisonOption == "" {
		out.ComparisonOption = ComparisonOptionTypePartialComparison
	}
	if out.WhenToApply == "" {
		out.WhenToApply = WhenToApplyTypeAlways
	}
	if out.WhenToTakeOver == "" {
		out.WhenToTakeOver = WhenToTakeOverTypeAlways
	}
	if out.Type == ApplyStrategyTypeServerSideApply && out.ServerSideApplyConfig == nil {
		out.ServerSideApplyConfig = &ServerSideApplyConfig{}
	}
	return out
}
