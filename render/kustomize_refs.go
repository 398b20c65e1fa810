package render

import (
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// kustomizeRef is one path a kustomization points at.
type kustomizeRef struct {
	field string // JSON path in the kustomization, e.g. resources[2]
	value string
	base  bool // may be a folder holding another kustomization
}

// checkKustomization walks the kustomizations reachable from kfile and
// refuses, before kustomize runs, what would leave the commit: remote bases
// and files (git clone, HTTP), absolute paths and paths that climb out of
// the repository root. Helm charts are refused too (they need the helm
// binary and usually the network).
func checkKustomization(fsys fs.FS, dir, kfile string, visited map[string]bool) error {
	if visited[kfile] {
		return nil
	}
	visited[kfile] = true
	k, err := readKustomization(fsys, kfile)
	if err != nil {
		return err
	}
	for _, f := range []string{"helmCharts", "helmChartInflationGenerator", "helmGlobals"} {
		if _, ok := k[f]; ok {
			return &ManifestError{File: kfile, Field: f, Message: "helm charts are not supported by gitfleet; render the chart into the repository"}
		}
	}
	for _, ref := range kustomizationRefs(k) {
		fail := func(msg string) error {
			return &ManifestError{File: kfile, Field: ref.field, Message: fmt.Sprintf("%q %s", ref.value, msg)}
		}
		v := ref.value
		if isRemote(fsys, dir, v) {
			return fail("is a remote reference; gitfleet renders only what is in the commit (no network): vendor it into the repository")
		}
		if path.IsAbs(v) {
			return fail("must be a path relative to the kustomization")
		}
		target := path.Join(dir, v)
		if target == ".." || strings.HasPrefix(target, "../") {
			return fail("escapes the repository root")
		}
		if !ref.base {
			continue
		}
		if info, err := fs.Stat(fsys, target); err == nil && info.IsDir() {
			if sub := findKustomization(fsys, target); sub != "" {
				if err := checkKustomization(fsys, target, sub, visited); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// isRemote recognises what kustomize would fetch: URLs, git specs, and
// host-like paths (example.com/org/repo) that are not in the commit.
func isRemote(fsys fs.FS, dir, v string) bool {
	switch {
	case strings.Contains(v, "://"), strings.HasPrefix(v, "git@"), strings.HasPrefix(v, "git::"),
		strings.Contains(v, "?ref="), strings.Contains(v, "?version="), strings.Contains(v, "?submodules="):
		return true
	}
	first, _, hasSlash := strings.Cut(v, "/")
	if !hasSlash || !strings.Contains(first, ".") || first == "." || first == ".." {
		return false
	}
	_, err := fs.Stat(fsys, path.Join(dir, v))
	return err != nil
}

// kustomizationRefs lists every path-valued field of a kustomization
// (current and deprecated spellings). Inline patches are skipped.
func kustomizationRefs(k map[string]any) []kustomizeRef {
	var out []kustomizeRef
	strs := func(field string, base bool) {
		list, _ := k[field].([]any)
		for i, x := range list {
			if s, ok := x.(string); ok && !strings.Contains(s, "\n") {
				out = append(out, kustomizeRef{field: fmt.Sprintf("%s[%d]", field, i), value: s, base: base})
			}
		}
	}
	for _, f := range []string{"resources", "bases", "components"} {
		strs(f, true)
	}
	for _, f := range []string{"crds", "configurations", "patchesStrategicMerge", "generators", "transformers", "validators"} {
		strs(f, false)
	}
	for _, f := range []string{"patches", "patchesJson6902", "replacements"} {
		list, _ := k[f].([]any)
		for i, x := range list {
			if m, ok := x.(map[string]any); ok {
				if p, ok := m["path"].(string); ok && p != "" {
					out = append(out, kustomizeRef{field: fmt.Sprintf("%s[%d].path", f, i), value: p})
				}
			}
		}
	}
	if m, ok := k["openapi"].(map[string]any); ok {
		if p, ok := m["path"].(string); ok && p != "" {
			out = append(out, kustomizeRef{field: "openapi.path", value: p})
		}
	}
	for _, f := range []string{"configMapGenerator", "secretGenerator"} {
		list, _ := k[f].([]any)
		for i, x := range list {
			g, _ := x.(map[string]any)
			for _, sub := range []string{"files", "envs"} {
				files, _ := g[sub].([]any)
				for j, y := range files {
					if s, ok := y.(string); ok {
						if _, file, hasKey := strings.Cut(s, "="); hasKey {
							s = file
						}
						out = append(out, kustomizeRef{field: fmt.Sprintf("%s[%d].%s[%d]", f, i, sub, j), value: s})
					}
				}
			}
			if s, ok := g["env"].(string); ok && s != "" {
				out = append(out, kustomizeRef{field: fmt.Sprintf("%s[%d].env", f, i), value: s})
			}
		}
	}
	return out
}
