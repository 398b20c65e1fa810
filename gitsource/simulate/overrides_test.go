package simulate

import (
	"bytes"
	"context"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"

	"github.com/gitfleet/gitfleet/internal/testing/golden"
)

// envOverrides returns examples/overrides/overrides.yaml: the namespace
// labelled with the cluster's environment (a ClusterResourceOverride) and
// the canary clusters' own config value (a ResourceOverride).
func envOverrides(t testing.TB) []byte {
	t.Helper()
	data, err := os.ReadFile("../../examples/overrides/overrides.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// received returns what the simulated member holds of kind/name.
func received(t *testing.T, res *Result, cluster, kind, name string) *unstructured.Unstructured {
	t.Helper()
	sim, ok := res.Hub.Members().Simulated(cluster)
	if !ok {
		t.Fatalf("member %s received nothing", cluster)
	}
	for _, p := range sim.Placed() {
		for _, r := range p.Resources {
			if r.GetKind() == kind && r.GetName() == name {
				return r
			}
		}
	}
	t.Fatalf("member %s holds no %s %s", cluster, kind, name)
	return nil
}

func TestOverridesDeliverPerEnvironmentValuesAndLabels(t *testing.T) {
	files := quickstart(t)
	files["overrides.yaml"] = envOverrides(t)
	repo := newRepo(t, files)
	res, err := Run(context.Background(), Options{Repo: repo, Approve: true})
	if err != nil {
		t.Fatal(err)
	}
	for cluster, want := range map[string]struct{ env, value string }{
		"member1": {"canary", "canary-value-on-member1"},
		"member2": {"staging", "value1"},
		"member3": {"canary", "canary-value-on-member3"},
	} {
		ns := received(t, res, cluster, "Namespace", "test-namespace")
		if got := ns.GetLabels()["env"]; got != want.env {
			t.Errorf("%s: namespace label env = %q, want %q", cluster, got, want.env)
		}
		cm := received(t, res, cluster, "ConfigMap", "test-cm")
		if got, _, _ := unstructured.NestedString(cm.Object, "data", "key"); got != want.value {
			t.Errorf("%s: config value = %q, want %q", cluster, got, want.value)
		}
	}
	var out bytes.Buffer
	if err := WriteObjects(context.Background(), &out, res.Hub); err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "overrides-per-environment.yaml", out.Bytes())
	for _, want := range []string{
		"reason: OverriddenSucceeded",
		"message: Successfully applied the override rules on the resources",
		"- namespace-env-0",
		"name: config-per-env-0",
		"reason: UpdateRunSucceeded",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("simulate -o yaml lacks %q", want)
		}
	}
}

// A second placement (namespace other-namespace) with its own run.
var otherPlacement = map[string][]byte{
	"other.yaml": []byte(`apiVersion: v1
kind: Namespace
metadata:
  name: other-namespace
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: other-cm
  namespace: other-namespace
data:
  key: other
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourcePlacement
metadata:
  name: other-placement
spec:
  resourceSelectors:
    - group: ""
      kind: Namespace
      name: other-namespace
      version: v1
  policy:
    placementType: PickAll
  strategy:
    type: External
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateRun
metadata:
  name: other-run
spec:
  placementName: other-placement
  stagedRolloutStrategyName: example-strategy
  state: Run
`),
}

// Bad overrides fail only what they touch, with KubeFleet's words: a patch
// into a path that does not exist fails the cluster (Overridden=False, the
// member keeps what it had; as upstream, the run retries and reports Stuck,
// since the failure may be fixed); an override that patches a
// forbidden field is refused at admission with the webhook's message; an
// override whose rules match no cluster is recorded on none. The other
// placement's run succeeds.
func TestBadOverridesNeverStopOtherPlacements(t *testing.T) {
	files := quickstart(t)
	for k, v := range otherPlacement {
		files[k] = v
	}
	files["bad-overrides.yaml"] = []byte(`apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ResourceOverride
metadata:
  name: missing-path
  namespace: test-namespace
spec:
  resourceSelectors:
    - group: ""
      kind: ConfigMap
      name: test-cm
      version: v1
  policy:
    overrideRules:
      - clusterSelector:
          clusterSelectorTerms: []
        jsonPatchOverrides:
          - op: replace
            path: /data/no-such-key
            value: x
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourceOverride
metadata:
  name: forbidden-field
spec:
  clusterResourceSelectors:
    - group: ""
      kind: Namespace
      name: other-namespace
      version: v1
  policy:
    overrideRules:
      - clusterSelector:
          clusterSelectorTerms: []
        jsonPatchOverrides:
          - op: add
            path: /status/phase
            value: Terminating
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ResourceOverride
metadata:
  name: no-such-cluster
  namespace: other-namespace
spec:
  resourceSelectors:
    - group: ""
      kind: ConfigMap
      name: other-cm
      version: v1
  policy:
    overrideRules:
      - clusterSelector:
          clusterSelectorTerms:
            - labelSelector:
                matchLabels:
                  environment: nowhere
        jsonPatchOverrides:
          - op: replace
            path: /data/key
            value: never
`)
	repo := newRepo(t, files)
	res, err := Run(context.Background(), Options{Repo: repo, Approve: true})
	if err != nil {
		t.Fatal(err)
	}
	var errs []string
	for _, e := range res.ManifestErrors {
		errs = append(errs, e.Error())
	}
	wantErr := `bad-overrides.yaml:37: ClusterResourceOverride forbidden-field: spec.policy.overrideRules[0].jsonPatchOverrides[0].path: Invalid value: invalid JSONPatchOverride {add /status/phase {"Terminating"}}: cannot override status fields`
	if !strings.Contains(strings.Join(errs, "\n"), wantErr) {
		t.Errorf("manifest errors %q lack %q", errs, wantErr)
	}

	var out bytes.Buffer
	if err := WriteObjects(context.Background(), &out, res.Hub); err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "overrides-bad.yaml", out.Bytes())
	text := out.String()
	for _, want := range []string{
		"reason: OverriddenFailed",
		"message: The updateRun is stuck waiting for member2 cluster(s) in stage staging",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("simulate -o yaml lacks %q", want)
		}
	}
	bindings, err := res.Hub.ListBindings(context.Background(), keyOf("example-placement"))
	if err != nil {
		t.Fatal(err)
	}
	wantMsg := `Failed to apply the override rules on the resources: ResourceOverrideSnapshot "missing-path-0" failed to apply on ConfigMap "test-cm" in namespace "test-namespace": replace operation does not apply: doc is missing key: /data/no-such-key: missing value`
	for _, b := range bindings {
		if b.Spec.TargetCluster != "member2" {
			continue
		}
		c := meta.FindStatusCondition(b.Status.Conditions, fleet.ResourceBindingOverridden)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "OverriddenFailed" || c.Message != wantMsg {
			t.Errorf("member2's Overridden condition is %+v, want False/OverriddenFailed %q", c, wantMsg)
		}
	}
	for run, want := range map[string]string{"example-run": "Stuck", "other-run": "Succeeded"} {
		r, err := res.Hub.GetUpdateRun(context.Background(), keyOf(run))
		if err != nil {
			t.Fatal(err)
		}
		if r.Phase() != want {
			t.Errorf("%s is %s, want %s", run, r.Phase(), want)
		}
	}
	// The failed cluster received nothing; the other placement everything,
	// without the refused or unmatched overrides.
	if sim, ok := res.Hub.Members().Simulated("member2"); ok {
		for _, p := range sim.Placed() {
			if p.Placement.Name == "example-placement" {
				t.Errorf("member2 holds %s's resources although its overrides failed", p.Placement.Name)
			}
		}
	}
	cm := received(t, res, "member1", "ConfigMap", "other-cm")
	if got, _, _ := unstructured.NestedString(cm.Object, "data", "key"); got != "other" {
		t.Errorf("other-cm value %q, want other", got)
	}
}

// Spec e2e item 8: a ClusterResourceOverride for east/prod and a
// ResourceOverride for east/canary are recorded on those clusters only, the
// bindings and placement list them, and the members carry the annotations.
func TestE2EOverridesRecordedPerClusterAndDelivered(t *testing.T) {
	repo := newRepo(t, readDir(t, "testdata/e2e-overrides"))
	res, err := Run(context.Background(), Options{Repo: repo, Approve: true})
	if err != nil {
		t.Fatal(err)
	}
	run, err := res.Hub.GetUpdateRun(context.Background(), keyOf("csur-0"))
	if err != nil {
		t.Fatal(err)
	}
	if run.Phase() != "Succeeded" {
		t.Fatalf("run is %s", run.Phase())
	}
	wantCROs := map[string][]string{"kind-cluster-1": {"cro-0-0"}}
	wantROs := map[string][]fleet.NamespacedName{"kind-cluster-2": {{Namespace: "application-0", Name: "ro-0-0"}}}
	for _, s := range run.Status.StagesStatus {
		for _, c := range s.Clusters {
			if !slices.Equal(c.ClusterResourceOverrideSnapshots, wantCROs[c.ClusterName]) || !slices.Equal(c.ResourceOverrideSnapshots, wantROs[c.ClusterName]) {
				t.Errorf("%s: %v %v, want %v %v", c.ClusterName, c.ClusterResourceOverrideSnapshots, c.ResourceOverrideSnapshots, wantCROs[c.ClusterName], wantROs[c.ClusterName])
			}
		}
	}
	for cluster, want := range map[string]map[string]string{
		"kind-cluster-1": {"cro-test-annotation": "cro-test-annotation-val-0"},
		"kind-cluster-2": {"ro-test-annotation": "ro-test-annotation-val-1"},
		"kind-cluster-3": {},
	} {
		cm := received(t, res, cluster, "ConfigMap", "app-config-0")
		got := cm.GetAnnotations()
		delete(got, MemberClusterAnnotation)
		if !maps.Equal(got, want) {
			t.Errorf("%s's ConfigMap has annotations %v, want %v", cluster, got, want)
		}
	}
	var out bytes.Buffer
	if err := WriteObjects(context.Background(), &out, res.Hub); err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "e2e-overrides.yaml", out.Bytes())
}
