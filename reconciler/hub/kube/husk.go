package kube

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/updaterun"
)

// The informers keep a run that has ended (updaterun.Ended: it succeeded,
// failed, or its initialization failed, and it is not being deleted) as
// a husk: without the clusters of its stages and of its deletion stage.
// Those are nearly all of a large run (a finished run of 1,000 clusters
// is 409 KB as the API server returns it) and an ended run never changes
// again (spec §2.1: every later pass does nothing, whatever its spec
// says), so the cache would otherwise grow by that much with every run
// that ends. Its deletion gives it a deletionTimestamp, which the cache
// keeps whole again: the deletion pass reads the run from the cache.
//
// Readers that need the clusters read the run whole from the API server
// (wholeRun), at the cached resourceVersion or later: GetUpdateRun,
// ListUpdateRuns, the comparison of a status written, and the status
// tree's copy (mirrorLocked). Readers of a run's metadata and spec, and
// those of unfinished runs only, take the cache as it is
// (GetUpdateRunWithoutClusters, ListUpdateRunsWithoutClusters,
// ListUnfinishedUpdateRunsReadOnly). Nothing shows a husk to a person or
// writes it to Git.

// transformRun is the run informers' transform: managedFields dropped
// (stripManagedFields) and an ended run cut to its husk.
func transformRun(obj any) (any, error) {
	obj, err := stripManagedFields(obj)
	if err != nil {
		return obj, err
	}
	if u, ok := obj.(*unstructured.Unstructured); ok && isHusk(u) {
		status, _ := u.Object["status"].(map[string]any)
		stages, _ := status["stagesStatus"].([]any)
		for _, st := range stages {
			if st, ok := st.(map[string]any); ok {
				delete(st, "clusters")
			}
		}
		if d, ok := status["deletionStageStatus"].(map[string]any); ok {
			delete(d, "clusters")
		}
	}
	return obj, nil
}

// isHusk reports whether the cache keeps run u (a run as the API server
// returns it, or as cached) as a husk: it has ended and has stages. The
// transform cuts exactly these, and a husk still says both, so the same
// test tells a husk in the cache.
func isHusk(u *unstructured.Unstructured) bool {
	status, _ := u.Object["status"].(map[string]any)
	if status == nil {
		return false
	}
	if stages, _ := status["stagesStatus"].([]any); len(stages) == 0 && status["deletionStageStatus"] == nil {
		return false
	}
	// updaterun.Ended reads the deletion and the conditions' types and
	// statuses only: a run of just those, without converting the rest.
	r := &fleet.UpdateRun{}
	r.DeletionTimestamp = u.GetDeletionTimestamp()
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		c, _ := c.(map[string]any)
		typ, _ := c["type"].(string)
		st, _ := c["status"].(string)
		r.Status.Conditions = append(r.Status.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionStatus(st)})
	}
	return updaterun.Ended(r)
}

// isHuskRun is isHusk of a typed run (a cached run converted).
func isHuskRun(r *fleet.UpdateRun) bool {
	return (len(r.Status.StagesStatus) > 0 || r.Status.DeletionStageStatus != nil) && updaterun.Ended(r)
}

// wholeRun reads run key whole from the API server, at resourceVersion rv
// (the cached one) or later, without managedFields as the cache keeps
// it. A GET at a resourceVersion is served from the API server's watch
// cache.
func (h *Hub) wholeRun(ctx context.Context, kind string, key hub.Key, rv string) (*fleet.UpdateRun, error) {
	u, err := h.resource(kind, key.Namespace).Get(ctx, key.Name, metav1.GetOptions{ResourceVersion: rv})
	if err != nil {
		return nil, wrap(kind, key, err)
	}
	u.SetManagedFields(nil)
	r := newUpdateRun()
	if err := fromUnstructured(u, r); err != nil {
		return nil, err
	}
	return r, nil
}

// shedFinishedChainLocked drops what the status chain of run key keeps
// of the status handed over last, once that status is written, the hub
// handles it (handledRV, the state of the run the hub handled or is
// handling, is at the chain's last write or later) and the cache keeps
// the run as a husk: the run has ended, and the chain would otherwise
// keep a whole copy of every finished run. The chain's token still stands
// for its last write (settleRun), and reads go to the cache (runOverlay).
// h.chainMu is held.
func (h *Hub) shedFinishedChainLocked(key hub.Key, c *statusChain, handledRV string) {
	if c.latest == nil || c.err != nil || c.busy() || !atLeast(handledRV, c.base) {
		return
	}
	if u := h.cached(c.kind, key); u != nil && atLeast(u.GetResourceVersion(), c.base) && isHusk(u) {
		c.latest = nil
	}
}

// shedFinishedChain is shedFinishedChainLocked for the informer's
// handler, about to mark u, a state of a run, handled: before, so that
// whoever waits for the hub to have handled the chain's last write
// (statusWritesPending) finds the chain shed.
func (h *Hub) shedFinishedChain(u *unstructured.Unstructured) {
	key := hub.Key{Namespace: u.GetNamespace(), Name: u.GetName()}
	h.chainMu.Lock()
	defer h.chainMu.Unlock()
	if c := h.chains[key]; c != nil {
		h.shedFinishedChainLocked(key, c, u.GetResourceVersion())
	}
}
