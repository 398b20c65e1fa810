package crdschema_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
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
	want := "spec.state: Invalid value: invalid state transition: cannot transition from Run to Initialize"
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
