package crdschema_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	crdfiles "github.com/gitfleet/gitfleet/config/crd"
	"github.com/gitfleet/gitfleet/internal/crdschema"
)

func object(t *testing.T, text string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(text), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func version(t *testing.T, group, kind string) *crdschema.Version {
	t.Helper()
	v, ok := crdschema.Fleet().For(schema.GroupVersionKind{Group: group, Version: "v1beta1", Kind: kind})
	if !ok {
		t.Fatalf("no schema for %s", kind)
	}
	return v
}

const run = `apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateRun
metadata: {name: run}
spec: {placementName: p, stagedRolloutStrategyName: s, state: %s}
`

// TestTransitionRulesSeeOldSelf: a CEL rule with oldSelf refuses the
// update with the rule's message and field path, and the create alone
// passes.
func TestTransitionRulesSeeOldSelf(t *testing.T) {
	v := version(t, "placement.kubernetes-fleet.io", "ClusterStagedUpdateRun")
	old := object(t, strings.Replace(run, "%s", "Run", 1))
	cur := object(t, strings.Replace(run, "%s", "Initialize", 1))
	if errs := v.ValidateCreate(cur); len(errs) > 0 {
		t.Fatalf("create refused: %v", errs)
	}
	errs := v.ValidateUpdate(cur, old)
	want := "spec: Invalid value: invalid state transition: cannot transition from Run to Initialize"
	if len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("update refused with %v; want %s", errs, want)
	}
}

// TestUnknownFieldsAndDefaults: pruning names the undeclared fields and
// defaulting sets the schema's defaults.
func TestUnknownFieldsAndDefaults(t *testing.T) {
	v := version(t, "placement.kubernetes-fleet.io", "ClusterStagedUpdateRun")
	obj := object(t, `apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateRun
metadata: {name: run, bogus: 1}
spec: {placementName: p, stagedRolloutStrategyName: s, extra: true}
`)
	got := v.Prune(obj)
	if strings.Join(got, ",") != "metadata.bogus,spec.extra" {
		t.Errorf("unknown fields %v; want metadata.bogus, spec.extra", got)
	}
	v.Default(obj)
	t.Logf("%v", obj)
}

// BenchmarkLoad compiles config/crd (every served version, CEL programs
// included): what each process that validates pays once.
func BenchmarkLoad(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		s, err := crdschema.Load(crdfiles.Files)
		if err == nil {
			err = s.Compile()
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// TestEveryCRDCompiles: every served version of config/crd is a
// structural schema whose CEL rules compile.
func TestEveryCRDCompiles(t *testing.T) {
	s, err := crdschema.Load(crdfiles.Files)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Compile(); err != nil {
		t.Fatal(err)
	}
}

// testCRD has what config/crd does not have yet, to show crdschema applies
// it: a default, a CEL rule with a message and field path, a transition
// rule, an enum and a bound.
const testCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          apiVersion: {type: string}
          kind: {type: string}
          metadata: {type: object}
          spec:
            type: object
            properties:
              mode: {type: string, default: Auto, enum: [Auto, Manual]}
              size: {type: integer, maximum: 10}
              owner: {type: string}
            x-kubernetes-validations:
            - rule: "self.mode != 'Manual' || has(self.owner)"
              message: a Manual widget needs an owner
              fieldPath: .owner
            - rule: "!has(oldSelf.owner) || self.owner == oldSelf.owner"
              message: owner is immutable
`

// TestATestCRDsDefaultsAndRules: defaulting, the OpenAPI checks and the
// CEL rules (with oldSelf on update) of a CRD with all of them.
func TestATestCRDsDefaultsAndRules(t *testing.T) {
	s, err := crdschema.Load(fstest.MapFS{"widgets.yaml": {Data: []byte(testCRD)}})
	if err != nil {
		t.Fatal(err)
	}
	v, ok := s.For(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
	if !ok {
		t.Fatal("no Widget")
	}
	widget := func(spec string) map[string]any {
		obj := object(t, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: "+spec+"\n")
		v.Prune(obj)
		v.Default(obj)
		return obj
	}
	if got := widget("{}")["spec"].(map[string]any)["mode"]; got != "Auto" {
		t.Errorf("mode defaulted to %v; want Auto", got)
	}
	for _, tc := range []struct{ spec, want string }{
		{"{mode: Manual}", "spec.owner: Invalid value: a Manual widget needs an owner"},
		{"{mode: Sometimes}", `spec.mode: Unsupported value: "Sometimes": supported values: "Auto", "Manual"`},
		{"{size: 11}", "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10"},
	} {
		errs := v.ValidateCreate(widget(tc.spec))
		if len(errs) == 0 || errs[0].Error() != tc.want {
			t.Errorf("%s: refused with %v; want %s", tc.spec, errs, tc.want)
		}
	}
	old, cur := widget("{owner: a}"), widget("{owner: b}")
	if errs := v.ValidateUpdate(cur, old); len(errs) != 1 || errs[0].Error() != "spec: Invalid value: owner is immutable" {
		t.Errorf("update refused with %v; want spec: Invalid value: owner is immutable", errs)
	}
	if errs := v.ValidateUpdate(old, old); len(errs) != 0 {
		t.Errorf("an unchanged widget refused: %v", errs)
	}
}

// TestSkippedRulesNotedOnlyWithRules: an error that makes the API server
// skip the CEL rules (an unsupported enum value, a missing required field)
// comes with "some validation rules were not checked" only when the schema
// has rules to skip, as its strategy adds it only with a CEL validator.
func TestSkippedRulesNotedOnlyWithRules(t *testing.T) {
	const skipped = "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"
	withoutRules, _, _ := strings.Cut(testCRD, "            x-kubernetes-validations:")
	for _, tc := range []struct {
		name, crd string
		want      []string
	}{
		{"with rules", testCRD, []string{`spec.mode: Unsupported value: "Sometimes": supported values: "Auto", "Manual"`, "<nil>: Invalid value: null: " + skipped}},
		{"without rules", withoutRules, []string{`spec.mode: Unsupported value: "Sometimes": supported values: "Auto", "Manual"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := crdschema.Load(fstest.MapFS{"widgets.yaml": {Data: []byte(tc.crd)}})
			if err != nil {
				t.Fatal(err)
			}
			v, ok := s.For(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
			if !ok {
				t.Fatal("no Widget")
			}
			obj := object(t, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {mode: Sometimes}\n")
			old := object(t, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {mode: Auto}\n")
			for op, errs := range map[string][]string{
				"create": errorStrings(v.ValidateCreate(obj)),
				"update": errorStrings(v.ValidateUpdate(obj, old)),
			} {
				if strings.Join(errs, "\n") != strings.Join(tc.want, "\n") {
					t.Errorf("%s refused with\n  %s\nwant\n  %s", op, strings.Join(errs, "\n  "), strings.Join(tc.want, "\n  "))
				}
			}
		})
	}
}

func errorStrings(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}
