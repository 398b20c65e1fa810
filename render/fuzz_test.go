package render

import (
	"strings"
	"testing"
	"testing/fstest"
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
