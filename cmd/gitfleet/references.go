package main

import (
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource/ingest"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
	"github.com/gitfleet/gitfleet/reconciler/updaterun"
	"github.com/gitfleet/gitfleet/render"
	"github.com/gitfleet/gitfleet/status"
)

// runReferences reports runs whose placement or strategy names no object
// of the tree: after the push such a run fails its initialization for good
// ("parent placement not found", "referenced updateStrategy not found"),
// and as both fields are immutable it must be re-created under a new name.
// A namespaced run resolves both in its own namespace, as KubeFleet does.
// A strategy that is in the tree but refused (its first error in
// c.Errors) is invalid rather than missing; when status/ holds a version
// gitfleet accepted before, the run would start on that one, so that is a
// warning.
func runReferences(fsys fs.FS, c *render.Content, recorded []runtime.Object) (errs, warnings []render.ManifestError) {
	type key struct{ namespace, name string }
	placements, strategies := map[key]bool{}, map[key]bool{}
	for _, p := range c.Placements {
		placements[key{p.Namespace, p.Name}] = true
	}
	for _, s := range c.Strategies {
		strategies[key{s.Namespace, s.Name}] = true
	}
	refused := map[key]render.ManifestError{}
	for _, e := range c.Errors {
		k := key{e.Namespace, e.Name}
		if _, seen := refused[k]; !seen && e.Name != "" && e.Kind == fleet.UpdateStrategyKind(e.Namespace) {
			refused[k] = e
		}
	}
	accepted := map[key]string{}
	for _, o := range recorded {
		if s, ok := o.(*fleet.UpdateStrategy); ok {
			accepted[key{s.Namespace, s.Name}], _ = status.PathFor(s)
		}
	}
	for _, r := range c.Runs {
		report := func(list *[]render.ManifestError, field, msg string) {
			src := c.Sources[render.ObjectRef{Group: fleet.PlacementGroup, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}]
			*list = append(*list, render.ManifestError{File: src.File, Line: render.FieldLine(fsys, src, field),
				Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, Field: field, Message: msg})
		}
		const fails = "; the run would fail its initialization, and the field cannot be changed afterwards"
		if p := r.Spec.PlacementName; p != "" && !placements[key{r.Namespace, p}] {
			report(&errs, "spec.placementName", fmt.Sprintf("parent placement not found: no %s %q%s in the repository",
				fleet.PlacementKind(r.Namespace), p, inNamespace(r.Namespace))+fails)
		}
		s := r.Spec.StagedUpdateStrategyName
		if s == "" || strategies[key{r.Namespace, s}] {
			continue
		}
		if e, ok := refused[key{r.Namespace, s}]; ok {
			invalid := strategyInvalid(e)
			if file, ok := accepted[key{r.Namespace, s}]; ok {
				report(&warnings, "spec.stagedRolloutStrategyName", "warning: "+invalid+"; the run would start on the version gitfleet accepted before ("+file+")")
			} else {
				report(&errs, "spec.stagedRolloutStrategyName", invalid+fails)
			}
			continue
		}
		report(&errs, "spec.stagedRolloutStrategyName", fmt.Sprintf("referenced updateStrategy not found: `%s/%s`: no %s %q%s in the repository",
			r.Namespace, s, fleet.UpdateStrategyKind(r.Namespace), s, inNamespace(r.Namespace))+fails)
	}
	return errs, warnings
}

// strategyInvalid is what a run says of a strategy that is in the tree but
// refused (e, its first error): the words of the run's status in serve.
func strategyInvalid(e render.ManifestError) string {
	name := e.Name
	if e.Namespace != "" {
		name = e.Namespace + "/" + name
	}
	return fmt.Sprintf(updaterun.StrategyInvalidFmt, name, ingest.StrategyRefusal(e))
}

// inNamespace is " in namespace ns" for namespaced objects.
func inNamespace(ns string) string {
	if ns == "" {
		return ""
	}
	return " in namespace " + ns
}

// runSnapshotIndexes warns about runs whose resourceSnapshotIndex no
// snapshot recorded in status/ has. It is a warning, not an error: the
// recorded snapshots may lag the remote, and the push that adds the run
// may itself record the next index (0 for a placement without any).
func runSnapshotIndexes(fsys fs.FS, c *render.Content, recorded []runtime.Object) []render.ManifestError {
	byPlacement := recordedGroups(recorded)
	var out []render.ManifestError
	for _, r := range c.Runs {
		n, err := strconv.Atoi(r.Spec.ResourceSnapshotIndex)
		if err != nil || n < 0 {
			continue // no index (the latest), or runIndexes' error
		}
		groups := byPlacement[hub.Key{Namespace: r.Namespace, Name: r.Spec.PlacementName}]
		if _, ok := groups.At(n); ok || n == groups.Next() {
			continue
		}
		var have []int
		for _, g := range groups {
			have = append(have, g.Index)
		}
		recordedNote := "none is recorded yet"
		if len(have) > 0 {
			recordedNote = "recorded: " + joinInts(have)
		}
		src := c.Sources[render.ObjectRef{Group: fleet.PlacementGroup, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}]
		out = append(out, render.ManifestError{File: src.File, Line: render.FieldLine(fsys, src, "spec.resourceSnapshotIndex"), Kind: r.Kind, Namespace: r.Namespace, Name: r.Name,
			Field: "spec.resourceSnapshotIndex",
			Message: fmt.Sprintf("warning: no resource snapshot of placement %s has index %d in status/ (%s); unless one is recorded first, the run fails with: no resourceSnapshots with index `%d` found for placement `%s/%s`",
				r.Spec.PlacementName, n, recordedNote, n, r.Namespace, r.Spec.PlacementName)})
	}
	return out
}

// recordedGroups are the resource snapshot groups recorded in status/, by
// placement.
func recordedGroups(recorded []runtime.Object) map[hub.Key]resourcesnapshot.Groups {
	var snaps []*fleet.ResourceSnapshot
	for _, o := range recorded {
		if s, ok := o.(*fleet.ResourceSnapshot); ok {
			snaps = append(snaps, s)
		}
	}
	return resourcesnapshot.ByPlacement(snaps)
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}
