package v1beta1

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validation of single objects: what the KubeFleet CRD schemas, their CEL
// rules and the fleet webhooks reject, as plain Go. Messages are the
// upstream strings (spec §1) so `gitfleet validate` reads like kubectl's
// rejection. Field paths are JSON paths (spec.stages[1].maxConcurrency).
//
// The functions accept defaulted and undefaulted objects alike.

// Limits from the CRD schemas.
const (
	MaxUpdateRunNameLength     = 63
	MaxPlacementNameLength     = 255
	maxPlacementObjectNameSize = validation.DNS1035LabelMaxLength
)

// Messages of the CEL rules (spec §1); tests and callers match on them.
const (
	MsgRunNameTooLong          = "metadata.name max length is 63"
	MsgExternalNoRollingUpdate = "rollingUpdateConifg is not valid for ExternalRollout strategy type"
)

// namespacedKinds are the kinds whose objects live in a namespace. gitfleet
// decides the family from metadata.namespace, so the two must agree.
var namespacedKinds = map[string]bool{
	KindResourcePlacement: true, KindStagedUpdateStrategy: true, KindStagedUpdateRun: true,
	KindApprovalRequest: true, KindResourceSnapshot: true, KindSchedulingPolicySnapshot: true,
	KindResourceBinding: true, KindResourceOverride: true, KindResourceOverrideSnapshot: true,
}

// ValidateObjectMeta checks the scope rule: a cluster-scoped kind must not
// carry a namespace and a namespaced kind needs one (Git has no kubectl
// context to default it from). An empty kind skips it. The name and the
// namespace themselves are the API server's checks, which config/crd's
// schema applies first (internal/crdschema).
func ValidateObjectMeta(kind string, meta *metav1.ObjectMeta) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("metadata")
	if kind == "" {
		return errs
	}
	switch {
	case namespacedKinds[kind] && meta.Namespace == "":
		errs = append(errs, field.Required(p.Child("namespace"), fmt.Sprintf("%s is namespaced; set metadata.namespace", kind)))
	case !namespacedKinds[kind] && meta.Namespace != "":
		errs = append(errs, field.Forbidden(p.Child("namespace"), fmt.Sprintf("not allowed on this type: %s is cluster-scoped", kind)))
	}
	return errs
}

// ---- runs ----

// ValidateUpdateRun checks a ClusterStagedUpdateRun or StagedUpdateRun
// beyond its CRD's schema, which refuses a name over 63 and an unknown
// state first (internal/crdschema).
func ValidateUpdateRun(r *UpdateRun) field.ErrorList {
	errs := ValidateObjectMeta(r.Kind, &r.ObjectMeta)
	spec := field.NewPath("spec")
	switch {
	case r.Spec.PlacementName == "":
		errs = append(errs, field.Required(spec.Child("placementName"), ""))
	case len(r.Spec.PlacementName) > MaxPlacementNameLength:
		errs = append(errs, field.TooLong(spec.Child("placementName"), r.Spec.PlacementName, MaxPlacementNameLength))
	}
	if r.Spec.StagedUpdateStrategyName == "" {
		errs = append(errs, field.Required(spec.Child("stagedRolloutStrategyName"), ""))
	}
	return append(errs, validateClusterSet(r, spec)...)
}

// ---- strategies ----

// ValidateUpdateStrategy checks a ClusterStagedUpdateStrategy or
// StagedUpdateStrategy.
func ValidateUpdateStrategy(s *UpdateStrategy) field.ErrorList {
	errs := ValidateObjectMeta(s.Kind, &s.ObjectMeta)
	return append(errs, ValidateUpdateStrategySpec(&s.Spec, field.NewPath("spec"))...)
}

// ValidateUpdateStrategySpec checks the stages of a strategy beyond its
// CRD's schema, which refuses first (stage names, counts, maxConcurrency,
// task types and the Approval/TimedWait rules, waitTime as written).
// Unlike upstream (which documents but never checks it), gitfleet rejects
// two stages with the same name: approval request names and status
// entries are keyed by stage name, so duplicates would make them
// ambiguous; and a strategy needs a stage.
func ValidateUpdateStrategySpec(spec *UpdateStrategySpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	stagesPath := p.Child("stages")
	if len(spec.Stages) == 0 {
		return append(errs, field.Required(stagesPath, ""))
	}
	seen := make(map[string]bool, len(spec.Stages))
	for i := range spec.Stages {
		stage := &spec.Stages[i]
		sp := stagesPath.Index(i)
		errs = append(errs, validateStage(stage, sp)...)
		if stage.Name != "" {
			if seen[stage.Name] {
				errs = append(errs, field.Duplicate(sp.Child("name"), stage.Name))
			}
			seen[stage.Name] = true
		}
	}
	if spec.DeleteStage != nil {
		for i, t := range spec.DeleteStage.BeforeStageTasks {
			if t.Type == StageTaskTypeMetric || t.Metric != nil {
				errs = append(errs, field.NotSupported(p.Child("deleteStage", "beforeStageTasks").Index(i).Child("type"), t.Type, []string{string(StageTaskTypeApproval)}))
			}
		}
	}
	return errs
}

func validateStage(stage *StageConfig, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if stage.LabelSelector != nil {
		if _, err := metav1.LabelSelectorAsSelector(stage.LabelSelector); err != nil {
			errs = append(errs, field.Invalid(p.Child("labelSelector"), metav1.FormatLabelSelector(stage.LabelSelector),
				fmt.Sprintf("the stage label selector is invalid: %v", err)))
		}
	}
	if stage.SortingLabelKey != nil {
		for _, msg := range validation.IsQualifiedName(*stage.SortingLabelKey) {
			errs = append(errs, field.Invalid(p.Child("sortingLabelKey"), *stage.SortingLabelKey, msg))
		}
	}
	errs = append(errs, validateStageTasks(stage.BeforeStageTasks, p.Child("beforeStageTasks"))...)
	return append(errs, validateStageTasks(stage.AfterStageTasks, p.Child("afterStageTasks"))...)
}

// ---- placements ----

// ValidatePlacement checks a ClusterResourcePlacement or ResourcePlacement
// as KubeFleet's placement webhook does (messages are its own), after
// config/crd's schema (enums, bounds, required fields and the CEL rules of
// each placement type), which refuses first and is not repeated here.
func ValidatePlacement(pl *Placement) field.ErrorList {
	errs := ValidateObjectMeta(pl.Kind, &pl.ObjectMeta)
	errs = append(errs, validateRejectedSnapshots(pl.Annotations)...)
	if len(pl.Name) > maxPlacementObjectNameSize {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), pl.Name,
			fmt.Sprintf("the name field cannot have length exceeding %d", maxPlacementObjectNameSize)))
	}
	spec := field.NewPath("spec")
	errs = append(errs, validateResourceSelectors(pl, spec.Child("resourceSelectors"))...)
	if pl.Spec.Policy != nil {
		errs = append(errs, validatePolicy(pl.Spec.Policy, spec.Child("policy"))...)
	}
	errs = append(errs, validateRolloutStrategy(&pl.Spec.Strategy, spec.Child("strategy"))...)
	return append(errs, validateUnsupported(&pl.Spec, spec)...)
}

func validateResourceSelectors(pl *Placement, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, s := range pl.Spec.ResourceSelectors {
		sp := p.Index(i)
		if s.LabelSelector != nil {
			if _, err := metav1.LabelSelectorAsSelector(s.LabelSelector); err != nil {
				errs = append(errs, field.Invalid(sp.Child("labelSelector"), metav1.FormatLabelSelector(s.LabelSelector),
					fmt.Sprintf("the labelSelector in resource selector is invalid: %v", err)))
			}
		}
		// Without discovery gitfleet knows the scope of one kind for sure:
		// a ResourcePlacement cannot select a Namespace.
		if pl.Namespace != "" && s.Group == "" && s.Kind == "Namespace" {
			errs = append(errs, field.Invalid(sp, s.Kind,
				"the resource is not found in schema (please retry) or it is a cluster scoped resource: /v1, Kind=Namespace"))
		}
	}
	return errs
}

func validatePolicy(pol *PlacementPolicy, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	typ := pol.PlacementType
	if typ == "" {
		typ = PickAllPlacementType // the CRD default
	}
	if typ == PickFixedPlacementType {
		if len(pol.ClusterNames) == 0 {
			errs = append(errs, field.Required(p.Child("clusterNames"), "cluster names cannot be empty for policy type PickFixed"))
		}
		seen := map[string]bool{}
		for i, name := range pol.ClusterNames {
			for _, msg := range validation.IsDNS1123Label(name) {
				errs = append(errs, field.Invalid(p.Child("clusterNames").Index(i), name,
					fmt.Sprintf("PickFixed cluster name %s is not a valid member name: %s", name, msg)))
			}
			if seen[name] {
				errs = append(errs, field.Duplicate(p.Child("clusterNames").Index(i), name))
			}
			seen[name] = true
		}
	}
	if pol.Affinity != nil && pol.Affinity.ClusterAffinity != nil && typ != PickFixedPlacementType {
		errs = append(errs, validateClusterAffinity(pol.Affinity.ClusterAffinity, typ, p.Child("affinity", "clusterAffinity"))...)
	}
	errs = append(errs, validateTolerations(pol.Tolerations, p.Child("tolerations"))...)
	return errs
}

func validateClusterAffinity(a *ClusterAffinity, typ PlacementType, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	check := func(sel *metav1.LabelSelector, sp *field.Path, parent string) {
		if sel == nil {
			return
		}
		if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
			errs = append(errs, field.Invalid(sp, metav1.FormatLabelSelector(sel),
				fmt.Sprintf("the labelSelector in %s is invalid: %v", parent, err)))
		}
	}
	if req := a.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
		tp := p.Child("requiredDuringSchedulingIgnoredDuringExecution", "clusterSelectorTerms")
		errs = append(errs, requireTerms(req, tp)...)
		for i, t := range req.ClusterSelectorTerms {
			check(t.LabelSelector, tp.Index(i).Child("labelSelector"), "cluster selector")
			errs = append(errs, validateRequiredPropertyTerm(t, tp.Index(i))...)
		}
	}
	pp := p.Child("preferredDuringSchedulingIgnoredDuringExecution")
	if typ == PickAllPlacementType && len(a.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
		errs = append(errs, field.Invalid(pp, "", "PreferredDuringSchedulingIgnoredDuringExecution will be ignored for placement policy type PickAll"))
	}
	for i, t := range a.PreferredDuringSchedulingIgnoredDuringExecution {
		check(t.Preference.LabelSelector, pp.Index(i).Child("preference", "labelSelector"), "preferred cluster selector")
		errs = append(errs, validatePreferredPropertyTerm(t.Preference, pp.Index(i).Child("preference"))...)
	}
	return errs
}

func validateTolerations(ts []Toleration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[Toleration]bool{}
	for i, t := range ts {
		tp := p.Index(i)
		if t.Key != "" {
			for _, msg := range validation.IsQualifiedName(t.Key) {
				errs = append(errs, field.Invalid(tp.Child("key"), t.Key, msg))
			}
		}
		// The operator's values, a value with Exists and an empty key
		// with Equal are the CRD's enum and CEL rules.
		if t.Operator != TolerationOpExists {
			for _, msg := range validation.IsValidLabelValue(t.Value) {
				errs = append(errs, field.Invalid(tp.Child("value"), t.Value, msg))
			}
		}
		norm := t
		if norm.Operator == "" {
			norm.Operator = TolerationOpEqual
		}
		if seen[norm] {
			errs = append(errs, field.Invalid(tp, fmt.Sprintf("%+v", t), "toleration already exists, tolerations must be unique"))
		}
		seen[norm] = true
	}
	return errs
}

func validateRolloutStrategy(st *RolloutStrategy, p *field.Path) field.ErrorList {
	// The strategy's and the apply strategy's enums and the bound of
	// unavailablePeriodSeconds are the CRD's.
	var errs field.ErrorList
	if ru := st.RollingUpdate; ru != nil {
		rp := p.Child("rollingUpdate")
		if st.Type == ExternalRolloutStrategyType {
			errs = append(errs, field.Invalid(rp, "", MsgExternalNoRollingUpdate))
		}
		for name, v := range map[string]*intstr.IntOrString{"maxUnavailable": ru.MaxUnavailable, "maxSurge": ru.MaxSurge} {
			if v == nil {
				continue
			}
			n, err := intstr.GetScaledValueFromIntOrPercent(v, 10, true)
			switch {
			case err != nil:
				errs = append(errs, field.Invalid(rp.Child(name), v.String(), fmt.Sprintf("%s `%s` is invalid: %v", name, v.String(), err)))
			case n < 0:
				errs = append(errs, field.Invalid(rp.Child(name), v.String(), fmt.Sprintf("%s must be greater than or equal to 0, got `%s`", name, v.String())))
			}
		}
	}
	return errs
}

// ---- approval requests and member clusters ----

// ValidateApprovalRequest checks a ClusterApprovalRequest or ApprovalRequest.
func ValidateApprovalRequest(a *ApprovalRequest) field.ErrorList {
	errs := ValidateObjectMeta(a.Kind, &a.ObjectMeta)
	spec := field.NewPath("spec")
	if a.Spec.TargetUpdateRun == "" {
		errs = append(errs, field.Required(spec.Child("parentStageRollout"), ""))
	}
	if a.Spec.TargetStage == "" {
		errs = append(errs, field.Required(spec.Child("targetStage"), ""))
	}
	return errs
}

// ValidateMemberCluster checks a MemberCluster. Its name must be a DNS-1123
// label: it becomes part of binding names and PickFixed lists (≤ 63).
func ValidateMemberCluster(m *MemberCluster) field.ErrorList {
	errs := ValidateObjectMeta(m.Kind, &m.ObjectMeta)
	if m.Name != "" && len(validation.IsDNS1123Subdomain(m.Name)) == 0 {
		for _, msg := range validation.IsDNS1123Label(m.Name) {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), m.Name, msg))
		}
	}
	tp := field.NewPath("spec", "taints")
	seen := map[Taint]bool{}
	for i, t := range m.Spec.Taints {
		p := tp.Index(i)
		for _, msg := range validation.IsQualifiedName(t.Key) {
			errs = append(errs, field.Invalid(p.Child("key"), t.Key, msg))
		}
		for _, msg := range validation.IsValidLabelValue(t.Value) {
			errs = append(errs, field.Invalid(p.Child("value"), t.Value, msg))
		}
		if seen[t] {
			errs = append(errs, field.Invalid(p, fmt.Sprintf("%+v", t), "taints must be unique"))
		}
		seen[t] = true
	}
	if d, ok := m.Annotations[DriverAnnotation]; ok && d != DriverSimulated && d != DriverWork && !strings.HasPrefix(d, DriverKubeconfigPrefix) {
		errs = append(errs, field.NotSupported(field.NewPath("metadata", "annotations").Key(DriverAnnotation), d,
			[]string{DriverSimulated, DriverKubeconfigPrefix + "<context>", DriverWork}))
	}
	errs = append(errs, validatePropertyAnnotations(m.Annotations)...)
	if v, ok := m.Annotations[SimAvailableAfterAnnotation]; ok {
		if d, err := time.ParseDuration(v); err != nil || d < 0 {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "annotations").Key(SimAvailableAfterAnnotation), v,
				"must be a non-negative duration such as 30s"))
		}
	}
	return errs
}

// requireTerms refuses a cluster selector without clusterSelectorTerms
// (`clusterSelector: {}`), a required field of KubeFleet's schema: the API
// server of a Kubernetes hub refuses it, so the embedded hub must too. An
// empty list (`clusterSelectorTerms: []`) is present and allowed.
func requireTerms(cs *ClusterSelector, p *field.Path) field.ErrorList {
	if cs.ClusterSelectorTerms == nil {
		return field.ErrorList{field.Required(p, "")}
	}
	return nil
}
