package kube

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/hub"
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
	return list(h, fleet.PolicySnapshotKind(placement.Namespace), placement.Namespace, false, ofPlacement(placement), newPolicySnapshot)
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
	return list(h, fleet.ResourceSnapshotKind(placement.Namespace), placement.Namespace, false, ofPlacement(placement), newResourceSnapshot)
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

// MaxSnapshotBytes implements updaterun.SnapshotSizeLimiter with
// Config.MaxSnapshotBytes.
func (h *Hub) MaxSnapshotBytes() int { return h.cfg.MaxSnapshotBytes }

// SelectResources implements hub.ResourceSnapshots with Config.Resources.
func (h *Hub) SelectResources(ctx context.Context, p *fleet.Placement) ([]*unstructured.Unstructured, error) {
	if h.cfg.Resources == nil {
		return nil, errNoResources
	}
	return h.cfg.Resources(ctx, p)
}

// ---- bindings ----

// ListBindings implements hub.Bindings.
func (h *Hub) ListBindings(_ context.Context, placement hub.Key) ([]*fleet.Binding, error) {
	return list(h, fleet.BindingKind(placement.Namespace), placement.Namespace, false, ofPlacement(placement), newBinding)
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

// UpdateBinding implements hub.Bindings: object, then status (see
// update). Removing the last finalizer of a deleted binding removes it.
func (h *Hub) UpdateBinding(ctx context.Context, b *fleet.Binding) error {
	return h.update(ctx, fleet.BindingKind(b.Namespace), b, func() object { return newBinding() })
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

// ---- strategies ----

// GetUpdateStrategy implements hub.Strategies.
func (h *Hub) GetUpdateStrategy(_ context.Context, key hub.Key) (*fleet.UpdateStrategy, error) {
	s := &fleet.UpdateStrategy{}
	return s, h.get(fleet.UpdateStrategyKind(key.Namespace), key, s)
}

// ---- runs ----

// GetUpdateRun implements hub.UpdateRuns.
func (h *Hub) GetUpdateRun(_ context.Context, key hub.Key) (*fleet.UpdateRun, error) {
	r := newUpdateRun()
	return r, h.get(fleet.UpdateRunKind(key.Namespace), key, r)
}

// ListUpdateRuns implements hub.UpdateRuns.
func (h *Hub) ListUpdateRuns(context.Context) ([]*fleet.UpdateRun, error) {
	return listBoth(h, fleet.KindClusterStagedUpdateRun, fleet.KindStagedUpdateRun, newUpdateRun)
}

// UpdateUpdateRunStatus implements hub.UpdateRuns: the status through the
// status subresource, the finalizers by a merge patch of metadata (never
// the spec: the engine's copy carries in-memory defaults the stored spec
// must not get). Both writes carry the resourceVersion, so a stale run is
// a Conflict. Order: a finalizer being added goes first, so the run is
// protected before any progress it guards is recorded; one being removed
// goes last, as removing the last finalizer of a deleted run ends it and a
// status write after that would fail.
func (h *Hub) UpdateUpdateRunStatus(ctx context.Context, r *fleet.UpdateRun) error {
	kind := fleet.UpdateRunKind(r.Namespace)
	key := keyOf(r)
	cur := h.cached(kind, key)
	if cur == nil {
		return wrap(kind, key, apierrors.NewNotFound(resources[kind].GroupResource(), key.Name))
	}
	rv := r.ResourceVersion
	if rv == "" {
		rv = cur.GetResourceVersion()
	}
	was := newUpdateRun()
	if err := fromUnstructured(cur, was); err != nil {
		return err
	}
	finalizersChanged := !equality.Semantic.DeepEqual(was.Finalizers, r.Finalizers) && !(len(was.Finalizers) == 0 && len(r.Finalizers) == 0)
	statusChanged := !equality.Semantic.DeepEqual(was.Status, r.Status)
	if rv == cur.GetResourceVersion() && !finalizersChanged && !statusChanged {
		return nil // nothing to write, as the embedded hub
	}
	in := h.informers[kind]
	writeFinalizers := func() error {
		written, err := h.patchFinalizers(ctx, kind, key, rv, r.Finalizers)
		if err != nil {
			return err
		}
		rv = written.GetResourceVersion()
		if written.GetDeletionTimestamp() != nil && len(written.GetFinalizers()) == 0 {
			return in.absent(ctx, key)
		}
		return in.caughtUp(ctx, written)
	}
	writeStatus := func() error {
		next := r.DeepCopy()
		next.ResourceVersion = rv
		if err := h.updateStatus(ctx, kind, next); err != nil {
			return err
		}
		rv = next.ResourceVersion
		return nil
	}
	first, second := writeStatus, writeFinalizers
	if addsFinalizers(was.Finalizers, r.Finalizers) {
		first, second = writeFinalizers, writeStatus
	}
	if finalizersChanged && statusChanged {
		if err := first(); err != nil {
			return err
		}
		if err := second(); err != nil {
			return err
		}
	} else if finalizersChanged {
		if err := writeFinalizers(); err != nil {
			return err
		}
	} else if err := writeStatus(); err != nil {
		return err
	}
	r.ResourceVersion = rv
	return nil
}

// RemoveUpdateRun implements hub.UpdateRuns: the run is deleted (if a
// person did not already) and its finalizers dropped, so it is gone.
func (h *Hub) RemoveUpdateRun(ctx context.Context, key hub.Key) error {
	kind := fleet.UpdateRunKind(key.Namespace)
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
