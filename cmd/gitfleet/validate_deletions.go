package main

import (
	"fmt"
	"sort"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/snapshotdiff"
	"github.com/gitfleet/gitfleet/render"
)

// removedFromSelection warns, one "Warning: …" line each as kubectl
// prints them, about every object the working tree takes out of a
// placement's selection: it is in the placement's latest resource snapshot
// recorded in status/ and the tree's selection lacks it, so the next
// snapshot drops it and a run that rolls that out deletes it from the
// placement's clusters. Without a recorded snapshot there is nothing to
// compare with, and nothing to say.
func removedFromSelection(c *render.Content, recorded []runtime.Object) []string {
	type key struct{ namespace, placement string }
	snaps := map[key][]*fleet.ResourceSnapshot{}
	latest := map[key]int{}
	for _, o := range recorded {
		s, ok := o.(*fleet.ResourceSnapshot)
		if !ok {
			continue
		}
		n, err := strconv.Atoi(s.Labels[fleet.ResourceIndexLabel])
		if err != nil {
			continue
		}
		k := key{s.Namespace, s.Labels[fleet.PlacementTrackingLabel]}
		snaps[k] = append(snaps[k], s)
		if cur, seen := latest[k]; !seen || n > cur {
			latest[k] = n
		}
	}
	var out []string
	for _, p := range c.Placements {
		k := key{p.Namespace, p.Name}
		if len(snaps[k]) == 0 {
			continue
		}
		index := strconv.Itoa(latest[k])
		had, _ := snapshotdiff.Group(snaps[k], index)
		selected, err := render.Select(p, c.Resources)
		if err != nil {
			continue // the placement's own error says why
		}
		for _, u := range selected {
			delete(had, snapshotdiff.Resource{Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()})
		}
		name := p.Name
		if p.Namespace != "" {
			name = p.Namespace + "/" + p.Name
		}
		var lines []string
		for r := range had {
			obj := r.Kind + " " + r.Name
			if r.Namespace != "" {
				obj = r.Kind + " " + r.Namespace + "/" + r.Name
			}
			lines = append(lines, fmt.Sprintf("Warning: %s leaves placement %s: resource snapshot %s in status/ has it and this tree does not select it; a run that rolls out the next snapshot deletes it from the placement's clusters",
				obj, name, index))
		}
		sort.Strings(lines)
		out = append(out, lines...)
	}
	return out
}
