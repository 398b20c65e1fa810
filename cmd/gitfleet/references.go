package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/render"
)

// runReferences reports runs whose placement or strategy names no object
// of the tree: after the push such a run fails its initialization for good
// ("parent placement not found", "referenced updateStrategy not found"),
// and as both fields are immutable it must be re-created under a new name.
// A namespaced run resolves both in its own namespace, as KubeFleet does.
func runReferences(c *render.Content) []render.ManifestError {
	type key struct{ namespace, name string }
	placements, strategies := map[key]bool{}, map[key]bool{}
	for _, p := range c.Placements {
		placements[key{p.Namespace, p.Name}] = true
	}
	for _, s := range c.Strategies {
		strategies[key{s.Namespace, s.Name}] = true
	}
	var out []render.ManifestError
	for _, r := range c.Runs {
		report := func(field, msg string) {
			src := c.Sources[render.ObjectRef{Group: fleet.PlacementGroup, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}]
			out = append(out, render.ManifestError{File: src.File, Line: src.Line, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name,
				Field: field, Message: msg + "; the run would fail its initialization, and the field cannot be changed afterwards"})
		}
		if p := r.Spec.PlacementName; p != "" && !placements[key{r.Namespace, p}] {
			report("spec.placementName", fmt.Sprintf("parent placement not found: no %s %q%s in the repository",
				fleet.PlacementKind(r.Namespace), p, inNamespace(r.Namespace)))
		}
		if s := r.Spec.StagedUpdateStrategyName; s != "" && !strategies[key{r.Namespace, s}] {
			report("spec.stagedRolloutStrategyName", fmt.Sprintf("referenced updateStrategy not found: `%s/%s`: no %s %q%s in the repository",
				r.Namespace, s, fleet.UpdateStrategyKind(r.Namespace), s, inNamespace(r.Namespace)))
		}
	}
	return out
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
func runSnapshotIndexes(c *render.Content, recorded []runtime.Object) []render.ManifestError {
	type key struct{ namespace, placement string }
	indexes := map[key][]int{}
	for _, o := range recorded {
		s, ok := o.(*fleet.ResourceSnapshot)
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(s.Labels[fleet.ResourceIndexLabel]); err == nil {
			k := key{s.Namespace, s.Labels[fleet.PlacementTrackingLabel]}
			indexes[k] = append(indexes[k], n)
		}
	}
	var out []render.ManifestError
	for _, r := range c.Runs {
		n, err := strconv.Atoi(r.Spec.ResourceSnapshotIndex)
		if err != nil || n < 0 {
			continue // no index (the latest), or runIndexes' error
		}
		have := indexes[key{r.Namespace, r.Spec.PlacementName}]
		slices.Sort(have)
		have = slices.Compact(have)
		next := 0
		if len(have) > 0 {
			next = have[len(have)-1] + 1
		}
		if slices.Contains(have, n) || n == next {
			continue
		}
		recordedNote := "none is recorded yet"
		if len(have) > 0 {
			recordedNote = "recorded: " + joinInts(have)
		}
		src := c.Sources[render.ObjectRef{Group: fleet.PlacementGroup, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}]
		out = append(out, render.ManifestError{File: src.File, Line: src.Line, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name,
			Field: "spec.resourceSnapshotIndex",
			Message: fmt.Sprintf("warning: no resource snapshot of placement %s has index %d in status/ (%s); unless one is recorded first, the run fails with: no resourceSnapshots with index `%d` found for placement `%s/%s`",
				r.Spec.PlacementName, n, recordedNote, n, r.Namespace, r.Spec.PlacementName)})
	}
	return out
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}
