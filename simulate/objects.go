package simulate

import (
	"context"
	"io"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitfleet/gitfleet/hub"
	"github.com/gitfleet/gitfleet/hub/embedded"
	"github.com/gitfleet/gitfleet/printers"
)

// WriteObjects prints the final runs, approval requests, placements,
// resource snapshots, policy snapshots and bindings as one YAML stream, in
// that order and sorted by name within each kind. Each object is printed as
// soon as it is listed, and each list is let go kind by kind, so a fleet of
// 10,000 clusters never sits in memory as YAML.
func WriteObjects(ctx context.Context, w io.Writer, h *embedded.Hub) error {
	out := printers.NewYAMLStream(w)
	runs, err := h.ListUpdateRuns(ctx)
	if err != nil {
		return err
	}
	for i, r := range runs {
		if err := out.Write(r); err != nil {
			return err
		}
		runs[i] = nil
		ars, err := h.ListApprovalRequests(ctx, r.Namespace, map[string]string{"kubernetes-fleet.io/targetUpdateRun": r.Name})
		if err != nil {
			return err
		}
		if err := writeAll(out, ars); err != nil {
			return err
		}
	}
	placements, err := h.ListPlacements(ctx)
	if err != nil {
		return err
	}
	keys := make([]hub.Key, len(placements))
	for i, p := range placements {
		keys[i] = embedded.KeyOf(p)
	}
	if err := writeAll(out, placements); err != nil {
		return err
	}
	for _, k := range keys {
		snaps, err := h.ListResourceSnapshots(ctx, k)
		if err != nil {
			return err
		}
		if err := writeAll(out, snaps); err != nil {
			return err
		}
		policies, err := h.ListPolicySnapshots(ctx, k)
		if err != nil {
			return err
		}
		if err := writeAll(out, policies); err != nil {
			return err
		}
		bindings, err := h.ListBindings(ctx, k)
		if err != nil {
			return err
		}
		if err := writeAll(out, bindings); err != nil {
			return err
		}
	}
	return out.Flush()
}

// writeAll prints objs and drops each from the slice once printed, so the
// garbage collector can take it while the rest print.
func writeAll[T runtime.Object](out *printers.YAMLStream, objs []T) error {
	var zero T
	for i, o := range objs {
		if err := out.Write(o); err != nil {
			return err
		}
		objs[i] = zero
	}
	return nil
}
