package main

import (
	"fmt"
	"io/fs"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/render"
)

// overridePlacements warns about overrides limited to a placement that no
// object of the tree is: KubeFleet applies such an override to that
// placement only, so a misspelled name makes it apply nowhere. It is a
// warning, not an error: the API server accepts the override, and the
// placement may be added later. A ResourceOverride with scope Namespaced
// refers to a ResourcePlacement of its own namespace.
func overridePlacements(fsys fs.FS, c *render.Content) []render.ManifestError {
	type key struct{ namespace, name string }
	placements := map[key]bool{}
	for _, p := range c.Placements {
		placements[key{p.Namespace, p.Name}] = true
	}
	var out []render.ManifestError
	check := func(kind, namespace, name string, ref *fleet.PlacementRef) {
		if ref == nil || ref.Name == "" {
			return
		}
		want := key{"", ref.Name}
		if ref.Scope == fleet.NamespaceScoped {
			want.namespace = namespace
		}
		if placements[want] {
			return
		}
		src := c.Sources[render.ObjectRef{Group: fleet.PlacementGroup, Kind: kind, Namespace: namespace, Name: name}]
		out = append(out, render.ManifestError{File: src.File, Line: render.FieldLine(fsys, src, "spec.placement.name"), Kind: kind, Namespace: namespace, Name: name,
			Field: "spec.placement.name",
			Message: fmt.Sprintf("warning: no %s %q%s in the repository; the override applies to that placement only, so it changes nothing until one exists",
				fleet.PlacementKind(want.namespace), ref.Name, inNamespace(want.namespace))})
	}
	for _, o := range c.ClusterResourceOverrides {
		check(o.Kind, "", o.Name, o.Spec.Placement)
	}
	for _, o := range c.ResourceOverrides {
		check(o.Kind, o.Namespace, o.Name, o.Spec.Placement)
	}
	return out
}
