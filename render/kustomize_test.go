package render

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

func TestKustomizeInvalidFleetObjectIsReportedAtItsSourceFile(t *testing.T) {
	c := renderFS(t, map[string]string{
		"kustomization.yaml": "resources: [fleet/run.yaml, ns.yaml]\n",
		"ns.yaml":            "apiVersion: v1\nkind: Namespace\nmetadata: {name: app}\n",
		"fleet/run.yaml": `apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateRun
metadata: {name: run}
spec: {placementName: p, stagedRolloutStrategyName: s, state: Paused}
`,
	}, Options{})
	if len(c.Runs) != 0 || len(c.Resources) != 1 {
		t.Errorf("runs %d resources %d", len(c.Runs), len(c.Resources))
	}
	// The enum's error, and the CEL rules it kept from running.
	if len(c.Errors) != 2 || c.Errors[0].File != "fleet/run.yaml" || c.Errors[0].Field != "spec.state" {
		t.Errorf("errors = %v", c.Errors)
	}
}

func TestKustomizeFileSizeLimitOnlyMattersForFilesTheBuildReads(t *testing.T) {
	big := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big, namespace: a}\ndata: {k: " + strings.Repeat("x", 2048) + "}\n"
	ns := "apiVersion: v1\nkind: Namespace\nmetadata: {name: app}\n"
	c := renderFS(t, map[string]string{"kustomization.yaml": "resources: [ns.yaml]\n", "ns.yaml": ns, "unused.yaml": big}, Options{MaxFileSize: 1024})
	if len(c.Errors) != 0 || len(c.Resources) != 1 {
		t.Errorf("an unused big file broke the render: %v", c.Errors)
	}
	_, err := Render(mapFS(map[string]string{"kustomization.yaml": "resources: [ns.yaml, big.yaml]\n", "ns.yaml": ns, "big.yaml": big}), Options{MaxFileSize: 1024})
	var merr *ManifestError
	if !errors.As(err, &merr) || merr.File != "big.yaml" || !strings.Contains(merr.Message, "larger than the 1024 bytes limit") {
		t.Errorf("err = %v, want big.yaml over the limit", err)
	}
}

// Origin annotations are gitfleet's addition; they must not change what
// kustomize builds (generated names carry a content hash).
func TestKustomizeOriginTrackingDoesNotChangeTheBuild(t *testing.T) {
	files := map[string]string{
		"Kustomization": `namespace: app
resources: [deploy.yaml]
configMapGenerator:
  - name: settings
    literals: [a=b]
commonLabels: {team: a}
`,
		"deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers: [{name: web, image: nginx, envFrom: [{configMapRef: {name: settings}}]}]
`,
	}
	c := renderFS(t, files, Options{})
	mem := filesys.MakeFsInMemory()
	for name, data := range files {
		if err := mem.WriteFile("/k/"+name, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/k")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]any{}
	for _, r := range rm.Resources() {
		m, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		want[r.GetKind()] = m
	}
	if len(c.Resources) != 2 || len(c.Errors) != 0 {
		t.Fatalf("resources %v errors %v", resourceKeys(c.Resources), c.Errors)
	}
	for _, u := range c.Resources {
		got, _ := yamlRoundTrip(u.Object)
		exp, _ := yamlRoundTrip(want[u.GetKind()])
		if !reflect.DeepEqual(got, exp) {
			t.Errorf("%s differs from a plain kustomize build:\n got %v\nwant %v", u.GetKind(), got, exp)
		}
	}
	if c.Sources[ObjectRef{Group: "apps", Kind: "Deployment", Namespace: "app", Name: "web"}].File != "deploy.yaml" {
		t.Errorf("sources = %v", c.Sources)
	}
}

// yamlRoundTrip normalises number types so kyaml's and gitfleet's trees compare.
func yamlRoundTrip(m map[string]any) (map[string]any, error) {
	data, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	return out, json.Unmarshal(data, &out)
}
