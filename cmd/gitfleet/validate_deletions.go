package main

import (
	"fmt"
	"sort"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
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
	byPlacement := recordedGroups(recorded)
	var out []string
	for _, p := range c.Placements {
		latest, ok := byPlacement[hub.Key{Namespace: p.Namespace, Name: p.Name}].Latest()
		if !ok {
			continue
		}
		index := strconv.Itoa(latest.Index)
		had, err := latest.Resources()
		if err != nil {
			continue // a recorded manifest that does not decode: nothing to compare with
		}
		selected, err := render.Select(p, c.Resources)
		if err != nil {
			continue // the placement's own error says why
		}
		for _, u := range selected {
			delete(had, resourcesnapshot.Resource{Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()})
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
