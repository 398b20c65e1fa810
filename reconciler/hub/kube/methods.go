package kube

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/snapshothistory"
)

func newPlacement() *fleet.Placement               { return &fleet.Placement{} }
func newPolicySnapshot() *fleet.PolicySnapshot     { return &fleet.PolicySnapshot{} }
func newResourceSnapshot() *fleet.ResourceSnapshot { return &fleet.ResourceSnapshot{} }
func newBinding() *fleet.Binding                   { return &fleet.Binding{} }
func newMemberCluster() *fleet.MemberCluster       { return &fleet.MemberCluster{} }
func newUpdateRun() *fleet.UpdateRun               { return &fleet.UpdateRun{} }
func newApprovalRequest() *fleet.ApprovalRequest   { return &fleet.ApprovalRequest{} }

// ---- placements ----

// GetPlacement implements hub.Placements.
func (h *Hub) GetPlacement(_ context.Context, key hub.Key) (*fleet.Placement, error) {
	p := newPlacement()
	return p, h.get(fleet.PlacementKind(key.Namespace), key, p)
}

// ListPlacements implements hub.Placements.
func (h *Hub) ListPlacements(context.Context) ([]*fleet.Placement, error) {
	return listBoth(h, fleet.KindClusterResourcePlacement, fleet.KindResourcePlacement, newPlacement)
}

// UpdatePlacementStatus implements hub.Placements.
func (h *Hub) UpdatePlacementStatus(ctx context.Context, p *fleet.Placement) error {
	return h.updateStatus(ctx, fleet.PlacementKind(p.Namespace), p)
}

// ---- policy snapshots ----

// ListPolicySnapshots implements hub.PolicySnapshots.
func (h *Hub) ListPolicySnapshots(_ context.Context, placement hub.Key) ([]*fleet.PolicySnapshot, error) {
	return listOfPlacement(h, fleet.PolicySnapshotKind(placement.Namespace), placement, newPolicySnapshot)
}

// CreatePolicySnapshot implements hub.PolicySnapshots.
func (h *Hub) CreatePolicySnapshot(ctx context.Context, s *fleet.PolicySnapshot) error {
	return h.create(ctx, fleet.PolicySnapshotKind(s.Namespace), s)
}

// UpdatePolicySnapshot implements hub.PolicySnapshots: object, then
// status (see update).
func (h *Hub) UpdatePolicySnapshot(ctx context.Context, s *fleet.PolicySnapshot) error {
	return h.update(ctx, fleet.PolicySnapshotKind(s.Namespace), s, func() object { return newPolicySnapshot() })
}

// ---- resource snapshots ----

// ListResourceSnapshots implements hub.ResourceSnapshots.
func (h *Hub) ListResourceSnapshots(_ context.Context, placement hub.Key) ([]*fleet.ResourceSnapshot, error) {
	return listOfPlacement(h, fleet.ResourceSnapshotKind(placement.Namespace), placement, newResourceSnapshot)
}

// CreateResourceSnapshot implements hub.ResourceSnapshots.
func (h *Hub) CreateResourceSnapshot(ctx context.Context, s *fleet.ResourceSnapshot) error {
	return h.create(ctx, fleet.ResourceSnapshotKind(s.Namespace), s)
}

// UpdateResourceSnapshot implements hub.ResourceSnapshots.
func (h *Hub) UpdateResourceSnapshot(ctx context.Context, s *fleet.ResourceSnapshot) error {
	return h.update(ctx, fleet.ResourceSnapshotKind(s.Namespace), s, func() object { return newResourceSnapshot() })
}

// DeleteResourceSnapshot implements hub.ResourceSnapshots.
func (h *Hub) DeleteResourceSnapshot(ctx context.Context, key hub.Key) error {
	return h.remove(ctx, fleet.ResourceSnapshotKind(key.Namespace), key)
}

// MaxSnapshotBytes implements resourcesnapshot.SizeLimiter with
// Config.MaxSnapshotBytes.
func (h *Hub) MaxSnapshotBytes() int { return h.cfg.MaxSnapshotBytes }

// SelectResources implements hub.ResourceSnapshots with Config.Resources,
// or Config.Select over what SetResources handed over.
func (h *Hub) SelectResources(ctx context.Context, p *fleet.Placement) ([]*unstructured.Unstructured, error) {
	switch {
	case h.cfg.Resources != nil:
		return h.cfg.Resources(ctx, p)
	case h.cfg.Select != nil:
		h.mu.Lock()
		workload := h.workload
		h.mu.Unlock()
		return h.cfg.Select(p, workload)
	}
	return nil, errNoResources
}

// ---- bindings ----

// ListBindings implements hub.Bindings.
func (h *Hub) ListBindings(_ context.Context, placement hub.Key) ([]*fleet.Binding, error) {
	return listOfPlacement(h, fleet.BindingKind(placement.Namespace), placement, newBinding)
}

// GetBinding implements hub.Bindings.
func (h *Hub) GetBinding(_ context.Context, key hub.Key) (*fleet.Binding, error) {
	b := newBinding()
	return b, h.get(fleet.BindingKind(key.Namespace), key, b)
}

// CreateBinding implements hub.Bindings.
func (h *Hub) CreateBinding(ctx context.Context, b *fleet.Binding) error {
	return h.create(ctx, fleet.BindingKind(b.Namespace), b)
}

// UpdateBinding implements hub.Bindings: the object, not the status.
// Removing the last finalizer of a deleted binding removes it. On a hub
// that delivers (Config.Deliver), a binding written Bound carries the
// work-cleanup finalizer from that write on (b has it after): delivery
// guards every binding it delivers with it, and adding it in the bind
// saves a write of every binding's first delivery (10,000 of them for 100
// runs of 100 clusters, BenchmarkPullFleet).
func (h *Hub) UpdateBinding(ctx context.Context, b *fleet.Binding) error {
	if h.delivery != nil && b.Spec.State == fleet.BindingStateBound && b.DeletionTimestamp == nil &&
		!slices.Contains(b.Finalizers, fleet.WorkFinalizer) {
		b.Finalizers = append(b.Finalizers, fleet.WorkFinalizer)
	}
	return h.updateObject(ctx, fleet.BindingKind(b.Namespace), b, func() object { return newBinding() })
}

// UpdateBindingStatus implements hub.Bindings through the status
// subresource. On a hub that delivers, the write that starts a binding's
// rollout (the run's RolloutStarted) carries the in-progress report
// delivery writes right after it for a member that pulls
// (delivery.Controller.RolloutStarting; b has it after): one status write
// of every pulled cluster's update instead of two (100 runs of 100
// clusters, BenchmarkPullFleet).
func (h *Hub) UpdateBindingStatus(ctx context.Context, b *fleet.Binding) error {
	if h.delivery != nil {
		h.delivery.RolloutStarting(ctx, b)
	}
	return h.updateStatus(ctx, fleet.BindingKind(b.Namespace), b)
}

// DeleteBinding implements hub.Bindings: the API server sets the
// deletionTimestamp and removes the binding once no finalizer holds it.
func (h *Hub) DeleteBinding(ctx context.Context, key hub.Key) error {
	return h.remove(ctx, fleet.BindingKind(key.Namespace), key)
}

// ---- member clusters ----

// ListMemberClusters implements hub.MemberClusters.
func (h *Hub) ListMemberClusters(context.Context) ([]*fleet.MemberCluster, error) {
	return list(h, fleet.KindMemberCluster, "", true, labels.Everything(), newMemberCluster)
}

// ListMemberClustersReadOnly implements hub.ReadOnlyMemberClusters: the
// conversions of the informer's cache, which the hub replaces when a
// member changes and never modifies, on ListBindingsReadOnly's terms.
// Every pass of a run lists the members; a copy of 1,000 each pass was
// what the embedded hub spent a tenth of serve's CPU on.
func (h *Hub) ListMemberClustersReadOnly(context.Context) ([]*fleet.MemberCluster, error) {
	in := h.informers[fleet.KindMemberCluster]
	cached := in.inf.GetStore().List()
	objs := make([]runtime.Object, len(cached))
	for i, o := range cached {
		objs[i] = o.(runtime.Object)
	}
	return typedShared(in, objs, newMemberCluster)
}

// GetMemberCluster reads one member cluster (delivery.MemberClusterGetter).
func (h *Hub) GetMemberCluster(_ context.Context, name string) (*fleet.MemberCluster, error) {
	m := newMemberCluster()
	if err := h.get(fleet.KindMemberCluster, hub.Key{Name: name}, m); err != nil {
		return nil, err
	}
	return m, nil
}

// UpdateMemberClusterStatus writes a member cluster's status through the
// status subresource (the property collector's write, as KubeFleet's
// member agent writes it); a stale resourceVersion is a Conflict.
func (h *Hub) UpdateMemberClusterStatus(ctx context.Context, m *fleet.MemberCluster) error {
	return h.updateStatus(ctx, fleet.KindMemberCluster, m)
}

// ---- strategies ----

// GetUpdateStrategy implements hub.Strategies.
func (h *Hub) GetUpdateStrategy(_ context.Context, key hub.Key) (*fleet.UpdateStrategy, error) {
	s := &fleet.UpdateStrategy{}
	return s, h.get(fleet.UpdateStrategyKind(key.Namespace), key, s)
}

// ---- runs ----

// GetUpdateRun implements hub.UpdateRuns: the run whole, as a reader of
// its stages' clusters needs it (whole).
func (h *Hub) GetUpdateRun(ctx context.Context, key hub.Key) (*fleet.UpdateRun, error) {
	r := newUpdateRun()
	if err := h.get(fleet.UpdateRunKind(key.Namespace), key, r); err != nil {
		return r, err
	}
	return h.whole(ctx, r)
}

// ListUpdateRuns implements hub.UpdateRuns: every run as GetUpdateRun
// reads it. Whoever lists the runs (which snapshots are in use, the
// concurrent runs of a placement) sees what a Get sees.
func (h *Hub) ListUpdateRuns(ctx context.Context) ([]*fleet.UpdateRun, error) {
	runs, err := listBoth(h, fleet.KindClusterStagedUpdateRun, fleet.KindStagedUpdateRun, newUpdateRun)
	if err != nil {
		return nil, err
	}
	out := runs[:0]
	for _, r := range runs {
		w, err := h.whole(ctx, r)
		switch {
		case hub.IsNotFound(err):
			continue // deleted since the cache listed it
		case err != nil:
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// whole is the cached run r (a copy, which it may modify) whole: with
// the status handed over and not yet written, if any (runstatus.go), read
// from the API server if the cache keeps it as a husk (husk.go), else r.
func (h *Hub) whole(ctx context.Context, r *fleet.UpdateRun) (*fleet.UpdateRun, error) {
	key := keyOf(r)
	if o := h.runOverlay(key, r); o != nil {
		return o, nil
	}
	if isHuskRun(r) {
		return h.wholeRun(ctx, fleet.UpdateRunKind(key.Namespace), key, r.ResourceVersion)
	}
	return r, nil
}

// GetUpdateRunWithoutClusters is GetUpdateRun for a reader of the run's
// metadata and spec only, such as the Git loop's admission, which reads
// every run at every sync: a finished run comes as the cache keeps it,
// without its stages' clusters (husk.go), not read from the API server.
func (h *Hub) GetUpdateRunWithoutClusters(_ context.Context, key hub.Key) (*fleet.UpdateRun, error) {
	r := newUpdateRun()
	if err := h.get(fleet.UpdateRunKind(key.Namespace), key, r); err != nil {
		return nil, err
	}
	if o := h.runOverlay(key, r); o != nil {
		return o, nil
	}
	return r, nil
}

// ListUpdateRunsWithoutClusters is ListUpdateRuns on the terms of
// GetUpdateRunWithoutClusters.
func (h *Hub) ListUpdateRunsWithoutClusters(context.Context) ([]*fleet.UpdateRun, error) {
	runs, err := listBoth(h, fleet.KindClusterStagedUpdateRun, fleet.KindStagedUpdateRun, newUpdateRun)
	if err != nil {
		return nil, err
	}
	for i, r := range runs {
		if o := h.runOverlay(keyOf(r), r); o != nil {
			runs[i] = o
		}
	}
	return runs, nil
}

// ListUnfinishedUpdateRunsReadOnly lists the runs that have not finished
// (snapshothistory.Finished), whole, for a caller that promises not to
// modify them (ListMemberClustersReadOnly's terms): the cache's
// conversions, or with the status handed over and not yet written
// (runstatus.go). A finished run, kept as a husk, is not read from the
// API server; a husk that has not finished (its initialization failed)
// is.
func (h *Hub) ListUnfinishedUpdateRunsReadOnly(ctx context.Context) ([]*fleet.UpdateRun, error) {
	var out []*fleet.UpdateRun
	for _, kind := range []string{fleet.KindClusterStagedUpdateRun, fleet.KindStagedUpdateRun} {
		in := h.informers[kind]
		cached := in.inf.GetStore().List()
		objs := make([]runtime.Object, len(cached))
		for i, o := range cached {
			objs[i] = o.(runtime.Object)
		}
		runs, err := typedShared(in, objs, newUpdateRun)
		if err != nil {
			return nil, err
		}
		for _, r := range runs {
			key := keyOf(r)
			if latest, token := h.overlayOf(key, r.ResourceVersion); latest != nil {
				c := *r
				c.Status, c.ResourceVersion = latest.Status, token
				r = &c
			} else if isHuskRun(r) {
				if snapshothistory.Finished(r) {
					continue
				}
				if r, err = h.wholeRun(ctx, kind, key, r.ResourceVersion); hub.IsNotFound(err) {
					continue
				} else if err != nil {
					return nil, err
				}
			}
			if !snapshothistory.Finished(r) {
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// UpdateUpdateRunStatus implements hub.UpdateRuns through the status
// subresource (never the spec: the engine's copy carries in-memory defaults
// the stored spec must not get), written behind the caller's back
// (runstatus.go). An unchanged status is not written, as with the embedded
// hub.
func (h *Hub) UpdateUpdateRunStatus(ctx context.Context, r *fleet.UpdateRun) error {
	kind := fleet.UpdateRunKind(r.Namespace)
	if !isToken(r.ResourceVersion) {
		was, err := h.cachedRun(kind, r)
		if err != nil {
			return err
		}
		if isHuskRun(was) {
			// Compared with the whole run: a husk lacks the clusters.
			if was, err = h.wholeRun(ctx, kind, keyOf(r), was.ResourceVersion); err != nil {
				return err
			}
		}
		if r.ResourceVersion == was.ResourceVersion && equality.Semantic.DeepEqual(was.Status, r.Status) {
			return nil
		}
	}
	if handed, err := h.handOverRunStatus(ctx, kind, r); handed || err != nil {
		return err
	}
	return h.updateStatus(ctx, kind, r)
}

// UpdateUpdateRunFinalizers implements hub.UpdateRuns by a merge patch of
// metadata.finalizers at the run's resourceVersion (a stale one is a
// Conflict).
func (h *Hub) UpdateUpdateRunFinalizers(ctx context.Context, r *fleet.UpdateRun) error {
	kind := fleet.UpdateRunKind(r.Namespace)
	key := keyOf(r)
	rv, err := h.settleRun(ctx, key, r.ResourceVersion)
	if err != nil {
		return err
	}
	r.ResourceVersion = rv
	was, err := h.cachedRun(kind, r)
	if err != nil {
		return err
	}
	if r.ResourceVersion == was.ResourceVersion && slices.Equal(was.Finalizers, r.Finalizers) {
		return nil
	}
	written, err := h.patchFinalizers(ctx, kind, key, r.ResourceVersion, r.Finalizers)
	if err != nil {
		return err
	}
	r.ResourceVersion = written.GetResourceVersion()
	if written.GetDeletionTimestamp() != nil && len(written.GetFinalizers()) == 0 {
		return h.informers[kind].absent(ctx, key)
	}
	return h.informers[kind].caughtUp(ctx, written)
}

// cachedRun is the cached run r writes to. A run naming no
// resourceVersion is given the cached one; one naming another is stale or
// newer than the cache, and the API server decides (a Conflict, usually).
func (h *Hub) cachedRun(kind string, r *fleet.UpdateRun) (*fleet.UpdateRun, error) {
	key := keyOf(r)
	cur := h.cached(kind, key)
	if cur == nil {
		return nil, wrap(kind, key, apierrors.NewNotFound(resources[kind].GroupResource(), key.Name))
	}
	was := newUpdateRun()
	if err := fromUnstructured(cur, was); err != nil {
		return nil, err
	}
	if r.ResourceVersion == "" {
		r.ResourceVersion = was.ResourceVersion
	}
	return was, nil
}

// RemoveUpdateRun implements hub.UpdateRuns: the run is deleted (if a
// person did not already) and its finalizers dropped, so it is gone.
func (h *Hub) RemoveUpdateRun(ctx context.Context, key hub.Key) error {
	kind := fleet.UpdateRunKind(key.Namespace)
	if _, err := h.settleRun(ctx, key, ""); err != nil {
		return err
	}
	cur := h.cached(kind, key)
	if cur == nil {
		return nil
	}
	if cur.GetDeletionTimestamp() == nil {
		if err := h.remove(ctx, kind, key); err != nil && !hub.IsNotFound(err) {
			return err
		}
	}
	if len(cur.GetFinalizers()) > 0 {
		_, err := h.patchFinalizers(ctx, kind, key, "", nil)
		if err != nil && !hub.IsNotFound(err) {
			return err
		}
	}
	return h.informers[kind].absent(ctx, key)
}

// ---- approval requests ----

// GetApprovalRequest implements hub.ApprovalRequests.
func (h *Hub) GetApprovalRequest(_ context.Context, key hub.Key) (*fleet.ApprovalRequest, error) {
	a := newApprovalRequest()
	return a, h.get(fleet.ApprovalRequestKind(key.Namespace), key, a)
}

// ListApprovalRequests implements hub.ApprovalRequests.
func (h *Hub) ListApprovalRequests(_ context.Context, namespace string, set map[string]string) ([]*fleet.ApprovalRequest, error) {
	return list(h, fleet.ApprovalRequestKind(namespace), namespace, false, labels.SelectorFromSet(set), newApprovalRequest)
}

// CreateApprovalRequest implements hub.ApprovalRequests.
func (h *Hub) CreateApprovalRequest(ctx context.Context, a *fleet.ApprovalRequest) error {
	return h.create(ctx, fleet.ApprovalRequestKind(a.Namespace), a)
}

// UpdateApprovalRequestStatus implements hub.ApprovalRequests.
func (h *Hub) UpdateApprovalRequestStatus(ctx context.Context, a *fleet.ApprovalRequest) error {
	return h.updateStatus(ctx, fleet.ApprovalRequestKind(a.Namespace), a)
}

// DeleteApprovalRequest implements hub.ApprovalRequests.
func (h *Hub) DeleteApprovalRequest(ctx context.Context, key hub.Key) error {
	return h.remove(ctx, fleet.ApprovalRequestKind(key.Namespace), key)
}
