package simulate

import (
	"context"
	"io"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitfleet/gitfleet/hub/embedded"
	"github.com/gitfleet/gitfleet/printers"
)

// WriteObjects prints the final runs, approval requests, placements,
// resource snapshots, policy snapshots and bindings as one YAML stream, in
// that order and sorted by name within each kind.
func WriteObjects(ctx context.Context, w io.Writer, h *embedded.Hub) error {
	var objs []runtime.Object
	runs, err := h.ListUpdateRuns(ctx)
	if err != nil {
		return err
	}
	for _, r := range runs {
		objs = append(objs, r)
		ars, err := h.ListApprovalRequests(ctx, r.Namespace, map[string]string{"kubernetes-fleet.io/targetUpdateRun": r.Name})
		if err != nil {
			return err
		}
		for _, a := range ars {
			objs = append(objs, a)
		}
	}
	placements, err := h.ListPlacements(ctx)
	if err != nil {
		return err
	}
	for _, p := range placements {
		objs = append(objs, p)
	}
	for _, p := range placements {
		key := embedded.KeyOf(p)
		snaps, err := h.ListResourceSnapshots(ctx, key)
		if err != nil {
			return err
		}
		for _, s := range snaps {
			objs = append(objs, s)
		}
		policies, err := h.ListPolicySnapshots(ctx, key)
		if err != nil {
			return err
		}
		for _, s := range policies {
			objs = append(objs, s)
		}
		bindings, err := h.ListBindings(ctx, key)
		if err != nil {
			return err
		}
		for _, b := range bindings {
			objs = append(objs, b)
		}
	}
	return printers.YAML(w, objs...)
}
