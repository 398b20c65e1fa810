package render

import (
	"errors"
	"fmt"
	"testing"
	"testing/fstest"
)

// A careless fleet kind or version is refused with advice that fits it: a
// misspelt kind in any fleet group or gitfleet's names the nearest kind
// (with its apiVersion when it lives elsewhere), a right kind at a wrong
// version names the versions it is read at, and a right kind is read.
func TestCarelessFleetKindsAreRefusedWithTheNearestKindOrVersion(t *testing.T) {
	const placement, cluster, gitfleet = "placement.kubernetes-fleet.io", "cluster.kubernetes-fleet.io", "gitfleet.io"
	for _, tc := range []struct {
		name, apiVersion, kind string
		field, message         string // the refusal; none when empty
	}{
		{"misspelt gitfleet kind", gitfleet + "/v1alpha1", "RolloutWindw", "kind",
			`no matches for kind "RolloutWindw" in version "gitfleet.io/v1alpha1" (did you mean RolloutWindow?)`},
		{"gitfleet kind in the wrong case", gitfleet + "/v1alpha1", "rolloutwindow", "kind",
			`no matches for kind "rolloutwindow" in version "gitfleet.io/v1alpha1" (did you mean RolloutWindow?)`},
		{"misspelt gitfleet kind at a version gitfleet.io does not have", gitfleet + "/v1beta1", "RolloutWindw", "kind",
			`no matches for kind "RolloutWindw" in version "gitfleet.io/v1beta1" (did you mean RolloutWindow, apiVersion gitfleet.io/v1alpha1?)`},
		{"misspelt placement kind at v1beta1", placement + "/v1beta1", "ClusterStagedUpdateRn", "kind",
			`no matches for kind "ClusterStagedUpdateRn" in version "placement.kubernetes-fleet.io/v1beta1" (did you mean ClusterStagedUpdateRun?)`},
		{"misspelt placement kind at v1", placement + "/v1", "ResourcePlacment", "kind",
			`no matches for kind "ResourcePlacment" in version "placement.kubernetes-fleet.io/v1" (did you mean ResourcePlacement?)`},
		{"misspelt override at v1alpha1", placement + "/v1alpha1", "ClusterResourceOveride", "kind",
			`no matches for kind "ClusterResourceOveride" in version "placement.kubernetes-fleet.io/v1alpha1" (did you mean ClusterResourceOverride?)`},
		{"misspelt member cluster", cluster + "/v1beta1", "MemberClustr", "kind",
			`no matches for kind "MemberClustr" in version "cluster.kubernetes-fleet.io/v1beta1" (did you mean MemberCluster?)`},
		{"misspelt kind of another fleet group", cluster + "/v1", "RolloutWindows", "kind",
			`no matches for kind "RolloutWindows" in version "cluster.kubernetes-fleet.io/v1" (did you mean RolloutWindow, apiVersion gitfleet.io/v1alpha1?)`},
		{"right kind in another fleet group", gitfleet + "/v1alpha1", "ClusterStagedUpdateStrategy", "kind",
			`no matches for kind "ClusterStagedUpdateStrategy" in version "gitfleet.io/v1alpha1" (ClusterStagedUpdateStrategy is served as placement.kubernetes-fleet.io/v1beta1, placement.kubernetes-fleet.io/v1)`},
		{"a kind no fleet group has", placement + "/v1beta1", "Deployment", "kind",
			`no matches for kind "Deployment" in version "placement.kubernetes-fleet.io/v1beta1"`},
		{"a kind no fleet group has at a version none serves", placement + "/v2", "Deployment", "kind",
			`no matches for kind "Deployment" in version "placement.kubernetes-fleet.io/v2": the API group "placement.kubernetes-fleet.io" has no version "v2"`},
		{"RolloutWindow at the fleet's version", gitfleet + "/v1beta1", "RolloutWindow", "apiVersion",
			"gitfleet.io/v1beta1 is not supported by gitfleet (use gitfleet.io/v1alpha1)"},
		{"RolloutWindow at v1", gitfleet + "/v1", "RolloutWindow", "apiVersion",
			"gitfleet.io/v1 is not supported by gitfleet (use gitfleet.io/v1alpha1)"},
		{"a run at v1alpha1", placement + "/v1alpha1", "ClusterStagedUpdateRun", "apiVersion",
			"placement.kubernetes-fleet.io/v1alpha1 is not supported by gitfleet (use placement.kubernetes-fleet.io/v1beta1 or placement.kubernetes-fleet.io/v1)"},
		{"an override at v2", placement + "/v2", "ResourceOverride", "apiVersion",
			"placement.kubernetes-fleet.io/v2 is not supported by gitfleet (use placement.kubernetes-fleet.io/v1beta1, placement.kubernetes-fleet.io/v1 or placement.kubernetes-fleet.io/v1alpha1)"},
		{"RolloutWindow", gitfleet + "/v1alpha1", "RolloutWindow", "", ""},
		{"MemberCluster at v1", cluster + "/v1", "MemberCluster", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata:\n  name: x\n  namespace: ns\n", tc.apiVersion, tc.kind)
			if tc.kind == "MemberCluster" || tc.kind == "RolloutWindow" {
				doc = fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata:\n  name: x\n", tc.apiVersion, tc.kind)
			}
			_, err := Render(fstest.MapFS{"x.yaml": {Data: []byte(doc)}}, Options{})
			var refused *RefusedError
			if !errors.As(err, &refused) {
				if tc.message != "" {
					t.Fatalf("%v; want the commit refused at %s: %s", err, tc.field, tc.message)
				}
				return
			}
			for _, e := range refused.Errors {
				if e.Field == "apiVersion" || e.Field == "kind" {
					if tc.message == "" || e.Field != tc.field || e.Message != tc.message {
						t.Errorf("refused at %s: %s\n want at %s: %s", e.Field, e.Message, tc.field, tc.message)
					}
					return
				}
			}
			if tc.message != "" {
				t.Errorf("refused with %v; want at %s: %s", refused.Errors, tc.field, tc.message)
			}
		})
	}
}
