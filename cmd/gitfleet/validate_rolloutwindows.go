package main

import (
	"fmt"
	"io/fs"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/render"
)

// windowReferences warns about stages and members naming a RolloutWindow
// that no object of the tree is: the engine holds their clusters until one
// exists (a misspelled window must not let an update through a freeze), so
// the rollout would wait for good. A warning, not an error: the window may
// be added later.
func windowReferences(fsys fs.FS, c *render.Content) []render.ManifestError {
	windows := map[string]bool{}
	for _, w := range c.RolloutWindows {
		windows[w.Name] = true
	}
	var out []render.ManifestError
	report := func(ref render.ObjectRef, field, name, what string) {
		src := c.Sources[ref]
		out = append(out, render.ManifestError{File: src.File, Line: render.FieldLine(fsys, src, field),
			Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name, Field: field,
			Message: fmt.Sprintf("warning: no RolloutWindow %q in the repository; %s", name, what)})
	}
	for _, s := range c.Strategies {
		ref := render.ObjectRef{Group: fleet.PlacementGroup, Kind: s.Kind, Namespace: s.Namespace, Name: s.Name}
		for i, st := range s.Spec.Stages {
			for j, n := range st.Windows {
				if !windows[n] {
					report(ref, fmt.Sprintf("spec.stages[%d].windows[%d]", i, j), n, "the stage's clusters would wait for it for good")
				}
			}
		}
	}
	for _, m := range c.Members {
		ref := render.ObjectRef{Group: fleet.ClusterGroup, Kind: m.Kind, Name: m.Name}
		for _, n := range fleet.WindowNames(m.Annotations[fleet.RolloutWindowsAnnotation]) {
			if !windows[n] {
				report(ref, "metadata.annotations", n, "the cluster would wait for it for good")
			}
		}
	}
	return out
}
