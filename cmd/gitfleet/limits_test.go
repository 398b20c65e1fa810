package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// validate, simulate and plan take serve's render limits: the same flags,
// with the same defaults and meanings.
func TestEveryCommandHasServesRenderLimits(t *testing.T) {
	root := newRootCommand()
	find := func(name string) map[string]string {
		for _, c := range root.Commands() {
			if c.Name() == name {
				out := map[string]string{}
				for _, f := range []string{"render-timeout", "render-memory-limit", "max-file-size", "max-tree-size"} {
					if fl := c.Flags().Lookup(f); fl != nil {
						out[f] = fl.DefValue + " " + fl.Value.Type()
					}
				}
				return out
			}
		}
		t.Fatalf("no command %s", name)
		return nil
	}
	serve := find("serve")
	want := map[string]string{"render-timeout": "1m0s duration", "render-memory-limit": "1Gi bytes",
		"max-file-size": "8Mi bytes", "max-tree-size": "256Mi bytes"}
	if fmt.Sprint(serve) != fmt.Sprint(want) {
		t.Errorf("serve's render limits %v, want %v", serve, want)
	}
	for _, name := range []string{"validate", "simulate", "plan"} {
		if got := find(name); fmt.Sprint(got) != fmt.Sprint(serve) {
			t.Errorf("%s's render limits %v, serve's %v", name, got, serve)
		}
	}
}

// A kustomization that would take hours to build: kustomize applies each
// of 300 patches to each of 300 ConfigMaps.
func writeSlowKustomization(t *testing.T, dir string) {
	t.Helper()
	var res, k strings.Builder
	for i := range 300 {
		fmt.Fprintf(&res, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\n  namespace: default\ndata:\n  k: v\n", i)
	}
	k.WriteString("resources:\n- cms.yaml\npatches:\n")
	for i := range 300 {
		fmt.Fprintf(&k, "- target:\n    kind: ConfigMap\n  patch: |-\n    - op: add\n      path: /data/p%d\n      value: x\n", i)
	}
	for name, data := range map[string]string{"kustomization.yaml": k.String(), "cms.yaml": res.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// validate stops a render at --render-timeout and says so, exit 1.
func TestValidateStopsASlowRenderAtTheTimeout(t *testing.T) {
	dir := t.TempDir()
	writeSlowKustomization(t, dir)
	_, errOut, code := gitfleet(t, "validate", "--repo", dir, "--render-timeout", "300ms")
	if code != 1 || !strings.Contains(errOut, "render timed out after 300ms (--render-timeout)") {
		t.Errorf("exit %d, stderr %q, want 1 and the timeout", code, errOut)
	}
}

// simulate and plan treat a commit that does not render within
// --render-memory-limit as serve does: recorded, skipped, in the timeline.
func TestSimulateAndPlanRenderWithinTheMemoryLimit(t *testing.T) {
	work := quickstartRepo(t)
	out, errOut, _ := gitfleet(t, "simulate", "--repo", work, "--render-memory-limit", "1")
	want := "does not render; skipped, as serve skips it: render exceeded its memory limit: it used more than 1 (--render-memory-limit)"
	if !strings.Contains(out+errOut, want) {
		t.Errorf("simulate said\n%s%s\nwant %q", out, errOut, want)
	}
	gitCmd(t, work, "branch", "base")
	out, errOut, code := gitfleet(t, "plan", "--repo", work, "--base", "base", "--render-memory-limit", "1")
	if code != 1 || !strings.Contains(out, "gitfleet would refuse this merge whole (it does not render): nothing of it reaches the hub, and nothing is deleted. render exceeded its memory limit") ||
		!strings.Contains(errOut, "the change does not render: render exceeded its memory limit") {
		t.Errorf("plan: exit %d\n%s%s\nwant 1 and the memory limit", code, out, errOut)
	}
}
