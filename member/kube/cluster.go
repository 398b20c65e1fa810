package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/fluxcd/pkg/ssa"
	ssaerrors "github.com/fluxcd/pkg/ssa/errors"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/member"
)

const (
	// FieldManager is the server-side apply field manager of everything
	// gitfleet applies.
	FieldManager = "gitfleet"
	// InventoryNamespace holds, on each member, the record of what gitfleet
	// applied there: one ConfigMap per placement, named after its work.
	InventoryNamespace = "gitfleet-system"
	// PlacementLabel and PlacementNamespaceLabel mark every object gitfleet
	// applies with the placement it belongs to. Prune and removal delete
	// only objects that still carry them.
	PlacementLabel          = fleet.GitfleetPrefix + "placement"
	PlacementNamespaceLabel = fleet.GitfleetPrefix + "placement-namespace"
	// inventoryKey is the ConfigMap key of the inventory: a JSON list of
	// resource identifiers, as placement statuses write them.
	inventoryKey = "resources"
	// applyConcurrency is how many objects one apply dry-runs at once.
	applyConcurrency = 8
)

// cluster is one member API server, reached through one kubeconfig context.
type cluster struct {
	context string
	client  client.Client
	rm      *ssa.ResourceManager
	timeout time.Duration
}

// cluster returns the client of a context, built on first use. Building it
// dials nothing: an unreachable member shows on its first request.
func (c *Clusters) cluster(name string) (*cluster, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.clusters[name]; ok {
		return cl, nil
	}
	if _, ok := c.raw.Contexts[name]; !ok {
		return nil, fmt.Errorf("kubeconfig context %q is not in %s", name, c.source)
	}
	cfg, err := clientcmd.NewDefaultClientConfig(c.raw, &clientcmd.ConfigOverrides{CurrentContext: name}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig context %q: %w", name, err)
	}
	cfg.Timeout = c.opts.RequestTimeout
	cfg.QPS, cfg.Burst = 100, 200
	cfg.UserAgent = "gitfleet"
	cl, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, fmt.Errorf("kubeconfig context %q: %w", name, err)
	}
	poller := polling.NewStatusPoller(cl, cl.RESTMapper(), polling.Options{})
	rm := ssa.NewResourceManager(cl, poller, ssa.Owner{Field: FieldManager, Group: "gitfleet.io"})
	rm.SetConcurrency(applyConcurrency)
	out := &cluster{context: name, client: cl, rm: rm, timeout: c.opts.RequestTimeout}
	c.clusters[name] = out
	return out, nil
}

// ownerLabels are the labels that mark an object as applied for d's
// placement.
func ownerLabels(d member.Delivery) map[string]string {
	p := d.Placement()
	l := map[string]string{PlacementLabel: p.Name}
	if p.Namespace != "" {
		l[PlacementNamespaceLabel] = p.Namespace
	}
	return l
}

// applyError is an apply that failed, with the object it failed on when
// the API server named one.
type applyError struct {
	object *unstructured.Unstructured
	err    error
}

func (e *applyError) Error() string { return e.err.Error() }
func (e *applyError) Unwrap() error { return e.err }

// apply puts d's resources on the member and prunes what the previous
// snapshot had and d's has not. It returns the objects as applied.
func (cl *cluster) apply(ctx context.Context, d member.Delivery) ([]*unstructured.Unstructured, error) {
	labels := ownerLabels(d)
	objs := make([]*unstructured.Unstructured, len(d.Resources))
	for i, r := range d.Resources {
		u := r.DeepCopy()
		l := u.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		for k, v := range labels {
			l[k] = v
		}
		u.SetLabels(l)
		objs[i] = u
	}
	old, err := cl.readInventory(ctx, d)
	if err != nil {
		return nil, err
	}
	desired := inventoryOf(objs)
	// Recorded before the apply, so a crash during it leaves an inventory
	// that covers whatever reached the member.
	if union := old.union(desired); !union.equal(old) {
		if err := cl.writeInventory(ctx, d, union); err != nil {
			return nil, err
		}
	}
	opts := ssa.DefaultApplyOptions()
	opts.WaitInterval, opts.WaitTimeout = 500*time.Millisecond, cl.timeout
	if _, err := cl.rm.ApplyAllStaged(ctx, objs, opts); err != nil {
		var dry *ssaerrors.DryRunErr
		if errors.As(err, &dry) {
			return nil, &applyError{object: dry.InvolvedObject(), err: err}
		}
		return nil, &applyError{err: err}
	}
	if stale := old.minus(desired); len(stale) > 0 {
		if err := cl.prune(ctx, stale, labels); err != nil {
			return nil, err
		}
	}
	if !desired.equal(old.union(desired)) {
		if err := cl.writeInventory(ctx, d, desired); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// prune deletes the objects of an inventory that still carry labels, in
// reverse apply order (Flux's). A kind the member no longer serves has
// nothing left to delete.
func (cl *cluster) prune(ctx context.Context, inv inventory, labels map[string]string) error {
	objs := inv.objects()
	sort.Sort(sort.Reverse(ssa.SortableUnstructureds(objs)))
	opts := ssa.DefaultDeleteOptions()
	opts.Inclusions = labels
	var errs []error
	for _, o := range objs {
		if _, err := cl.rm.Delete(ctx, o, opts); err != nil && !meta.IsNoMatchError(err) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("prune: %w", errors.Join(errs...))
	}
	return nil
}

// remove deletes everything the binding's placement applied to the member,
// then its inventory.
func (cl *cluster) remove(ctx context.Context, d member.Delivery) error {
	inv, err := cl.readInventory(ctx, d)
	if err != nil {
		return err
	}
	if len(inv) > 0 {
		if err := cl.prune(ctx, inv, ownerLabels(d)); err != nil {
			return err
		}
	}
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	cm.SetNamespace(InventoryNamespace)
	cm.SetName(d.WorkName())
	if err := cl.client.Delete(ctx, cm); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete inventory %s/%s: %w", InventoryNamespace, d.WorkName(), err)
	}
	return nil
}

// health is the kstatus of a delivery's objects.
type health struct {
	current int
	// notCurrent lists the objects that are not Current, as failed
	// placements; failed tells whether any of them is Failed rather than
	// still in progress.
	notCurrent []fleet.FailedResourcePlacement
	failed     bool
}

// health reads every object back and computes its kstatus: Current only at
// the object's current generation, so a Deployment is never counted on the
// health of its previous spec.
func (cl *cluster) health(ctx context.Context, objs []*unstructured.Unstructured, gen int64) (health, error) {
	results := make([]*status.Result, len(objs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(applyConcurrency)
	for i, o := range objs {
		g.Go(func() error {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(o.GroupVersionKind())
			err := cl.client.Get(gctx, client.ObjectKeyFromObject(o), live)
			switch {
			case apierrors.IsNotFound(err):
				results[i] = &status.Result{Status: status.NotFoundStatus, Message: "not found"}
				return nil
			case err != nil:
				return fmt.Errorf("read %s: %w", describe(o), err)
			}
			res, err := status.Compute(live)
			if err != nil {
				return fmt.Errorf("compute the status of %s: %w", describe(o), err)
			}
			results[i] = res
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return health{}, err
	}
	var h health
	for i, res := range results {
		switch res.Status {
		case status.CurrentStatus:
			h.current++
			continue
		case status.FailedStatus:
			h.failed = true
			if len(h.notCurrent) < member.MaxFailedPlacements {
				h.notCurrent = append(h.notCurrent, member.FailedPlacement(objs[i], fleet.ResourceBindingAvailable,
					ManifestFailedReason, res.Message, gen))
			}
			continue
		}
		if len(h.notCurrent) < member.MaxFailedPlacements {
			h.notCurrent = append(h.notCurrent, member.FailedPlacement(objs[i], fleet.ResourceBindingAvailable,
				member.ManifestNotAvailableYetReason, member.ManifestNotAvailableYetMessage, gen))
		}
	}
	return h, nil
}

// ManifestFailedReason is the work applier's availability result for an
// object that failed (kstatus Failed); the message is kstatus's.
const ManifestFailedReason = "Failed"

func describe(u *unstructured.Unstructured) string {
	gvk := u.GroupVersionKind()
	kind := gvk.Kind
	if gvk.Group != "" {
		kind += "." + gvk.Group
	}
	if u.GetNamespace() != "" {
		return fmt.Sprintf("%s %s/%s", kind, u.GetNamespace(), u.GetName())
	}
	return fmt.Sprintf("%s %s", kind, u.GetName())
}

// inventory is what gitfleet applied for one placement on one member.
type inventory map[fleet.ResourceIdentifier]bool

func inventoryOf(objs []*unstructured.Unstructured) inventory {
	inv := inventory{}
	for _, o := range objs {
		inv[member.Identify(o)] = true
	}
	return inv
}

func (a inventory) union(b inventory) inventory {
	out := inventory{}
	for id := range a {
		out[id] = true
	}
	for id := range b {
		out[id] = true
	}
	return out
}

func (a inventory) minus(b inventory) inventory {
	out := inventory{}
	for id := range a {
		if !b[id] {
			out[id] = true
		}
	}
	return out
}

func (a inventory) equal(b inventory) bool {
	if len(a) != len(b) {
		return false
	}
	for id := range a {
		if !b[id] {
			return false
		}
	}
	return true
}

func (a inventory) sorted() []fleet.ResourceIdentifier {
	out := make([]fleet.ResourceIdentifier, 0, len(a))
	for id := range a {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return idKey(out[i]) < idKey(out[j]) })
	return out
}

func idKey(id fleet.ResourceIdentifier) string {
	return id.Group + "/" + id.Kind + "/" + id.Namespace + "/" + id.Name
}

// objects are minimal objects to look up and delete an inventory's entries.
func (a inventory) objects() []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, 0, len(a))
	for _, id := range a.sorted() {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(metav1.GroupVersion{Group: id.Group, Version: id.Version}.String())
		u.SetKind(id.Kind)
		u.SetNamespace(id.Namespace)
		u.SetName(id.Name)
		out = append(out, u)
	}
	return out
}

// readInventory returns what the member's inventory records for d's
// placement; empty when there is none yet.
func (cl *cluster) readInventory(ctx context.Context, d member.Delivery) (inventory, error) {
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	err := cl.client.Get(ctx, client.ObjectKey{Namespace: InventoryNamespace, Name: d.WorkName()}, cm)
	if apierrors.IsNotFound(err) {
		return inventory{}, nil
	} else if err != nil {
		return nil, fmt.Errorf("read inventory %s/%s: %w", InventoryNamespace, d.WorkName(), err)
	}
	data, _, _ := unstructured.NestedString(cm.Object, "data", inventoryKey)
	var ids []fleet.ResourceIdentifier
	if err := json.Unmarshal([]byte(data), &ids); err != nil {
		return nil, fmt.Errorf("inventory %s/%s: %s does not parse: %w", InventoryNamespace, d.WorkName(), inventoryKey, err)
	}
	inv := inventory{}
	for _, id := range ids {
		inv[id] = true
	}
	return inv, nil
}

// writeInventory records inv on the member, creating gitfleet-system first
// when needed.
func (cl *cluster) writeInventory(ctx context.Context, d member.Delivery, inv inventory) error {
	data, err := json.MarshalIndent(inv.sorted(), "", "  ")
	if err != nil {
		return err
	}
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(InventoryNamespace)
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{
			"name": d.WorkName(), "namespace": InventoryNamespace,
			"labels":      map[string]any{"app.kubernetes.io/managed-by": "gitfleet"},
			"annotations": map[string]any{fleet.GitfleetPrefix + "resource-snapshot": d.Binding.Spec.ResourceSnapshotName},
		},
		"data": map[string]any{inventoryKey: string(data)},
	}}
	for _, o := range []*unstructured.Unstructured{ns, cm} {
		//nolint:staticcheck // client.Apply on unstructured is what ssa itself uses.
		if err := cl.client.Patch(ctx, o, client.Apply, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("write inventory %s/%s: %w", InventoryNamespace, d.WorkName(), err)
		}
	}
	return nil
}
