package simulate

import (
	"context"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/status/printers"
)

// MemberClusterAnnotation names, on a printed manifest, the simulated member
// cluster that holds it.
const MemberClusterAnnotation = fleet.GitfleetPrefix + "member-cluster"

// WriteObjects prints the final runs, approval requests, placements,
// resource snapshots, policy snapshots, bindings and override snapshots as
// one YAML stream, in that order and sorted by name within each kind, then
// the manifests each simulated member holds, as it received them (after
// overrides), each annotated with MemberClusterAnnotation. Each object is printed as
// soon as it is listed, and each list is let go kind by kind, so a fleet of
// 10,000 clusters never sits in memory as YAML.
func WriteObjects(ctx context.Context, w io.Writer, h *embedded.Hub) error {
	out := printers.NewYAMLStream(w)
	// The hub's own objects, not copies (a run or placement of 10,000
	// clusters is megabytes): printing only reads them.
	runs, err := h.ListUpdateRunsReadOnly(ctx)
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
	placements, err := h.ListPlacementsReadOnly(ctx)
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
		bindings, err := h.ListBindingsReadOnly(ctx, k)
		if err != nil {
			return err
		}
		if err := writeAll(out, bindings); err != nil {
			return err
		}
	}
	cros, err := h.ListClusterResourceOverrideSnapshots(ctx)
	if err != nil {
		return err
	}
	if err := writeAll(out, cros); err != nil {
		return err
	}
	ros, err := h.ListResourceOverrideSnapshots(ctx)
	if err != nil {
		return err
	}
	if err := writeAll(out, ros); err != nil {
		return err
	}
	if err := writeMembers(out, h); err != nil {
		return err
	}
	return out.Flush()
}

// writeMembers prints what every simulated member holds, member by member,
// binding by binding, in delivery order, then the objects it kept because
// they are annotated prune: disabled.
func writeMembers(out *printers.YAMLStream, h *embedded.Hub) error {
	drivers := h.Members()
	for _, name := range drivers.SimulatedNames() {
		sim, ok := drivers.Simulated(name)
		if !ok {
			continue
		}
		var held []*unstructured.Unstructured
		for _, p := range sim.Placed() {
			held = append(held, p.Resources...)
		}
		// Then what the member kept, annotated prune: disabled, after it
		// left its placement's snapshot.
		for _, l := range sim.Left() {
			held = append(held, l.Resource)
		}
		for _, r := range held {
			ann := r.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			ann[MemberClusterAnnotation] = name
			r.SetAnnotations(ann)
			if err := out.WriteManifest(r); err != nil {
				return err
			}
		}
	}
	return nil
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
