package simulate

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// TestOverridesInsideEnvelopesReachTheirClusters runs KubeFleet's
// examples/envelopes/override-inside-envelope.yaml (its placements rolled
// out by staged runs rather than RollingUpdate): the runs freeze the
// overrides that select the wrapped Deployment and ClusterRole, and each
// member receives what the envelopes wrap, overridden on the canary
// cluster only, and never an envelope.
func TestOverridesInsideEnvelopesReachTheirClusters(t *testing.T) {
	example, err := os.ReadFile("../../internal/crd/testdata/accepted/resourceenvelope-override-inside-envelope.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"envelopes.yaml": []byte(strings.ReplaceAll(string(example), "type: RollingUpdate", "type: External")),
		"fleet.yaml": []byte(`apiVersion: cluster.kubernetes-fleet.io/v1beta1
kind: MemberCluster
metadata:
  name: canary1
  labels: {env: canary}
  annotations: {gitfleet.io/driver: simulated}
---
apiVersion: cluster.kubernetes-fleet.io/v1beta1
kind: MemberCluster
metadata:
  name: prod1
  labels: {env: prod}
  annotations: {gitfleet.io/driver: simulated}
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateStrategy
metadata: {name: all}
spec:
  stages: [{name: all, labelSelector: {}}]
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateRun
metadata: {name: reader-role}
spec: {placementName: reader-role, stagedRolloutStrategyName: all, state: Run}
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: StagedUpdateStrategy
metadata: {name: all, namespace: app}
spec:
  stages: [{name: all, labelSelector: {}}]
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: StagedUpdateRun
metadata: {name: ingress, namespace: app}
spec: {placementName: ingress, stagedRolloutStrategyName: all, state: Run}
`),
	}
	res, err := Run(context.Background(), Options{Repo: newRepo(t, files)})
	if err != nil {
		t.Fatal(err)
	}
	for cluster, want := range map[string]struct {
		replicas int64
		verbs    string
	}{
		"canary1": {3, "[get list watch]"},
		"prod1":   {1, "[get list]"},
	} {
		d := received(t, res, cluster, "Deployment", "ingress")
		if got, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); got != want.replicas {
			t.Errorf("%s: Deployment replicas = %d, want %d", cluster, got, want.replicas)
		}
		role := received(t, res, cluster, "ClusterRole", "pod-reader")
		rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
		if got := fmt.Sprint(rules[0].(map[string]any)["verbs"]); got != want.verbs {
			t.Errorf("%s: ClusterRole verbs = %s, want %s", cluster, got, want.verbs)
		}
		sim, _ := res.Hub.Members().Simulated(cluster)
		for _, p := range sim.Placed() {
			for _, r := range p.Resources {
				if fleet.IsEnvelope(r) {
					t.Errorf("%s holds the envelope %s", cluster, r.GetName())
				}
			}
		}
	}
}
