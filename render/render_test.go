package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/crdschema"
)

func mapFS(files map[string]string) fstest.MapFS {
	m := fstest.MapFS{}
	for name, data := range files {
		m[name] = &fstest.MapFile{Data: []byte(data)}
	}
	return m
}

func renderFS(t *testing.T, files map[string]string, opts Options) *Content {
	t.Helper()
	c, err := Render(mapFS(files), opts)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	return c
}

const v1Placement = `apiVersion: placement.kubernetes-fleet.io/v1
kind: ClusterResourcePlacement
metadata:
  name: p
spec:
  resourceSelectors: [{group: "", version: v1, kind: Namespace, name: app}]
  strategy: {type: External}
`

func TestRenderAcceptsV1AndWritesV1beta1(t *testing.T) {
	c := renderFS(t, map[string]string{"p.yaml": v1Placement}, Options{})
	if len(c.Errors) != 0 || len(c.Placements) != 1 {
		t.Fatalf("errors %v, placements %d", c.Errors, len(c.Placements))
	}
	if got := c.Placements[0].APIVersion; got != fleet.PlacementAPIVersion {
		t.Errorf("apiVersion = %q, want %q", got, fleet.PlacementAPIVersion)
	}
}

func TestRenderV1AndV1beta1OfOneObjectAreDuplicates(t *testing.T) {
	fsys := fstest.MapFS{
		"a.yaml": {Data: []byte(v1Placement)},
		"b.yaml": {Data: []byte(strings.Replace(v1Placement, "/v1\n", "/v1beta1\n", 1))},
	}
	_, err := Render(fsys, Options{})
	var refused *RefusedError
	if !errors.As(err, &refused) || len(refused.Errors) != 1 || !strings.Contains(refused.Errors[0].Message, "also defined in a.yaml:1") {
		t.Errorf("Render: %v; want the commit refused for a duplicate", err)
	}
}

func TestRenderNamespacedFamily(t *testing.T) {
	c := renderFS(t, map[string]string{
		"rp.yaml": `apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ResourcePlacement
metadata: {name: rp, namespace: app}
spec:
  resourceSelectors: [{group: "", version: v1, kind: ConfigMap, name: settings}]
  strategy: {type: External}
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: StagedUpdateStrategy
metadata: {name: s, namespace: app}
spec:
  stages: [{name: all, labelSelector: {}, maxConcurrency: "50%"}]
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: StagedUpdateRun
metadata: {name: r, namespace: app}
spec: {placementName: rp, stagedRolloutStrategyName: s}
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: StagedUpdateRun
metadata: {name: no-namespace}
spec: {placementName: rp, stagedRolloutStrategyName: s}
`,
	}, Options{})
	if len(c.Placements) != 1 || len(c.Strategies) != 1 || len(c.Runs) != 1 {
		t.Fatalf("placements %d strategies %d runs %d; errors %v", len(c.Placements), len(c.Strategies), len(c.Runs), c.Errors)
	}
	if c.Runs[0].Spec.State != fleet.StateInitialize {
		t.Errorf("run state %q not defaulted to Initialize", c.Runs[0].Spec.State)
	}
	if len(c.Errors) != 1 || c.Errors[0].Field != "metadata.namespace" || c.Errors[0].Line != 21 {
		t.Errorf("errors = %v, want the namespace-less StagedUpdateRun at line 21", c.Errors)
	}
}

func TestRenderReadsJSONAndSkipsOtherFiles(t *testing.T) {
	c := renderFS(t, map[string]string{
		"ns.json":                 `{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app"}}`,
		"notes.txt":               "apiVersion: v1\nkind: Namespace\nmetadata: {name: txt}\n",
		".hidden.yaml":            "apiVersion: v1\nkind: Namespace\nmetadata: {name: hidden}\n",
		"apps/.git/x.yaml":        "apiVersion: v1\nkind: Namespace\nmetadata: {name: git}\n",
		"status/x.yaml":           "not: [valid",
		"approvals/x.yaml":        "not: [valid",
		"apps/status/x.yml":       "apiVersion: v1\nkind: Namespace\nmetadata: {name: nested-status}\n",
		"apps/kustomization.yaml": "resources: [x.yaml]\n", // only Path's own kustomization counts
	}, Options{})
	if len(c.Errors) != 0 {
		t.Fatalf("errors: %v", c.Errors)
	}
	if got := resourceKeys(c.Resources); !reflect.DeepEqual(got, []string{"Namespace /app", "Namespace /nested-status"}) {
		t.Errorf("resources = %v (only status/ and approvals/ directly under Path are skipped)", got)
	}
}

func TestRenderStripsServerSetFieldsOfWorkloads(t *testing.T) {
	c := renderFS(t, map[string]string{"cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
  namespace: app
  uid: 1234
  resourceVersion: "99"
  creationTimestamp: "2025-01-01T00:00:00Z"
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: "{}"
data: {k: v}
status: {whatever: true}
`}, Options{})
	want := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cm", "namespace": "app"}, "data": map[string]any{"k": "v"}}
	if len(c.Resources) != 1 || !reflect.DeepEqual(c.Resources[0].Object, want) {
		t.Errorf("resource = %v", c.Resources)
	}
}

func TestRenderPath(t *testing.T) {
	files := map[string]string{"fleet/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: app}\n", "other/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: other}\n"}
	c := renderFS(t, files, Options{Path: "fleet/"})
	if got := resourceKeys(c.Resources); !reflect.DeepEqual(got, []string{"Namespace /app"}) {
		t.Errorf("resources = %v", got)
	}
	if c.Sources[ObjectRef{Kind: "Namespace", Name: "app"}].File != "fleet/ns.yaml" {
		t.Errorf("sources are not relative to the repository root: %v", c.Sources)
	}
	for _, bad := range []string{"../x", "/etc", "missing", "fleet/ns.yaml"} {
		if _, err := Render(mapFS(files), Options{Path: bad}); err == nil {
			t.Errorf("Path %q accepted", bad)
		}
	}
}

func TestRenderTotalSizeLimitFailsTheRender(t *testing.T) {
	ns := "apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n"
	_, err := Render(mapFS(map[string]string{"a.yaml": ns, "b.yaml": ns, "c.yaml": ns}), Options{MaxTotalSize: 100})
	var merr *ManifestError
	if !errors.As(err, &merr) || merr.File != "b.yaml" || !strings.Contains(merr.Message, "total size limit") {
		t.Errorf("err = %v, want the total size limit crossed at b.yaml", err)
	}
}

func TestReadApprovalsReportsWhatDoesNotBelong(t *testing.T) {
	ars, errs := ReadApprovals(mapFS(map[string]string{
		"approvals/ok.yaml": `apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterApprovalRequest
metadata: {name: run-after-canary}
spec: {parentStageRollout: run, targetStage: canary}
`,
		"approvals/team-a/ok.yaml": `apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ApprovalRequest
metadata: {name: run-before-prod, namespace: team-a}
spec: {parentStageRollout: run, targetStage: prod}
`,
		"approvals/cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: a}\n",
		"approvals/nostage.yml": "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterApprovalRequest\nmetadata: {name: x}\nspec: {parentStageRollout: run}\n",
	}), "approvals")
	if got := names(ars); !reflect.DeepEqual(got, []string{"run-after-canary", "run-before-prod"}) {
		t.Errorf("approvals = %v", got)
	}
	// The API server's schema refuses nostage.yml (its CEL rules wait).
	if len(errs) != 3 || errs[0].File != "approvals/cm.yaml" || errs[0].Field != "kind" ||
		errs[1].File != "approvals/nostage.yml" || errs[1].Message != "Invalid value: null: "+blockedCEL ||
		errs[2].File != "approvals/nostage.yml" || errs[2].Field != "spec.targetStage" {
		t.Errorf("errors = %v", errs)
	}
}

func TestWithheld(t *testing.T) {
	c := &Content{Errors: []ManifestError{
		{File: "fleet/run.yaml", Kind: "ClusterStagedUpdateRun", Name: "run", Field: "spec.state", Message: "bad"},
		{File: "broken.yaml", Line: 3, Message: "YAML syntax error"},
	}}
	run := ObjectRef{Group: fleet.PlacementGroup, Kind: "ClusterStagedUpdateRun", Name: "run"}
	for _, tc := range []struct {
		ref      ObjectRef
		lastFile string
		want     bool
	}{
		{run, "fleet/run.yaml", true},
		{run, "moved.yaml", true}, // named by the error wherever it was
		{ObjectRef{Kind: "ClusterStagedUpdateRun", Name: "other"}, "fleet/run.yaml", false},
		{ObjectRef{Kind: "ConfigMap", Namespace: "a", Name: "cm"}, "broken.yaml", true}, // its file failed as a whole
		{ObjectRef{Kind: "ConfigMap", Namespace: "a", Name: "cm"}, "gone.yaml", false},  // deleted
	} {
		if got := c.Withheld(tc.ref, tc.lastFile); got != tc.want {
			t.Errorf("Withheld(%s, %s) = %v, want %v", tc.ref, tc.lastFile, got, tc.want)
		}
	}
}

func TestManifestErrorFormat(t *testing.T) {
	for _, tc := range []struct {
		e    ManifestError
		want string
	}{
		{ManifestError{File: "s.yaml", Line: 11, Kind: "ClusterStagedUpdateStrategy", Name: "s", Field: "spec.stages[1].maxConcurrency", Message: "Invalid value: 0: maxConcurrency must be at least 1"},
			"s.yaml:11: ClusterStagedUpdateStrategy s: spec.stages[1].maxConcurrency: Invalid value: 0: maxConcurrency must be at least 1"},
		{ManifestError{File: "r.yaml", Line: 2, Kind: "StagedUpdateRun", Namespace: "app", Name: "r", Field: "spec.state", Message: "m"},
			"r.yaml:2: StagedUpdateRun app/r: spec.state: m"},
		{ManifestError{File: "big.yaml", Message: "too big"}, "big.yaml: too big"},
		{ManifestError{File: "k.yaml", Field: "resources[1]", Message: "remote"}, "k.yaml: resources[1]: remote"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
}

func TestRenderDropsHubOwnedFieldsOfControlObjects(t *testing.T) {
	c := renderFS(t, map[string]string{"run.yaml": `apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateRun
metadata:
  name: example-run
  generation: 7
  uid: 7db13885
  resourceVersion: "21461"
  creationTimestamp: "2025-07-22T21:28:08Z"
  finalizers: [kubernetes-fleet.io/stagedupdaterun-finalizer]
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: "{}"
spec:
  placementName: example-placement
  resourceSnapshotIndex: "1"
  stagedRolloutStrategyName: example-strategy
status:
  policySnapshotIndexUsed: "0"
  conditions:
    - {type: Initialized, status: "True", reason: UpdateRunInitializedSuccessfully, message: ok, lastTransitionTime: "2025-07-22T21:28:08Z"}
`}, Options{})
	if len(c.Runs) != 1 {
		t.Fatalf("runs %d errors %v", len(c.Runs), c.Errors)
	}
	r := c.Runs[0]
	want := fleet.UpdateRun{}
	want.APIVersion, want.Kind, want.Name = fleet.PlacementAPIVersion, fleet.KindClusterStagedUpdateRun, "example-run"
	want.Spec = fleet.UpdateRunSpec{PlacementName: "example-placement", ResourceSnapshotIndex: "1", StagedUpdateStrategyName: "example-strategy", State: fleet.StateInitialize}
	if !reflect.DeepEqual(*r, want) {
		t.Errorf("run = %+v\nwant  %+v", *r, want)
	}
}

// TestAcceptedBeforeIsNotValidatedAgain: a render given what an earlier
// one accepted returns the same content, and skips the schema's
// validation of exactly that content: a key the schema never gave lets an
// object it refuses through, which shows the skip, while any change of
// the object is validated.
func TestAcceptedBeforeIsNotValidatedAgain(t *testing.T) {
	const run = "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterStagedUpdateRun\nmetadata: {name: %s}\n" +
		"spec: {placementName: %s, stagedRolloutStrategyName: s, state: %s}\n"
	treeOf := func(placement, state string) fstest.MapFS {
		return fstest.MapFS{"run.yaml": {Data: fmt.Appendf(nil, run, "example-run", placement, state)}}
	}
	tree := func(state string) fstest.MapFS { return treeOf("p", state) }
	first, err := Render(tree("Run"), Options{})
	if err != nil || len(first.Errors) > 0 || len(first.Accepted) != 1 {
		t.Fatalf("err %v, errors %v, accepted %v", err, first.Errors, first.Accepted)
	}
	again, err := Render(tree("Run"), Options{Accepted: first.Accepted})
	if err != nil || !reflect.DeepEqual(again, first) {
		t.Fatalf("with what it accepted before, render returned\n%+v (%v)\nwant\n%+v", again, err, first)
	}

	// The key the schema would give the refused run, as if it had
	// accepted it: render does not ask the schema again.
	refused, err := Render(tree("Go"), Options{})
	if err != nil || len(refused.Errors) != 2 { // the enum's, and the CEL rules it kept from running
		t.Fatalf("a run in state Go: err %v, errors %v", err, refused.Errors)
	}
	content := map[string]any{"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterStagedUpdateRun",
		"metadata": map[string]any{"name": "example-run"},
		"spec":     map[string]any{"placementName": "p", "stagedRolloutStrategyName": "s", "state": "Go"}}
	data, err := json.Marshal(content)
	if err != nil {
		t.Fatal(err)
	}
	gvk := fleet.SchemeGroupVersion.WithKind(fleet.KindClusterStagedUpdateRun)
	forged := crdschema.Accepted{crdschema.Key(gvk, data): {}}
	skipped, err := Render(tree("Go"), Options{Accepted: forged})
	if err != nil || len(skipped.Errors) != 0 {
		t.Fatalf("a forged key did not skip the schema: err %v, errors %v", err, skipped.Errors)
	}
	changed, err := Render(treeOf("q", "Go"), Options{Accepted: forged})
	if err != nil || len(changed.Errors) != 2 || len(changed.Accepted) != 0 {
		t.Fatalf("a changed run was not validated: err %v, errors %v, accepted %v", err, changed.Errors, changed.Accepted)
	}
}
