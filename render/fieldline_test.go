package render

import "testing"

// FieldLine finds a field's line in the document Render read, by the
// document's first line, for problems found after the render.
func TestFieldLineFindsTheFieldOfTheRenderedDocument(t *testing.T) {
	fsys := mapFS(map[string]string{
		"runs.yaml": `# two runs
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateRun
metadata:
  name: first
spec:
  placementName: p
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateRun
metadata:
  name: second
  annotations:
    gitfleet.io/driver: kubeconfig:x
spec:
  stagedRolloutStrategyName: s
  placementName: p
`,
	})
	for _, tc := range []struct {
		name  string
		src   Source
		field string
		want  int
	}{
		{"a field of the first document", Source{File: "runs.yaml", Line: 2}, "spec.placementName", 7},
		{"a field of the second document", Source{File: "runs.yaml", Line: 9}, "spec.placementName", 17},
		{"a key with dots and slashes", Source{File: "runs.yaml", Line: 9}, "metadata.annotations[gitfleet.io/driver]", 14},
		{"a missing field: its deepest ancestor", Source{File: "runs.yaml", Line: 2}, "spec.resourceSnapshotIndex", 6},
		{"a missing top-level field: the document", Source{File: "runs.yaml", Line: 9}, "status", 9},
		{"kustomize output: no line", Source{File: "runs.yaml"}, "spec.placementName", 0},
		{"a file that is gone: the document's line", Source{File: "gone.yaml", Line: 4}, "spec.placementName", 4},
		{"no document starts there: the given line", Source{File: "runs.yaml", Line: 5}, "spec.placementName", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FieldLine(fsys, tc.src, tc.field); got != tc.want {
				t.Errorf("FieldLine(%v, %s) = %d, want %d", tc.src, tc.field, got, tc.want)
			}
		})
	}
}
