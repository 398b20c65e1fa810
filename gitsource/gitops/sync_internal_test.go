package gitops

import (
	"slices"
	"testing"
)

// Which changed files may change the hub content: those below --path that
// are not gitfleet's own status/ and approvals/ trees; in a plain layout
// only manifests and kustomization files among them render.
func TestContentPathsAndManifests(t *testing.T) {
	for _, tc := range []struct {
		name      string
		paths     []string
		root      string
		content   []string
		manifests bool
	}{
		{name: "gitfleet's own trees", paths: []string{"status/runs/r.yaml", "approvals/a.yaml"}, root: "."},
		{name: "a manifest", paths: []string{"apps/web.yaml", "status/runs/r.yaml"}, root: ".", content: []string{"apps/web.yaml"}, manifests: true},
		{name: "a README", paths: []string{"README.md"}, root: ".", content: []string{"README.md"}},
		{name: "outside --path", paths: []string{"other/web.yaml"}, root: "fleet/"},
		{name: "below --path", paths: []string{"fleet/web.json", "fleetx/web.yaml"}, root: "./fleet", content: []string{"fleet/web.json"}, manifests: true},
		{name: "a kustomization", paths: []string{"kustomization.yaml"}, root: ".", content: []string{"kustomization.yaml"}, manifests: true},
		{name: "a generator's input", paths: []string{"config/app.properties"}, root: ".", content: []string{"config/app.properties"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := contentPaths(tc.paths, tc.root)
			if !slices.Equal(got, tc.content) {
				t.Errorf("contentPaths = %v; want %v", got, tc.content)
			}
			if m := touchesManifests(got); m != tc.manifests {
				t.Errorf("touchesManifests = %v; want %v", m, tc.manifests)
			}
		})
	}
}
