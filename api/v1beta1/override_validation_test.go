package v1beta1

import (
	"fmt"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func jsonValue(raw string) apiextensionsv1.JSON { return apiextensionsv1.JSON{Raw: []byte(raw)} }

func validPolicy() *OverridePolicy {
	return &OverridePolicy{OverrideRules: []OverrideRule{{
		ClusterSelector: &ClusterSelector{ClusterSelectorTerms: []ClusterSelectorTerm{
			{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}},
		}},
		JSONPatchOverrides: []JSONPatchOverride{{Operator: JSONPatchOverrideOpReplace, Path: "/data/level", Value: jsonValue(`"warn"`)}},
	}}}
}

func validCRO() *ClusterResourceOverride {
	o := &ClusterResourceOverride{
		TypeMeta:   metav1.TypeMeta{Kind: KindClusterResourceOverride},
		ObjectMeta: metav1.ObjectMeta{Name: "example-cro"},
		Spec: ClusterResourceOverrideSpec{
			Placement:                &PlacementRef{Name: "example-placement"},
			ClusterResourceSelectors: []ResourceSelectorTerm{{Group: "", Version: "v1", Kind: "Namespace", Name: "app"}},
			Policy:                   validPolicy(),
		},
	}
	SetDefaultsClusterResourceOverride(o)
	return o
}

func validRO() *ResourceOverride {
	o := &ResourceOverride{
		TypeMeta:   metav1.TypeMeta{Kind: KindResourceOverride},
		ObjectMeta: metav1.ObjectMeta{Name: "example-ro", Namespace: "app"},
		Spec: ResourceOverrideSpec{
			Placement:         &PlacementRef{Name: "example-placement", Scope: NamespaceScoped},
			ResourceSelectors: []ResourceSelector{{Group: "", Version: "v1", Kind: "ConfigMap", Name: "settings"}},
			Policy:            validPolicy(),
		},
	}
	SetDefaultsResourceOverride(o)
	return o
}

func TestSetDefaultsOverrides(t *testing.T) {
	cro := &ClusterResourceOverride{Spec: ClusterResourceOverrideSpec{
		Placement:                &PlacementRef{Name: "p"},
		ClusterResourceSelectors: []ResourceSelectorTerm{{Version: "v1", Kind: "Namespace", Name: "app"}},
		Policy:                   &OverridePolicy{OverrideRules: []OverrideRule{{}, {OverrideType: DeleteOverrideType}}},
	}}
	SetDefaultsClusterResourceOverride(cro)
	if cro.Spec.Placement.Scope != ClusterScoped || cro.Spec.ClusterResourceSelectors[0].SelectionScope != NamespaceWithResources ||
		cro.Spec.Policy.OverrideRules[0].OverrideType != JSONPatchOverrideType || cro.Spec.Policy.OverrideRules[1].OverrideType != DeleteOverrideType {
		t.Errorf("defaults not applied as the CRD does: %+v", cro.Spec)
	}
	ro := &ResourceOverride{}
	SetDefaultsResourceOverride(ro) // nil placement and policy stay nil
	if ro.Spec.Placement != nil || ro.Spec.Policy != nil {
		t.Errorf("defaulting invented fields: %+v", ro.Spec)
	}
}

// Rules and messages shared by both kinds live in the policy; they are
// exercised through a ClusterResourceOverride.
func TestValidateClusterResourceOverride(t *testing.T) {
	if errs := ValidateClusterResourceOverride(validCRO()); len(errs) != 0 {
		t.Fatalf("valid override rejected: %v", errs)
	}
	patch := func(o *ClusterResourceOverride) *JSONPatchOverride {
		return &o.Spec.Policy.OverrideRules[0].JSONPatchOverrides[0]
	}
	const patchPath = "spec.policy.overrideRules[0].jsonPatchOverrides[0]"
	for _, tc := range []struct {
		name   string
		mutate func(*ClusterResourceOverride)
		want   want
	}{
		{"placement name required", func(o *ClusterResourceOverride) { o.Spec.Placement.Name = "" },
			want{"spec.placement.name", field.ErrorTypeRequired, ""}},
		{"placement scope enum", func(o *ClusterResourceOverride) { o.Spec.Placement.Scope = "Fleet" },
			want{"spec.placement.scope", field.ErrorTypeNotSupported, `supported values: "Cluster", "Namespaced"`}},
		{"selectors required", func(o *ClusterResourceOverride) { o.Spec.ClusterResourceSelectors = nil },
			want{"spec.clusterResourceSelectors", field.ErrorTypeRequired, ""}},
		{"at most 20 selectors", func(o *ClusterResourceOverride) {
			for i := 0; i < 20; i++ {
				o.Spec.ClusterResourceSelectors = append(o.Spec.ClusterResourceSelectors,
					ResourceSelectorTerm{Version: "v1", Kind: "Namespace", Name: fmt.Sprintf("ns%d", i), SelectionScope: NamespaceWithResources})
			}
		}, want{"spec.clusterResourceSelectors", field.ErrorTypeTooMany, "must have at most 20 items"}},
		{"label selector refused", func(o *ClusterResourceOverride) {
			o.Spec.ClusterResourceSelectors[0].Name = ""
			o.Spec.ClusterResourceSelectors[0].LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
		}, want{"spec.clusterResourceSelectors[0].labelSelector", field.ErrorTypeInvalid,
			"label selector is not supported for resource selection {Group: Version:v1 Kind:Namespace Name: LabelSelector:&LabelSelector{MatchLabels:map[string]string{team: a,},MatchExpressions:[]LabelSelectorRequirement{},} SelectionScope:NamespaceWithResources}"}},
		{"name required", func(o *ClusterResourceOverride) { o.Spec.ClusterResourceSelectors[0].Name = "" },
			want{"spec.clusterResourceSelectors[0].name", field.ErrorTypeRequired,
				"resource name is required for resource selection {Group: Version:v1 Kind:Namespace Name: LabelSelector:nil SelectionScope:NamespaceWithResources}"}},
		{"duplicate selector", func(o *ClusterResourceOverride) {
			o.Spec.ClusterResourceSelectors = append(o.Spec.ClusterResourceSelectors, o.Spec.ClusterResourceSelectors[0])
		}, want{"spec.clusterResourceSelectors[1]", field.ErrorTypeInvalid,
			"resource selector {Group: Version:v1 Kind:Namespace Name:app LabelSelector:nil SelectionScope:NamespaceWithResources} already exists, and must be unique"}},
		{"policy required", func(o *ClusterResourceOverride) { o.Spec.Policy = nil },
			want{"spec.policy", field.ErrorTypeRequired, ""}},
		{"rules required", func(o *ClusterResourceOverride) { o.Spec.Policy.OverrideRules = nil },
			want{"spec.policy.overrideRules", field.ErrorTypeRequired, ""}},
		{"at most 20 rules", func(o *ClusterResourceOverride) {
			for i := 0; i < 20; i++ {
				o.Spec.Policy.OverrideRules = append(o.Spec.Policy.OverrideRules, OverrideRule{OverrideType: DeleteOverrideType})
			}
		}, want{"spec.policy.overrideRules", field.ErrorTypeTooMany, "must have at most 20 items"}},
		{"cluster selector term needs a labelSelector", func(o *ClusterResourceOverride) {
			o.Spec.Policy.OverrideRules[0].ClusterSelector.ClusterSelectorTerms[0].LabelSelector = nil
		}, want{"spec.policy.overrideRules[0].clusterSelector.clusterSelectorTerms[0]", field.ErrorTypeInvalid,
			"invalid clusterSelector {LabelSelector:nil PropertySelector:<nil> PropertySorter:<nil>}: labelSelector is required"}},
		{"invalid cluster label selector", func(o *ClusterResourceOverride) {
			o.Spec.Policy.OverrideRules[0].ClusterSelector.ClusterSelectorTerms[0].LabelSelector = &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Maybe"}}}
		}, want{"spec.policy.overrideRules[0].clusterSelector.clusterSelectorTerms[0].labelSelector", field.ErrorTypeInvalid,
			`the labelSelector in cluster selector &LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:env,Operator:Maybe,Values:[],},},} is invalid: "Maybe" is not a valid label selector operator`}},
		{"a cluster selector needs clusterSelectorTerms, as the CRD schema says", func(o *ClusterResourceOverride) {
			o.Spec.Policy.OverrideRules[0].ClusterSelector = &ClusterSelector{}
		}, want{"spec.policy.overrideRules[0].clusterSelector.clusterSelectorTerms", field.ErrorTypeRequired, ""}},
		{"at most 10 cluster selector terms", func(o *ClusterResourceOverride) {
			terms := &o.Spec.Policy.OverrideRules[0].ClusterSelector.ClusterSelectorTerms
			for i := 0; i < 10; i++ {
				*terms = append(*terms, (*terms)[0])
			}
		}, want{"spec.policy.overrideRules[0].clusterSelector.clusterSelectorTerms", field.ErrorTypeTooMany, "must have at most 10 items"}},
		{"override type enum", func(o *ClusterResourceOverride) { o.Spec.Policy.OverrideRules[0].OverrideType = "Patch" },
			want{"spec.policy.overrideRules[0].overrideType", field.ErrorTypeNotSupported, `supported values: "JSONPatch", "Delete"`}},
		{"Delete with patches", func(o *ClusterResourceOverride) { o.Spec.Policy.OverrideRules[0].OverrideType = DeleteOverrideType },
			want{"spec.policy.overrideRules[0].jsonPatchOverrides", field.ErrorTypeForbidden,
				"invalid JSONPatchOverrides: JSONPatchOverrides cannot be set when the override type is Delete"}},
		{"JSONPatch without patches", func(o *ClusterResourceOverride) { o.Spec.Policy.OverrideRules[0].JSONPatchOverrides = nil },
			want{"spec.policy.overrideRules[0].jsonPatchOverrides", field.ErrorTypeRequired,
				"invalid JSONPatchOverrides: JSONPatchOverrides cannot be empty"}},
		{"at most 20 patches", func(o *ClusterResourceOverride) {
			ps := &o.Spec.Policy.OverrideRules[0].JSONPatchOverrides
			for i := 0; i < 20; i++ {
				*ps = append(*ps, (*ps)[0])
			}
		}, want{"spec.policy.overrideRules[0].jsonPatchOverrides", field.ErrorTypeTooMany, "must have at most 20 items"}},
		{"op enum", func(o *ClusterResourceOverride) { patch(o).Operator = "move" },
			want{patchPath + ".op", field.ErrorTypeNotSupported, `supported values: "add", "remove", "replace"`}},
		{"op required", func(o *ClusterResourceOverride) { patch(o).Operator = "" },
			want{patchPath + ".op", field.ErrorTypeRequired, ""}},
		{"path required", func(o *ClusterResourceOverride) { patch(o).Path = "" },
			want{patchPath + ".path", field.ErrorTypeInvalid, `invalid JSONPatchOverride {replace  {"warn"}}: path cannot be empty`}},
		{"path must start with a slash", func(o *ClusterResourceOverride) { patch(o).Path = "data/level" },
			want{patchPath + ".path", field.ErrorTypeInvalid, `invalid JSONPatchOverride {replace data/level {"warn"}}: path must start with /`}},
		{"kind is forbidden", func(o *ClusterResourceOverride) { patch(o).Path = "/kind" },
			want{patchPath + ".path", field.ErrorTypeInvalid, `invalid JSONPatchOverride {replace /kind {"warn"}}: cannot override typeMeta fields`}},
		{"apiVersion is forbidden", func(o *ClusterResourceOverride) { patch(o).Path = "/apiVersion" },
			want{patchPath + ".path", field.ErrorTypeInvalid, `invalid JSONPatchOverride {replace /apiVersion {"warn"}}: cannot override typeMeta fields`}},
		{"metadata as a whole is forbidden", func(o *ClusterResourceOverride) { patch(o).Path = "/metadata" },
			want{patchPath + ".path", field.ErrorTypeInvalid, `invalid JSONPatchOverride {replace /metadata {"warn"}}: cannot override field metadata`}},
		{"metadata.name is forbidden", func(o *ClusterResourceOverride) { patch(o).Path = "/metadata/name" },
			want{patchPath + ".path", field.ErrorTypeInvalid, `invalid JSONPatchOverride {replace /metadata/name {"warn"}}: cannot override metadata fields except annotations and labels`}},
		{"metadata.namespace is forbidden", func(o *ClusterResourceOverride) { patch(o).Path = "/metadata/namespace" },
			want{patchPath + ".path", field.ErrorTypeInvalid, `invalid JSONPatchOverride {replace /metadata/namespace {"warn"}}: cannot override metadata fields except annotations and labels`}},
		{"status is forbidden", func(o *ClusterResourceOverride) { patch(o).Path = "/status/phase" },
			want{patchPath + ".path", field.ErrorTypeInvalid, `invalid JSONPatchOverride {replace /status/phase {"warn"}}: cannot override status fields`}},
		{"empty path segment", func(o *ClusterResourceOverride) { patch(o).Path = "/data//level" },
			want{patchPath + ".path", field.ErrorTypeInvalid, `invalid JSONPatchOverride {replace /data//level {"warn"}}: path cannot contain empty string`}},
		{"remove with a value", func(o *ClusterResourceOverride) { patch(o).Operator = JSONPatchOverrideOpRemove },
			want{patchPath + ".value", field.ErrorTypeInvalid, `invalid JSONPatchOverride {remove /data/level {"warn"}}: remove operation cannot have value`}},
		{"namespace on a cluster-scoped override", func(o *ClusterResourceOverride) { o.Namespace = "app" },
			want{"metadata.namespace", field.ErrorTypeForbidden, ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := validCRO()
			tc.mutate(o)
			checkOne(t, ValidateClusterResourceOverride(o), tc.want)
		})
	}
}

func TestValidateClusterResourceOverrideAccepts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*ClusterResourceOverride)
	}{
		{"no placement (applies to the next rollout of any placement)", func(o *ClusterResourceOverride) { o.Spec.Placement = nil }},
		{"labels may be patched", func(o *ClusterResourceOverride) {
			o.Spec.Policy.OverrideRules[0].JSONPatchOverrides[0] = JSONPatchOverride{Operator: JSONPatchOverrideOpAdd, Path: "/metadata/labels/env", Value: jsonValue(`"${MEMBER-CLUSTER-LABEL-KEY-env}"`)}
		}},
		{"annotations may be removed", func(o *ClusterResourceOverride) {
			o.Spec.Policy.OverrideRules[0].JSONPatchOverrides[0] = JSONPatchOverride{Operator: JSONPatchOverrideOpRemove, Path: "/metadata/annotations/note"}
		}},
		{"Delete without patches", func(o *ClusterResourceOverride) {
			o.Spec.Policy.OverrideRules[0] = OverrideRule{ClusterSelector: &ClusterSelector{ClusterSelectorTerms: []ClusterSelectorTerm{}}, OverrideType: DeleteOverrideType}
		}},
		{"no cluster selector (matches no cluster)", func(o *ClusterResourceOverride) { o.Spec.Policy.OverrideRules[0].ClusterSelector = nil }},
		{"undefaulted override type is JSONPatch", func(o *ClusterResourceOverride) { o.Spec.Policy.OverrideRules[0].OverrideType = "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := validCRO()
			tc.mutate(o)
			if errs := ValidateClusterResourceOverride(o); len(errs) != 0 {
				t.Errorf("rejected: %v", errs)
			}
		})
	}
}

func TestValidateResourceOverride(t *testing.T) {
	if errs := ValidateResourceOverride(validRO()); len(errs) != 0 {
		t.Fatalf("valid override rejected: %v", errs)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*ResourceOverride)
		want   want
	}{
		{"namespace required", func(o *ResourceOverride) { o.Namespace = "" },
			want{"metadata.namespace", field.ErrorTypeRequired, ""}},
		{"selectors required", func(o *ResourceOverride) { o.Spec.ResourceSelectors = nil },
			want{"spec.resourceSelectors", field.ErrorTypeRequired, ""}},
		{"selector name required", func(o *ResourceOverride) { o.Spec.ResourceSelectors[0].Name = "" },
			want{"spec.resourceSelectors[0].name", field.ErrorTypeRequired, ""}},
		{"selector kind required", func(o *ResourceOverride) { o.Spec.ResourceSelectors[0].Kind = "" },
			want{"spec.resourceSelectors[0].kind", field.ErrorTypeRequired, ""}},
		{"duplicate selector", func(o *ResourceOverride) {
			o.Spec.ResourceSelectors = append(o.Spec.ResourceSelectors, o.Spec.ResourceSelectors[0])
		}, want{"spec.resourceSelectors[1]", field.ErrorTypeInvalid,
			"resource selector {Group: Version:v1 Kind:ConfigMap Name:settings} already exists, and must be unique"}},
		{"placement scope enum", func(o *ResourceOverride) { o.Spec.Placement.Scope = "Namespace" },
			want{"spec.placement.scope", field.ErrorTypeNotSupported, `supported values: "Cluster", "Namespaced"`}},
		{"forbidden path", func(o *ResourceOverride) {
			o.Spec.Policy.OverrideRules[0].JSONPatchOverrides[0].Path = "/metadata/name"
		},
			want{"spec.policy.overrideRules[0].jsonPatchOverrides[0].path", field.ErrorTypeInvalid,
				`invalid JSONPatchOverride {replace /metadata/name {"warn"}}: cannot override metadata fields except annotations and labels`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := validRO()
			tc.mutate(o)
			checkOne(t, ValidateResourceOverride(o), tc.want)
		})
	}
}

func TestValidateOverrideSelections(t *testing.T) {
	cro := func(name string, selected ...string) *ClusterResourceOverride {
		o := validCRO()
		o.Name, o.Spec.ClusterResourceSelectors = name, nil
		for _, ns := range selected {
			o.Spec.ClusterResourceSelectors = append(o.Spec.ClusterResourceSelectors,
				ResourceSelectorTerm{Version: "v1", Kind: "Namespace", Name: ns, SelectionScope: NamespaceWithResources})
		}
		return o
	}
	ro := func(namespace, name string, selected ...string) *ResourceOverride {
		o := validRO()
		o.Namespace, o.Name, o.Spec.ResourceSelectors = namespace, name, nil
		for _, cm := range selected {
			o.Spec.ResourceSelectors = append(o.Spec.ResourceSelectors, ResourceSelector{Version: "v1", Kind: "ConfigMap", Name: cm})
		}
		return o
	}
	t.Run("a namespace selected by two cluster resource overrides is reported on both", func(t *testing.T) {
		croErrs, roErrs := ValidateOverrideSelections([]*ClusterResourceOverride{cro("a", "app", "web"), cro("b", "db", "app"), cro("c", "other")}, nil)
		if len(roErrs) != 0 || len(croErrs) != 2 {
			t.Fatalf("got %v / %v, want errors on a and b only", croErrs, roErrs)
		}
		sel := "{Group: Version:v1 Kind:Namespace Name:app LabelSelector:nil SelectionScope:NamespaceWithResources}"
		checkOne(t, croErrs[0], want{"spec.clusterResourceSelectors[0]", field.ErrorTypeInvalid,
			"invalid resource selector " + sel + ": the resource has been selected by both a and b, which is not supported"})
		checkOne(t, croErrs[1], want{"spec.clusterResourceSelectors[1]", field.ErrorTypeInvalid,
			"invalid resource selector " + sel + ": the resource has been selected by both b and a, which is not supported"})
	})
	t.Run("resource overrides conflict only within a namespace", func(t *testing.T) {
		_, roErrs := ValidateOverrideSelections(nil, []*ResourceOverride{ro("app", "x", "settings"), ro("web", "y", "settings"), ro("app", "z", "settings")})
		if len(roErrs) != 2 || roErrs[1] != nil {
			t.Fatalf("got %v, want errors on x and z (app) only", roErrs)
		}
		checkOne(t, roErrs[2], want{"spec.resourceSelectors[0]", field.ErrorTypeInvalid,
			"invalid resource selector {Group: Version:v1 Kind:ConfigMap Name:settings}: the resource has been selected by both z and x, which is not supported"})
	})
	t.Run("at most 100 cluster resource overrides, the last in name order refused", func(t *testing.T) {
		var cros []*ClusterResourceOverride
		for i := 100; i >= 0; i-- {
			cros = append(cros, cro(fmt.Sprintf("cro-%03d", i), fmt.Sprintf("ns-%d", i)))
		}
		croErrs, _ := ValidateOverrideSelections(cros, nil)
		if len(croErrs) != 1 {
			t.Fatalf("got errors on %d overrides, want 1", len(croErrs))
		}
		checkOne(t, croErrs[0], want{"metadata.name", field.ErrorTypeForbidden,
			"clusterResourceOverride limit has been reached: at most 100 cluster resources can be created."})
		if cros[0].Name != "cro-100" {
			t.Fatalf("refused %s", cros[0].Name)
		}
	})
	t.Run("at most 100 resource overrides per namespace", func(t *testing.T) {
		var ros []*ResourceOverride
		for i := 0; i <= 100; i++ {
			ros = append(ros, ro("app", fmt.Sprintf("ro-%03d", i), fmt.Sprintf("cm-%d", i)), ro("web", fmt.Sprintf("ro-%03d", i), fmt.Sprintf("cm-%d", i)))
		}
		_, roErrs := ValidateOverrideSelections(nil, ros[:len(ros)-1]) // 101 in app, 100 in web
		if len(roErrs) != 1 || !strings.Contains(roErrs[200].ToAggregate().Error(), "resourceOverride limit has been reached: at most 100 resources can be created.") {
			t.Fatalf("got %v, want the 101st override of namespace app refused", roErrs)
		}
	})
}
