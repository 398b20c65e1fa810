package member

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/member/override"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
)

// Delivery is one binding to act on, frozen at the binding write that asked
// for it. Reports about it must carry Binding.Generation so the hub can drop
// them once the binding has moved on.
type Delivery struct {
	// Binding is a copy of the binding at the generation to deliver (or,
	// for a removal, its last state).
	Binding *fleet.Binding
	// Member is the target cluster; nil when it has left the fleet.
	Member *fleet.MemberCluster
	// Resources are the manifests of the bound resource snapshot group
	// (master first, then sub-snapshots in order), each envelope replaced
	// by the manifests it wraps, for a driver that is not a WorkDriver.
	// Empty for removals.
	Resources []*unstructured.Unstructured
	// Envelopes names the envelope of each resource that came out of one.
	Envelopes Envelopes
	// Works are the binding's Works (reconciler/delivery.PushWorks), for
	// a driver that applies Works (WorkDriver) instead of Resources,
	// which are then empty: a binding goes to a member it reaches as it
	// goes to one that pulls. Empty for removals.
	Works []*fleet.Work
	// Record names what the member records of the delivery (the kubeconfig
	// driver's inventory): the Work applied (as KubeFleet's AppliedWork is
	// named after its Work); WorkName when empty.
	Record string
}

// RecordName is the name of what the member records of d.
func (d Delivery) RecordName() string {
	if d.Record != "" {
		return d.Record
	}
	return d.WorkName()
}

// Key is the binding's key.
func (d Delivery) Key() hub.Key {
	return hub.Key{Namespace: d.Binding.Namespace, Name: d.Binding.Name}
}

// Placement is the key of the placement the binding belongs to.
func (d Delivery) Placement() hub.Key {
	return hub.Key{Namespace: d.Binding.Namespace, Name: d.Binding.Labels[fleet.PlacementTrackingLabel]}
}

// Cluster is the target cluster's name.
func (d Delivery) Cluster() string { return d.Binding.Spec.TargetCluster }

// Generation is the binding generation the delivery is for.
func (d Delivery) Generation() int64 { return d.Binding.Generation }

// ReportsDiff reports whether the binding's apply strategy only reports
// differences (ReportDiff): nothing is applied, DiffReported is reported.
func (d Delivery) ReportsDiff() bool {
	return d.Binding.Spec.ApplyStrategy != nil && d.Binding.Spec.ApplyStrategy.Type == fleet.ApplyStrategyTypeReportDiff
}

// WorkName is the name KubeFleet gives the Work of a placement on a member,
// as it appears in the binding's messages: "<placement>-work" for a
// ClusterResourcePlacement, "<namespace>.<placement>-work" for a
// ResourcePlacement.
func (d Delivery) WorkName() string {
	p := d.Placement()
	if p.Namespace == "" {
		return p.Name + "-work"
	}
	return p.Namespace + "." + p.Name + "-work"
}

// Reporter takes a driver's report on a delivery (the hub's interface:
// the hub implements it, and reconciler/hub does not import member).
type Reporter = hub.Reporter

// Driver puts bound snapshots on one member cluster and takes them off.
//
// Deliver applies d.Resources for d.Binding and reports the outcome through
// the Reporter it was built with; Remove takes off what Deliver put there
// for the same binding. A returned error means "not done, try again": the
// hub keeps the work pending and retries on its next Commit. Both must be
// idempotent: after a crash a delivery may be repeated.
type Driver interface {
	Deliver(ctx context.Context, d Delivery) error
	Remove(ctx context.Context, d Delivery) error
}

// WorkDriver is a Driver that applies a binding's Works (Delivery.Works)
// as a member's agent applies them (the kubeconfig driver), not its
// Resources: its bindings then read as those of members that pull.
type WorkDriver interface {
	Driver
	// AppliesWorks marks the driver; it does nothing.
	AppliesWorks()
}

// Prepare is what cluster receives for binding b: the manifests of its
// snapshot group, envelopes unwrapped, with its frozen override snapshots
// applied (to the manifests an envelope wraps, as KubeFleet applies them,
// never to the envelope), and the envelope each came from. missing names
// the override snapshots b froze that are gone (KubeFleet's words). When
// the manifests cannot be made, failed is the condition b reports instead
// (WorkSynchronized=False or Overridden=False) and nothing is delivered:
// both hubs deliver through this, so they fail alike.
func Prepare(b *fleet.Binding, cluster *fleet.MemberCluster, snapshots []*fleet.ResourceSnapshot,
	cros []*fleet.ClusterResourceOverrideSnapshot, ros []*fleet.ResourceOverrideSnapshot, missing []string,
) (resources []*unstructured.Unstructured, envelopes Envelopes, failed *metav1.Condition) {
	fail := func(c metav1.Condition) ([]*unstructured.Unstructured, Envelopes, *metav1.Condition) {
		return nil, nil, &c
	}
	if len(snapshots) == 0 {
		return fail(NotSynchronized(b, fmt.Sprintf("resource snapshot %q is not found", b.Spec.ResourceSnapshotName)))
	}
	res, err := resourcesnapshot.Manifests(snapshots)
	if err != nil {
		return fail(NotSynchronized(b, err.Error()))
	}
	res, envs, err := Unwrap(res)
	if err != nil {
		return fail(NotSynchronized(b, err.Error()))
	}
	if len(missing) > 0 {
		return fail(NotOverridden(b, missing[0]))
	}
	if res, err = overrideAll(res, envs, cluster, cros, ros); err != nil {
		return fail(NotOverridden(b, err.Error()))
	}
	return res, envs, nil
}

// Identify names a resource the way placement statuses do.
func Identify(u *unstructured.Unstructured) fleet.ResourceIdentifier {
	gvk := u.GroupVersionKind()
	return fleet.ResourceIdentifier{
		Group:     gvk.Group,
		Version:   gvk.Version,
		Kind:      gvk.Kind,
		Name:      u.GetName(),
		Namespace: u.GetNamespace(),
	}
}

// Override returns the resources as cluster receives them after the
// binding's override snapshots (reconciler/member/override.Apply, in the binding's
// order): patched, and without those a Delete rule keeps off the cluster.
// The error is KubeFleet's message for Overridden=False.
func Override(resources []*unstructured.Unstructured, cluster *fleet.MemberCluster,
	cros []*fleet.ClusterResourceOverrideSnapshot, ros []*fleet.ResourceOverrideSnapshot) ([]*unstructured.Unstructured, error) {
	return overrideAll(resources, nil, cluster, cros, ros)
}

// overrideAll is Override, naming in its error the envelope a resource came
// out of (KubeFleet's applyOverridesToEnvelopeManifests).
func overrideAll(resources []*unstructured.Unstructured, envs Envelopes, cluster *fleet.MemberCluster,
	cros []*fleet.ClusterResourceOverrideSnapshot, ros []*fleet.ResourceOverrideSnapshot) ([]*unstructured.Unstructured, error) {
	if len(cros) == 0 && len(ros) == 0 {
		return resources, nil
	}
	out := make([]*unstructured.Unstructured, 0, len(resources))
	for _, r := range resources {
		o, deleted, err := override.Apply(r, cluster, cros, ros)
		if err != nil {
			if env := envs.Of(r); env != nil {
				return nil, fmt.Errorf("failed to apply overrides to %s from envelope %s: %w", overrideTarget(r), fleet.EnvelopeRef(env.Namespace, env.Name), err)
			}
			return nil, err
		}
		if !deleted {
			out = append(out, o)
		}
	}
	return out, nil
}
