package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/fluxcd/cli-utils/pkg/object"
	"github.com/fluxcd/pkg/ssa"
	ssaerrors "github.com/fluxcd/pkg/ssa/errors"
	"github.com/fluxcd/pkg/ssa/utils"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/member"
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
	// only objects that still carry them, and no other placement takes
	// over an object that carries them while its placement's record holds
	// it (ownership.go).
	PlacementLabel          = fleet.GitfleetPrefix + "placement"
	PlacementNamespaceLabel = fleet.GitfleetPrefix + "placement-namespace"
	// RecordPlacementLabel and RecordPlacementNamespaceLabel mark an
	// inventory ConfigMap with the placement whose objects it records:
	// a placement has one record per Work of its binding, and prune finds
	// the others by them (heldByOthers), and a placement tells its
	// objects from another's by them (otherRecords).
	RecordPlacementLabel          = fleet.GitfleetPrefix + "inventory-placement"
	RecordPlacementNamespaceLabel = fleet.GitfleetPrefix + "inventory-placement-namespace"
	// inventoryKey is the ConfigMap key of the inventory: a JSON list of
	// resource identifiers, as placement statuses write them.
	inventoryKey = "resources"
	// digestKey and versionsKey record the last full apply: a digest of
	// the objects and, per object, the version the member held after it.
	digestKey   = "digest"
	versionsKey = "versions"
	// hashesKey records the manifest each object was last applied from.
	hashesKey = "hashes"
	// leftKey lists what a prune left on the member because it is
	// annotated prune: disabled: no longer in the inventory, still named in
	// the binding's PruneSkipped condition.
	leftKey = "left"
	// applyConcurrency is how many objects one apply dry-runs at once.
	applyConcurrency = 8
)

// cluster is one member API server, reached through one kubeconfig context.
type cluster struct {
	context string
	// address is the API server's host:port, which redact keeps out of
	// what gitfleet writes to Git and logs.
	address string
	client  client.Client
	rm      *ssa.ResourceManager
	timeout time.Duration

	// placements serialize the applies and removals of one placement's
	// Works, so no prune decides on another Work's record while that Work
	// is being applied.
	placements keyedLock[hub.Key]
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
	out, err := newCluster(name, cfg, c.opts.RequestTimeout)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig context %q: %w", name, err)
	}
	c.clusters[name] = out
	return out, nil
}

// newCluster is the member API server cfg reaches; name is how messages
// call it.
func newCluster(name string, cfg *rest.Config, timeout time.Duration) (*cluster, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = timeout
	// A snapshot of a thousand objects is a few thousand requests on its
	// first apply; client-side throttling at client-go's default 5 QPS
	// would make that minutes. The member's API priority and fairness is
	// what protects it.
	cfg.QPS, cfg.Burst = 1000, 2000
	cfg.UserAgent = "gitfleet"
	cl, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, err
	}
	poller := polling.NewStatusPoller(cl, cl.RESTMapper(), polling.Options{})
	rm := ssa.NewResourceManager(cl, poller, ssa.Owner{Field: FieldManager, Group: "gitfleet.io"})
	rm.SetConcurrency(applyConcurrency)
	out := &cluster{context: name, client: cl, rm: rm, timeout: timeout}
	if u, err := url.Parse(cfg.Host); err == nil && u.Host != "" {
		out.address = u.Host
	}
	return out, nil
}

// redact hides the API server's address in err's message: nothing of a
// kubeconfig goes into binding status (Git) or logs. The context that
// names the server is in every message instead.
func (cl *cluster) redact(err error) error {
	if err == nil || cl.address == "" || !strings.Contains(err.Error(), cl.address) {
		return err
	}
	return &redacted{msg: strings.ReplaceAll(err.Error(), cl.address, "<api-server>"), err: err}
}

type redacted struct {
	msg string
	err error
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }

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
// the API server named one, and the objects applied before it failed.
type applyError struct {
	object  *unstructured.Unstructured
	err     error
	applied []*unstructured.Unstructured
}

func (e *applyError) Error() string { return e.err.Error() }
func (e *applyError) Unwrap() error { return e.err }

// apply puts d's resources on the member and prunes what the previous
// snapshot had and d's has not, except objects annotated prune: disabled,
// which it leaves there. It returns the objects as applied, what the
// member holds of them now, and what prunes of the placement left.
//
// When the member's record says this very snapshot was applied in full,
// and none of its objects changed since (same generation, or same
// resourceVersion for kinds without one), nothing is applied: a restart or
// a redelivery costs a few label-selected LISTs instead of a dry-run per
// object. A changed object makes it a full apply, which restores it.
//
// The apply strategy decides what may be applied (gate): objects held
// back are not applied, and the outcome names them with their drifts or
// diffs. While anything is held, or drifts in fields others set are
// reported (FullComparison), the record carries no digest, so every later
// pass (the periodic drift check) compares again.
//
// An object the record holds that another record of the placement holds
// too (another Work of its binding: it moved there) is not pruned, only
// dropped from this record, as KubeFleet's work applier only drops its
// ownership of an object another AppliedWork co-owns; nor is it named as
// left. The same holds for an object claimed lists: one another Work of
// the binding holds in its manifests on the hub but has not applied yet
// (receiver first: that Work's apply takes it over, so an object moving
// between Works is never deleted and made again).
func (cl *cluster) apply(ctx context.Context, d member.Delivery, claimed inventory) ([]*unstructured.Unstructured, map[string]*unstructured.Unstructured, inventory, outcome, error) {
	defer cl.placements.lock(d.Placement())()
	strategy := fleet.DefaultApplyStrategy(d.Binding.Spec.ApplyStrategy)
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
	old, err := cl.readRecord(ctx, d)
	if err != nil {
		return nil, nil, nil, outcome{}, err
	}
	desired := inventoryOf(objs)
	digest, err := digestOf(objs)
	if err != nil {
		return nil, nil, nil, outcome{}, err
	}
	live, err := cl.list(ctx, objs, labels)
	if err != nil {
		return nil, nil, nil, outcome{}, err
	}
	if old.digest == digest && old.ids.equal(desired) && unchanged(objs, live, old.versions) {
		if !old.labeled {
			// A record written before records carried their placement:
			// labelled once, so other Works' prunes see what it holds.
			if err := cl.writeRecord(ctx, d, old); err != nil {
				return nil, nil, nil, outcome{}, err
			}
		}
		left := old.left
		if len(left) > 0 {
			others, err := cl.heldByOthers(ctx, d)
			if err != nil {
				return nil, nil, nil, outcome{}, err
			}
			left = left.minus(others).minus(claimed)
		}
		return objs, live, left, outcome{}, nil
	}
	taken, err := cl.takenByOthers(ctx, d, objs, live)
	if err != nil {
		return nil, nil, nil, outcome{}, err
	}
	out, err := cl.gate(ctx, objs, live, old, strategy, d.Generation(), taken)
	if err != nil {
		return nil, nil, nil, outcome{}, err
	}
	// What another placement holds is not d's: not recorded, so d's
	// prune never reaches it.
	desired = desired.minus(taken)
	// Recorded before the apply, without a digest, so a crash during it
	// leaves a record that covers whatever reached the member and forces
	// a full apply next time.
	if union := old.ids.union(desired); !union.equal(old.ids) || old.digest != "" {
		if err := cl.writeRecord(ctx, d, record{ids: union, left: old.left, hashes: old.hashes}); err != nil {
			return nil, nil, nil, outcome{}, err
		}
	}
	toApply := objs
	if len(out.held) > 0 {
		toApply = nil
		for _, o := range objs {
			if !out.held[idKey(member.Identify(o))] {
				toApply = append(toApply, o)
			}
		}
	}
	if err := cl.applyAll(ctx, toApply, live); err != nil {
		return nil, nil, nil, outcome{}, err
	}
	// What was left before and is desired again is the placement's again
	// (also when another Work of it holds it now); what was left and is
	// gone from the member (a person deleted it) is no longer named.
	wasLeft, stale := old.left.minus(desired), old.ids.minus(desired)
	if len(wasLeft) > 0 || len(stale) > 0 {
		others, err := cl.heldByOthers(ctx, d)
		if err != nil {
			return nil, nil, nil, outcome{}, err
		}
		wasLeft, stale = wasLeft.minus(others).minus(claimed), stale.minus(others).minus(claimed)
	}
	left, err := cl.present(ctx, wasLeft, labels)
	if err != nil {
		return nil, nil, nil, outcome{}, err
	}
	if len(stale) > 0 {
		kept, err := cl.prune(ctx, d, stale)
		if err != nil {
			return nil, nil, nil, outcome{}, err
		}
		left = left.union(kept)
	}
	if live, err = cl.list(ctx, objs, labels); err != nil {
		return nil, nil, nil, outcome{}, err
	}
	if strategy.ComparisonOption == fleet.ComparisonOptionTypeFullComparison {
		if out.Drifted, err = driftsAfterApply(objs, live, out.held); err != nil {
			return nil, nil, nil, outcome{}, err
		}
	}
	rec := record{ids: desired, digest: digest, versions: versionsOf(live), left: left, hashes: map[string]string{}}
	for _, o := range objs {
		k := idKey(member.Identify(o))
		if out.held[k] {
			if h := old.hashes[k]; h != "" {
				rec.hashes[k] = h
			}
			delete(rec.versions, k) // compared again on every pass
			continue
		}
		rec.hashes[k] = manifestHash(o)
	}
	if len(out.held) > 0 || len(out.Drifted) > 0 {
		rec.digest = "" // compare again on every pass
	}
	if err := cl.writeRecord(ctx, d, rec); err != nil {
		return nil, nil, nil, outcome{}, err
	}
	return objs, live, left, out, nil
}

// applyAll server-side applies objs in two stages, cluster definitions
// (CRDs, Namespaces, ClusterRoles) first, waiting until they are ready, so
// a snapshot that brings its own CRD or namespace applies in one pass.
// Objects already on the member (live) go through Flux's ssa.ApplyAll,
// which dry-runs each and writes only those that differ; objects not there
// yet are applied at once, concurrently: there is nothing to compare them
// with, and ssa writes what it must write one object at a time.
func (cl *cluster) applyAll(ctx context.Context, objs []*unstructured.Unstructured, live map[string]*unstructured.Unstructured) error {
	var defs, rest []*unstructured.Unstructured
	for _, o := range objs {
		if utils.IsClusterDefinition(o) {
			defs = append(defs, o)
		} else {
			rest = append(rest, o)
		}
	}
	opts := ssa.DefaultApplyOptions()
	var mu sync.Mutex
	var applied []*unstructured.Unstructured
	failed := func(ae *applyError) error {
		mu.Lock()
		defer mu.Unlock()
		ae.applied = applied
		return ae
	}
	for stage, group := range [][]*unstructured.Unstructured{defs, rest} {
		var present, absent []*unstructured.Unstructured
		for _, o := range group {
			if _, ok := live[idKey(member.Identify(o))]; ok {
				present = append(present, o)
			} else {
				absent = append(absent, o)
			}
		}
		if len(present) > 0 {
			if _, err := cl.rm.ApplyAll(ctx, present, opts); err != nil {
				var dry *ssaerrors.DryRunErr
				if errors.As(err, &dry) {
					return failed(&applyError{object: dry.InvolvedObject(), err: err})
				}
				return failed(&applyError{err: err})
			}
			applied = append(applied, present...)
		}
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(applyConcurrency)
		for _, o := range absent {
			g.Go(func() error {
				//nolint:staticcheck // client.Apply on unstructured is what ssa itself uses.
				if err := cl.client.Patch(gctx, o.DeepCopy(), client.Apply, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
					return &applyError{object: o, err: fmt.Errorf("%s apply failed: %w", utils.FmtUnstructured(o), err)}
				}
				mu.Lock()
				applied = append(applied, o)
				mu.Unlock()
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			var ae *applyError
			if errors.As(err, &ae) {
				return failed(ae)
			}
			return err
		}
		if stage == 0 && len(defs) > 0 {
			set := object.UnstructuredSetToObjMetadataSet(defs)
			if err := cl.rm.WaitForSetWithContext(ctx, set, ssa.WaitOptions{Interval: 500 * time.Millisecond, Timeout: cl.timeout}); err != nil {
				return failed(&applyError{err: fmt.Errorf("waiting for the CRDs and namespaces to be ready: %w", err)})
			}
		}
	}
	return nil
}

// list reads back the objects of objs that carry labels: one LIST per kind
// and namespace, so reading a thousand objects costs tens of requests.
func (cl *cluster) list(ctx context.Context, objs []*unstructured.Unstructured, labels map[string]string) (map[string]*unstructured.Unstructured, error) {
	scopes := map[scope]bool{}
	for _, o := range objs {
		scopes[scope{o.GroupVersionKind(), o.GetNamespace()}] = true
	}
	live := map[string]*unstructured.Unstructured{}
	err := cl.listScopes(ctx, scopes, func() client.ObjectList { return &unstructured.UnstructuredList{} }, client.MatchingLabels(labels),
		func(sc scope, l client.ObjectList) {
			items := l.(*unstructured.UnstructuredList).Items
			for i := range items {
				item := &items[i]
				if !carries(item, labels) {
					continue // a namespaced placement's of the same name
				}
				item.SetGroupVersionKind(sc.gvk)
				live[idKey(member.Identify(item))] = item
			}
		})
	if err != nil {
		return nil, err
	}
	return live, nil
}

// listScopes lists every scope with sel, one LIST per kind and namespace,
// applyConcurrency at a time, into a list newList makes, and hands each
// list to take, one at a time. A kind the member does not serve (yet) has
// nothing listed.
func (cl *cluster) listScopes(ctx context.Context, scopes map[scope]bool, newList func() client.ObjectList, sel client.ListOption,
	take func(scope, client.ObjectList)) error {
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(applyConcurrency)
	for sc := range scopes {
		g.Go(func() error {
			list := newList()
			list.GetObjectKind().SetGroupVersionKind(sc.gvk.GroupVersion().WithKind(sc.gvk.Kind + "List"))
			opts := []client.ListOption{sel}
			if sc.namespace != "" {
				opts = append(opts, client.InNamespace(sc.namespace))
			}
			if err := cl.client.List(gctx, list, opts...); err != nil {
				if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
					return nil
				}
				return fmt.Errorf("list %s: %w", sc.gvk.Kind, err)
			}
			mu.Lock()
			defer mu.Unlock()
			take(sc, list)
			return nil
		})
	}
	return g.Wait()
}

// version is what tells whether someone changed an object since gitfleet
// applied it: its generation where the kind keeps one (so a controller
// writing status is no change), else its resourceVersion.
func version(u *unstructured.Unstructured) string {
	if g := u.GetGeneration(); g > 0 {
		return "g" + strconv.FormatInt(g, 10)
	}
	return "rv" + u.GetResourceVersion()
}

func versionsOf(live map[string]*unstructured.Unstructured) map[string]string {
	out := make(map[string]string, len(live))
	for k, u := range live {
		out[k] = version(u)
	}
	return out
}

// unchanged reports whether every object is on the member at the version
// recorded after the last full apply.
func unchanged(objs []*unstructured.Unstructured, live map[string]*unstructured.Unstructured, recorded map[string]string) bool {
	for _, o := range objs {
		k := idKey(member.Identify(o))
		u, ok := live[k]
		if !ok || recorded[k] == "" || version(u) != recorded[k] {
			return false
		}
	}
	return true
}

// digestOf is a digest of the objects as they are applied.
func digestOf(objs []*unstructured.Unstructured) (string, error) {
	h := sha256.New()
	for _, o := range objs {
		data, err := json.Marshal(o.Object) // map keys are sorted: canonical
		if err != nil {
			return "", err
		}
		h.Write(data)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// prune deletes the objects of an inventory that still carry d's owner
// labels (carries), in reverse apply order (Flux's), and returns those it
// left because the member's copy (the version last delivered) is
// annotated prune: disabled. An object the record of another placement on
// the member holds is not deleted: two placements that created it at
// once both recorded it, and it is the other's until its apply refuses
// it (takenByOthers). A kind the member no longer serves has nothing left
// to delete. Flux's ResourceManager.Delete is not used: its inclusions
// only match labels, and a cluster-scoped placement's objects are told
// from a namespaced placement's of the same name by a label they lack.
func (cl *cluster) prune(ctx context.Context, d member.Delivery, inv inventory) (inventory, error) {
	labels := ownerLabels(d)
	objs := inv.objects()
	sort.Sort(sort.Reverse(ssa.SortableUnstructureds(objs)))
	kept := inventory{}
	var doomed []*unstructured.Unstructured
	var errs []error
	for _, o := range objs {
		u, err := cl.get(ctx, o)
		switch {
		case err != nil:
			errs = append(errs, err)
		case u == nil || !carries(u, labels):
			// Gone, or a person took it over (removed the labels), or
			// another placement did: not gitfleet's to delete.
		case utils.AnyInMetadata(u, member.PruneExclusions()):
			kept[member.Identify(o)] = true
		default:
			doomed = append(doomed, u)
		}
	}
	if len(doomed) > 0 {
		held, err := cl.heldByOtherPlacements(ctx, d)
		if err != nil {
			return nil, fmt.Errorf("prune: %w", err)
		}
		for _, u := range doomed {
			if held[idKey(member.Identify(u))] {
				continue
			}
			err := cl.client.Delete(ctx, u, client.PropagationPolicy(metav1.DeletePropagationBackground))
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("%s delete failed: %w", utils.FmtUnstructured(u), err))
			}
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("prune: %w", errors.Join(errs...))
	}
	return kept, nil
}

// present is the part of inv the member still holds with labels.
func (cl *cluster) present(ctx context.Context, inv inventory, labels map[string]string) (inventory, error) {
	out := inventory{}
	for _, o := range inv.objects() {
		u, err := cl.get(ctx, o)
		if err != nil {
			return nil, err
		}
		if u != nil && carries(u, labels) {
			out[member.Identify(o)] = true
		}
	}
	return out, nil
}

// get reads o from the member; nil when it is not there, or its kind is
// not served.
func (cl *cluster) get(ctx context.Context, o *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(o.GroupVersionKind())
	err := cl.client.Get(ctx, client.ObjectKeyFromObject(o), u)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get %s: %w", describe(o), err)
	}
	return u, nil
}

// carries reports whether u is marked as applied for the placement whose
// owner labels are labels: it carries every one of them and, for a
// cluster-scoped placement, no namespace label, which only a namespaced
// placement of the same name puts on its objects.
func carries(u *unstructured.Unstructured, labels map[string]string) bool {
	return labelsCarry(u.GetLabels(), labels)
}

// labelsCarry is carries on an object's labels have.
func labelsCarry(have, labels map[string]string) bool {
	for k, v := range labels {
		if have[k] != v {
			return false
		}
	}
	if _, namespaced := labels[PlacementNamespaceLabel]; !namespaced {
		if _, ok := have[PlacementNamespaceLabel]; ok {
			return false
		}
	}
	return true
}

// remove deletes everything the record applied to the member, except what
// is annotated prune: disabled and what another record of the placement
// holds or claimed lists (another Work of the binding), then the record.
// It returns what it left, beside what earlier prunes left.
func (cl *cluster) remove(ctx context.Context, d member.Delivery, claimed inventory) (inventory, error) {
	defer cl.placements.lock(d.Placement())()
	rec, err := cl.readRecord(ctx, d)
	if err != nil {
		return nil, err
	}
	left := rec.left
	if len(rec.ids) > 0 || len(left) > 0 {
		others, err := cl.heldByOthers(ctx, d)
		if err != nil {
			return nil, err
		}
		rec.ids, left = rec.ids.minus(others).minus(claimed), left.minus(others).minus(claimed)
	}
	if len(rec.ids) > 0 {
		kept, err := cl.prune(ctx, d, rec.ids)
		if err != nil {
			return nil, err
		}
		left = left.union(kept)
	}
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	cm.SetNamespace(InventoryNamespace)
	cm.SetName(d.RecordName())
	if err := cl.client.Delete(ctx, cm); err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("delete inventory %s/%s: %w", InventoryNamespace, d.RecordName(), err)
	}
	return left, nil
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

// healthOf computes the kstatus of every object from what the member
// holds: Current only at the object's current generation, so a Deployment
// is never counted on the health of its previous spec.
func healthOf(objs []*unstructured.Unstructured, live map[string]*unstructured.Unstructured, gen int64) (health, error) {
	var h health
	for _, o := range objs {
		res := &status.Result{Status: status.NotFoundStatus, Message: "not found"}
		if u, ok := live[idKey(member.Identify(o))]; ok {
			var err error
			if res, err = status.Compute(u); err != nil {
				return health{}, fmt.Errorf("compute the status of %s: %w", describe(o), err)
			}
		}
		switch res.Status {
		case status.CurrentStatus:
			h.current++
			continue
		case status.FailedStatus:
			h.failed = true
			if len(h.notCurrent) < member.MaxFailedPlacements {
				h.notCurrent = append(h.notCurrent, member.FailedPlacement(o, fleet.ResourceBindingAvailable,
					ManifestFailedReason, res.Message, gen))
			}
			continue
		}
		if len(h.notCurrent) < member.MaxFailedPlacements {
			h.notCurrent = append(h.notCurrent, member.FailedPlacement(o, fleet.ResourceBindingAvailable,
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

// record is the member's inventory ConfigMap: what gitfleet may have
// applied there for one placement, and, after a full apply, the digest of
// what it applied and the version of each object.
type record struct {
	ids      inventory
	digest   string
	versions map[string]string
	// left is what prunes left because it is annotated prune: disabled.
	left inventory
	// hashes are, per object, the manifest it was last applied from
	// (manifestHash): whenToApply: IfNotDrifted holds back an object
	// changed on the member only while its manifest is the same.
	hashes map[string]string
	// labeled: the record carries its placement's labels
	// (RecordPlacementLabel).
	labeled bool
}

// readRecord returns the member's record of d's placement; empty when
// there is none yet.
func (cl *cluster) readRecord(ctx context.Context, d member.Delivery) (record, error) {
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	err := cl.client.Get(ctx, client.ObjectKey{Namespace: InventoryNamespace, Name: d.RecordName()}, cm)
	if apierrors.IsNotFound(err) {
		return record{ids: inventory{}, left: inventory{}}, nil
	} else if err != nil {
		return record{}, fmt.Errorf("read inventory %s/%s: %w", InventoryNamespace, d.RecordName(), err)
	}
	rec, err := parseRecord(cm)
	if err != nil {
		return record{}, err
	}
	rec.labeled = maps.Equal(recordLabels(d), recordLabelsOf(cm))
	return rec, nil
}

// recordLabels are the labels of d's record: its placement's.
func recordLabels(d member.Delivery) map[string]string {
	p := d.Placement()
	l := map[string]string{RecordPlacementLabel: p.Name}
	if p.Namespace != "" {
		l[RecordPlacementNamespaceLabel] = p.Namespace
	}
	return l
}

// recordLabelsOf are the placement labels a record carries.
func recordLabelsOf(cm *unstructured.Unstructured) map[string]string {
	l := map[string]string{}
	for _, k := range []string{RecordPlacementLabel, RecordPlacementNamespaceLabel} {
		if v, ok := cm.GetLabels()[k]; ok {
			l[k] = v
		}
	}
	return l
}

// heldByOthers is what the other records of d's placement on the member
// hold: KubeFleet splits a binding into Works (one per envelope, one per
// part of a large snapshot), each applied and recorded on its own, and all
// applying with the same owner labels; an object moving from one Work to
// another stays held by the one it moved to.
func (cl *cluster) heldByOthers(ctx context.Context, d member.Delivery) (inventory, error) {
	records, err := cl.records(ctx, d)
	if err != nil {
		return nil, err
	}
	held := inventory{}
	for _, cm := range records {
		if cm.GetName() == d.RecordName() {
			continue
		}
		rec, err := parseRecord(cm)
		if err != nil {
			return nil, err
		}
		for id := range rec.ids {
			held[id] = true
		}
	}
	return held, nil
}

// records are the member's records of d's placement (one per Work of its
// binding), by their labels.
func (cl *cluster) records(ctx context.Context, d member.Delivery) ([]*unstructured.Unstructured, error) {
	want := recordLabels(d)
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("v1")
	list.SetKind("ConfigMapList")
	if err := cl.client.List(ctx, list, client.InNamespace(InventoryNamespace), client.MatchingLabels{RecordPlacementLabel: want[RecordPlacementLabel]}); err != nil {
		return nil, fmt.Errorf("list the inventories of placement %s: %w", hub.KeyString(d.Placement()), err)
	}
	var out []*unstructured.Unstructured
	for i := range list.Items {
		if cm := &list.Items[i]; maps.Equal(want, recordLabelsOf(cm)) {
			out = append(out, cm)
		}
	}
	return out, nil
}

// recordNames names the member's records of d's placement, and d's own
// record (WorkName: a record written before records carried their
// placement's labels has that name), sorted. It reads only their
// metadata: a record of a thousand objects is hundreds of KB.
func (cl *cluster) recordNames(ctx context.Context, d member.Delivery) ([]string, error) {
	want := recordLabels(d)
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMapList"})
	if err := cl.client.List(ctx, list, client.InNamespace(InventoryNamespace), client.MatchingLabels{RecordPlacementLabel: want[RecordPlacementLabel]}); err != nil {
		return nil, fmt.Errorf("list the inventories of placement %s: %w", hub.KeyString(d.Placement()), err)
	}
	names := []string{d.WorkName()}
	for i := range list.Items {
		cm := &list.Items[i]
		got := map[string]string{}
		for _, k := range []string{RecordPlacementLabel, RecordPlacementNamespaceLabel} {
			if v, ok := cm.Labels[k]; ok {
				got[k] = v
			}
		}
		if maps.Equal(want, got) {
			names = append(names, cm.Name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// parseRecord reads an inventory ConfigMap.
func parseRecord(cm *unstructured.Unstructured) (record, error) {
	name := InventoryNamespace + "/" + cm.GetName()
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	var ids []fleet.ResourceIdentifier
	if err := json.Unmarshal([]byte(data[inventoryKey]), &ids); err != nil {
		return record{}, fmt.Errorf("inventory %s: %s does not parse: %w", name, inventoryKey, err)
	}
	rec := record{ids: inventory{}, digest: data[digestKey], left: inventory{}}
	for _, id := range ids {
		rec.ids[id] = true
	}
	if v := data[leftKey]; v != "" {
		var left []fleet.ResourceIdentifier
		if err := json.Unmarshal([]byte(v), &left); err != nil {
			return record{}, fmt.Errorf("inventory %s: %s does not parse: %w", name, leftKey, err)
		}
		for _, id := range left {
			rec.left[id] = true
		}
	}
	if v := data[hashesKey]; v != "" {
		if err := json.Unmarshal([]byte(v), &rec.hashes); err != nil {
			return record{}, fmt.Errorf("inventory %s: %s does not parse: %w", name, hashesKey, err)
		}
	}
	if v := data[versionsKey]; v != "" {
		if err := json.Unmarshal([]byte(v), &rec.versions); err != nil {
			return record{}, fmt.Errorf("inventory %s: %s does not parse: %w", name, versionsKey, err)
		}
	}
	return rec, nil
}

// writeRecord records rec on the member, creating gitfleet-system first
// when needed.
func (cl *cluster) writeRecord(ctx context.Context, d member.Delivery, rec record) error {
	ids, err := json.MarshalIndent(rec.ids.sorted(), "", "  ")
	if err != nil {
		return err
	}
	data := map[string]any{inventoryKey: string(ids)}
	if len(rec.left) > 0 {
		left, err := json.MarshalIndent(rec.left.sorted(), "", "  ")
		if err != nil {
			return err
		}
		data[leftKey] = string(left)
	}
	if len(rec.hashes) > 0 {
		hashes, err := json.Marshal(rec.hashes)
		if err != nil {
			return err
		}
		data[hashesKey] = string(hashes)
	}
	if rec.digest != "" {
		versions, err := json.Marshal(rec.versions)
		if err != nil {
			return err
		}
		data[digestKey], data[versionsKey] = rec.digest, string(versions)
	}
	labels := map[string]any{"app.kubernetes.io/managed-by": "gitfleet"}
	for k, v := range recordLabels(d) {
		labels[k] = v
	}
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(InventoryNamespace)
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{
			"name": d.RecordName(), "namespace": InventoryNamespace,
			"labels":      labels,
			"annotations": map[string]any{fleet.GitfleetPrefix + "resource-snapshot": d.Binding.Spec.ResourceSnapshotName},
		},
		"data": data,
	}}
	for _, o := range []*unstructured.Unstructured{ns, cm} {
		//nolint:staticcheck // client.Apply on unstructured is what ssa itself uses.
		if err := cl.client.Patch(ctx, o, client.Apply, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("write inventory %s/%s: %w", InventoryNamespace, d.RecordName(), err)
		}
	}
	return nil
}
