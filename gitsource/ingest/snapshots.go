package ingest

import (
	"context"
	"fmt"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/overridesnapshot"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
	"github.com/gitfleet/gitfleet/reconciler/snapshothistory"
	"github.com/gitfleet/gitfleet/render"
)

// recordSnapshots gives every placement of a rendered commit whose selected
// resources changed a new resource snapshot index, annotated with the
// commit (deliberate difference 4: one index per changing commit, no
// minimum interval), and, on a hub that keeps override snapshots, every
// override whose spec changed a new override snapshot. It returns how many
// snapshots it created. Recording a commit twice creates nothing the second
// time.
func recordSnapshots(ctx context.Context, h hub.Hub, content *render.Content, commit string) (int, error) {
	created := 0
	for _, p := range content.Placements {
		selected, err := render.Select(p, content.Resources)
		if err != nil {
			return created, fmt.Errorf("selecting resources of %s %s: %w", p.Kind, p.Name, err)
		}
		_, isNew, err := resourcesnapshot.Ensure(ctx, h, p, selected, commit)
		if err != nil {
			return created, fmt.Errorf("recording a resource snapshot of %s %s: %w", p.Kind, p.Name, err)
		}
		if isNew {
			created++
		}
	}
	if oh, ok := h.(hub.OverrideSnapshots); ok {
		withheld := func(kind, namespace, name string) bool {
			return content.Withheld(render.ObjectRef{Group: fleet.PlacementGroup, Kind: kind, Namespace: namespace, Name: name}, "")
		}
		n, err := overridesnapshot.Record(ctx, oh, snapshothistory.Of(ctx, h), content.ClusterResourceOverrides, content.ResourceOverrides, withheld, commit)
		created += n
		if err != nil {
			return created, fmt.Errorf("recording override snapshots: %w", err)
		}
	}
	return created, nil
}
