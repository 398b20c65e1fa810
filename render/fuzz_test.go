package render

import (
	"bytes"
	"strings"
	"testing"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/kustomize/kyaml/kio"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// FuzzManifest feeds one manifest file of a plain layout through the whole
// reader (document split, YAML decoding, kind identification, strict
// decoding of fleet objects): it must never panic, and every problem it
// reports names the file.
func FuzzManifest(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: n\ndata:\n  k: v\n",
		"apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterStagedUpdateRun\nmetadata:\n  name: r\nspec:\n  placementName: p\n  resourceSnapshotIndex: \"0\"\n  stagedRolloutStrategyName: s\n",
		"---\n---\nkind: [\n",
		"a: &a [*a]\n",
		"\xef\xbb\xbfkind: ConfigMap\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := fstest.MapFS{"fleet.yaml": {Data: data}}
		c, err := Render(fsys, Options{})
		if err != nil {
			if !strings.Contains(err.Error(), "fleet.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, e := range c.Errors {
			if e.File != "fleet.yaml" {
				t.Fatalf("manifest error names %q: %v", e.File, e)
			}
		}
	})
}

// FuzzKustomization builds a kustomization.yaml of any content over one
// ConfigMap: the reader's checks (escaping paths, remote references,
// generators) and kustomize itself must never panic the process.
func FuzzKustomization(f *testing.F) {
	for _, seed := range []string{
		"resources:\n  - cm.yaml\n",
		"resources:\n  - ../outside\n",
		"resources:\n  - github.com/org/repo?ref=main\n",
		"configMapGenerator:\n  - name: x\n    files:\n      - /etc/passwd\n",
		"patches:\n  - target:\n      kind: ConfigMap\n    patch: |-\n      - op: replace\n        path: /data/k\n        value: v2\n",
		"helmCharts:\n  - name: x\n",
		"resources: [\n",
	} {
		f.Add([]byte(seed))
	}
	cm := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: n\ndata:\n  k: v\n")
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := fstest.MapFS{"kustomization.yaml": {Data: data}, "cm.yaml": {Data: cm}}
		_, _ = Render(fsys, Options{})
	})
}

// FuzzApprovals reads an approvals/ file of any content: never a panic, and
// every problem names the file.
func FuzzApprovals(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterApprovalRequest\nmetadata:\n  name: r-after-canary\nspec:\n  parentStageRollout: r\n  targetStage: canary\nstatus:\n  conditions:\n  - type: Approved\n    status: \"True\"\n    reason: ok\n    message: ok\n    lastTransitionTime: \"2026-01-01T00:00:00Z\"\n    observedGeneration: 1\n",
		"kind: ClusterApprovalRequest\n",
		"status: {conditions: [{type: Approved}]}\n",
		"\x00\x01binary",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := fstest.MapFS{"approvals/a.yaml": {Data: data}}
		_, errs := ReadApprovals(fsys, "approvals")
		for _, e := range errs {
			if e.File != "approvals/a.yaml" {
				t.Fatalf("approval error names %q: %v", e.File, e)
			}
		}
	})
}

// FuzzTree renders a tree of three files of any content (two YAML, one
// JSON in a subfolder) and checks the invariant that keeps a typo from
// deleting anything: either the commit is refused, or every object that an
// independent reader (kyaml, kustomize's) finds in the files is in the
// content — a workload resource rendered, a fleet object rendered or
// withheld with an error naming it.
func FuzzTree(f *testing.F) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: test-cm\n  namespace: test-namespace\ndata:\n  key: value1\n"
	ns := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: test-namespace\n"
	for _, seed := range [][3]string{
		{ns, cm, `{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "test-namespace"}}`},
		{ns, strings.Replace(cm, "value1", `"value2`, 1), ""},
		{ns + "---\n" + cm, cm, "{}"},
		{ns, "# " + cm, `[{"apiVersion": "v1"}]`},
		{ns, strings.Replace(cm, "ConfigMap", "ConfigMapp", 1), `{"a": 1,}`},
		{"apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterStagedUpdateRun\nmetadata:\n  name: r\nspec:\n  placementName: p\n  state: Running\n", cm, ""},
		{ns, "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: n\n", ""},
	} {
		f.Add([]byte(seed[0]), []byte(seed[1]), []byte(seed[2]))
	}
	f.Fuzz(func(t *testing.T, a, b, c []byte) {
		files := map[string][]byte{"a.yaml": a, "b.yaml": b, "sub/c.json": c}
		fsys := fstest.MapFS{}
		for name, data := range files {
			fsys[name] = &fstest.MapFile{Data: data}
		}
		content, err := Render(fsys, Options{})
		if err != nil {
			return // refused whole: nothing of the tree is in a snapshot
		}
		for name, data := range files {
			nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(data), OmitReaderAnnotations: true, DisableUnwrapping: true}).Read()
			if err != nil {
				continue // the independent reader cannot read it: nothing to compare
			}
			for _, n := range nodes {
				ref, ok := independentRef(n)
				if !ok {
					continue
				}
				if _, in := content.Sources[ref]; in {
					continue
				}
				if isFleetGroup(ref.Group) && content.Withheld(ref, name) {
					continue
				}
				t.Fatalf("%s: %v is neither rendered nor refused (errors %v)", name, ref, content.Errors)
			}
		}
	})
}

// independentRef identifies a node as kyaml reads it; ok is false when it
// lacks any of apiVersion, kind and metadata.name as strings.
func independentRef(n *kyaml.RNode) (ObjectRef, bool) {
	if n.YNode().Kind != kyaml.MappingNode {
		return ObjectRef{}, false
	}
	str := func(path ...string) (string, bool) {
		v, err := n.Pipe(kyaml.Lookup(path...))
		if err != nil || v == nil || v.YNode().Kind != kyaml.ScalarNode || v.YNode().Tag != kyaml.NodeTagString {
			return "", false
		}
		return v.YNode().Value, v.YNode().Value != ""
	}
	apiVersion, ok1 := str("apiVersion")
	kind, ok2 := str("kind")
	name, ok3 := str("metadata", "name")
	if !ok1 || !ok2 || !ok3 {
		return ObjectRef{}, false
	}
	namespace, _ := str("metadata", "namespace")
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return ObjectRef{}, false
	}
	return ObjectRef{Group: gv.Group, Kind: kind, Namespace: namespace, Name: name}, true
}
