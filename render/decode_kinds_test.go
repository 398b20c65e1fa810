package render

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
)

// TestFleetObjectsAreReadAtTheVersionsKubeFleetServes: every fleet kind a
// person writes is read at v1beta1 and v1, the override kinds also at
// v1alpha1 (KubeFleet's examples); other versions of a kind its group has
// are refused at apiVersion, kinds the hub makes and kinds the group does
// not have at kind, and either refuses the commit whole.
func TestFleetObjectsAreReadAtTheVersionsKubeFleetServes(t *testing.T) {
	const placement, cluster = "placement.kubernetes-fleet.io", "cluster.kubernetes-fleet.io"
	for _, tc := range []struct {
		apiVersion, kind, namespace string
		field, message              string // the error; none when empty
	}{
		{placement + "/v1", "ClusterStagedUpdateStrategy", "", "", ""},
		{placement + "/v1beta1", "StagedUpdateStrategy", "ns", "", ""},
		{cluster + "/v1", "MemberCluster", "", "spec", ""},
		{placement + "/v1alpha1", "ClusterResourceOverride", "", "spec", ""},
		{placement + "/v1alpha1", "ClusterStagedUpdateStrategy", "", "apiVersion",
			placement + "/v1alpha1 is not supported by gitfleet (use " + placement + "/v1beta1 or " + placement + "/v1)"},
		{placement + "/v1alpha1", "ClusterResourceOverrideSnapshot", "", "apiVersion", placement + "/v1alpha1 is not supported by gitfleet"},
		{placement + "/v1alpha1", "Unknown", "", "kind", `no matches for kind "Unknown" in version "` + placement + `/v1alpha1"`},
		{placement + "/v2", "ClusterStagedUpdateStrategy", "", "apiVersion", placement + "/v2 is not supported by gitfleet"},
		{cluster + "/v1alpha1", "ClusterResourceOverride", "", "kind", "(ClusterResourceOverride is served as " + placement + "/v1beta1, "},
		{placement + "/v1", "Unknown", "", "kind", `no matches for kind "Unknown" in version "` + placement + `/v1"`},
		{placement + "/v1beta1", "MemberCluster", "", "kind", "(MemberCluster is served as " + cluster + "/v1beta1, " + cluster + "/v1)"},
		{cluster + "/v1beta1", "ClusterStagedUpdateStrategy", "", "kind", "(ClusterStagedUpdateStrategy is served as " + placement + "/v1beta1, "},
		{placement + "/v1beta1", "ClusterResourceSnapshot", "", "kind", "kind ClusterResourceSnapshot is not supported by gitfleet"},
		{placement + "/v1", "ResourceBinding", "ns", "kind", "kind ResourceBinding is not supported by gitfleet"},
		{placement + "/v1beta1", "ClusterSchedulingPolicySnapshot", "", "kind", "kind ClusterSchedulingPolicySnapshot is not supported by gitfleet"},
		{placement + "/v1beta1", "ClusterResourceOverrideSnapshot", "", "kind", "kind ClusterResourceOverrideSnapshot is not supported by gitfleet"},
	} {
		ns := ""
		if tc.namespace != "" {
			ns = "\n  namespace: " + tc.namespace
		}
		doc := fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata:\n  name: x%s\nspec:\n  stages:\n  - name: one\n", tc.apiVersion, tc.kind, ns)
		c, err := Render(fstest.MapFS{"x.yaml": {Data: []byte(doc)}}, Options{})
		var refused *RefusedError
		if errors.As(err, &refused) {
			if tc.message == "" || len(refused.Errors) != 1 || refused.Errors[0].Field != tc.field || !strings.Contains(refused.Errors[0].Message, tc.message) {
				t.Errorf("%s %s: refused: %v; want %s: %q", tc.apiVersion, tc.kind, err, tc.field, tc.message)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s %s: %v", tc.apiVersion, tc.kind, err)
		}
		switch {
		case tc.field == "" && len(c.Errors) > 0:
			t.Errorf("%s %s: %v; want it read", tc.apiVersion, tc.kind, c.Errors)
		case tc.field != "" && tc.message == "":
			// Read at this version: refused for its spec only.
			for _, e := range c.Errors {
				if e.Field == "apiVersion" || e.Field == "kind" {
					t.Errorf("%s %s: %v; want it read at this version", tc.apiVersion, tc.kind, e)
				}
			}
		case tc.message != "":
			t.Errorf("%s %s: rendered with %v; want the commit refused at %s: %s", tc.apiVersion, tc.kind, c.Errors, tc.field, tc.message)
		}
	}
}
