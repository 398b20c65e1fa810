package render

import (
	"bytes"
	"testing"

	"sigs.k8s.io/yaml"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/golden"
)

// Overrides decode in v1beta1 and in v1alpha1 (KubeFleet's examples) into
// v1beta1 objects with the CRD defaults applied; the golden file shows them
// as a status file would.
func TestRenderDecodesOverridesInBothVersions(t *testing.T) {
	c := renderDir(t, "testdata/overrides", Options{})
	if len(c.Errors) != 0 {
		t.Fatalf("errors: %v", c.Errors)
	}
	if len(c.ClusterResourceOverrides) != 1 || len(c.ResourceOverrides) != 1 {
		t.Fatalf("got %d cluster resource overrides and %d resource overrides, want 1 and 1",
			len(c.ClusterResourceOverrides), len(c.ResourceOverrides))
	}
	ro := c.ResourceOverrides[0]
	if ro.APIVersion != fleet.PlacementAPIVersion {
		t.Errorf("v1alpha1 ResourceOverride reads as %s, want %s", ro.APIVersion, fleet.PlacementAPIVersion)
	}
	if src := c.Sources[ObjectRef{Group: fleet.PlacementGroup, Kind: fleet.KindResourceOverride, Namespace: "app", Name: "settings"}]; src != (Source{File: "overrides.yaml", Line: 24}) {
		t.Errorf("source of the ResourceOverride = %+v", src)
	}
	var out bytes.Buffer
	for _, o := range []any{c.ClusterResourceOverrides[0], ro} {
		b, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("---\n")
		out.Write(b)
	}
	golden.Assert(t, "overrides.golden.yaml", out.Bytes())
}
