package kube

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// The methods below are the Git loop's inputs (hub.Desired): the fleet
// objects of the tracked branch are server-side applied with field manager
// gitfleet, so a field removed from Git is removed from the hub and a
// person's kubectl edit of a field Git sets is taken back on the next sync;
// fields only others set (a person's extra label) stay.

// NoteManager is the field manager of gitfleet's notes on objects (a
// refused change): they are not part of what Git declares, so the next
// apply must not remove them.
const NoteManager = "gitfleet-notes"

// Apply implements hub.Desired by a server-side apply of the object's
// labels, annotations and spec.
func (h *Hub) Apply(ctx context.Context, obj hub.Object) error {
	kind := hub.KindOf(obj)
	if _, ok := resources[kind]; !ok {
		return fmt.Errorf("the hub takes no %T from people", obj)
	}
	u, err := toUnstructured(kind, obj)
	if err != nil {
		return err
	}
	meta := map[string]any{"name": obj.GetName()}
	if ns := obj.GetNamespace(); ns != "" {
		meta["namespace"] = ns
	}
	if l := obj.GetLabels(); len(l) > 0 {
		meta["labels"] = l
	}
	if a := obj.GetAnnotations(); len(a) > 0 {
		meta["annotations"] = a
	}
	applied := map[string]any{"apiVersion": u.GetAPIVersion(), "kind": kind, "metadata": meta}
	if spec, ok := u.Object["spec"]; ok {
		applied["spec"] = spec
	}
	data, err := json.Marshal(applied)
	if err != nil {
		return err
	}
	key := keyOf(obj)
	ref, sum := hub.ObjectRef{Kind: kind, Key: key}, sha256.Sum256(data)
	if h.appliedAlready(ref, sum, obj) {
		return nil
	}
	if err := h.settle(ctx, kind, key); err != nil {
		return err
	}
	force := true
	written, err := h.inNamespace(ctx, key.Namespace, func() (*unstructured.Unstructured, error) {
		return h.resource(kind, key.Namespace).Patch(ctx, key.Name, types.ApplyPatchType, data,
			metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
	})
	if err != nil {
		return wrap(kind, key, err)
	}
	h.appliedMu.Lock()
	h.applied[ref] = appliedState{sum: sum, uid: written.GetUID(), generation: written.GetGeneration()}
	h.appliedMu.Unlock()
	return h.informers[kind].caughtUp(ctx, written)
}

// appliedState is what Apply last wrote of an object: the hash of the
// applied configuration, and the object and generation the API server
// gave it.
type appliedState struct {
	sum        [sha256.Size]byte
	uid        types.UID
	generation int64
}

// appliedAlready reports whether applying obj again (its configuration
// hashing to sum) would change nothing: Apply wrote the same configuration
// last, the hub still holds that object at the generation the write gave it
// (no one changed its spec since, nor deleted or replaced it) and with the
// labels and annotations applied. The Git loop applies every fleet object of every
// commit; on this hub each apply is a request and a wait for the informer,
// one after the other, so a commit of 100 runs in a fleet of 1,000 members
// waited for 1,100 requests before its first run reached the hub.
func (h *Hub) appliedAlready(ref hub.ObjectRef, sum [sha256.Size]byte, obj hub.Object) bool {
	h.appliedMu.Lock()
	last, ok := h.applied[ref]
	h.appliedMu.Unlock()
	if !ok || last.sum != sum {
		return false
	}
	cur := h.cached(ref.Kind, ref.Key)
	return cur != nil && cur.GetUID() == last.uid && cur.GetDeletionTimestamp() == nil && cur.GetGeneration() == last.generation &&
		holds(cur.GetLabels(), obj.GetLabels()) && holds(cur.GetAnnotations(), obj.GetAnnotations())
}

// holds reports whether every key of want is in m with the same value.
func holds(m, want map[string]string) bool {
	for k, v := range want {
		if got, ok := m[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Delete implements hub.Desired; a finalizer may keep the object,
// terminating (a run until the engine has finished its deletion).
func (h *Hub) Delete(ctx context.Context, kind string, key hub.Key) error {
	if _, ok := resources[kind]; !ok {
		return fmt.Errorf("the hub deletes no %s for people", kind)
	}
	if err := h.settle(ctx, kind, key); err != nil {
		return err
	}
	if err := h.remove(ctx, kind, key); err != nil && !hub.IsNotFound(err) {
		return err
	}
	return nil
}

// Annotate implements hub.Desired by a merge patch under NoteManager;
// an unchanged note is not written.
func (h *Hub) Annotate(ctx context.Context, kind string, key hub.Key, name, value string) error {
	cur := h.cached(kind, key)
	if cur == nil {
		return nil
	}
	if have, ok := cur.GetAnnotations()[name]; have == value && (ok || value == "") {
		return nil
	}
	if err := h.settle(ctx, kind, key); err != nil {
		return err
	}
	var v any = value
	if value == "" {
		v = nil // a merge patch removes a null
	}
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{name: v}}})
	if err != nil {
		return err
	}
	written, err := h.resource(kind, key.Namespace).Patch(ctx, key.Name, types.MergePatchType, data,
		metav1.PatchOptions{FieldManager: NoteManager})
	if err != nil {
		return wrap(kind, key, err)
	}
	return h.informers[kind].caughtUp(ctx, written)
}

// settle lets the engine's status writes of a run go first: a person's
// change through Git lands after what the engine handed over, as it would
// had the engine's write been synchronous.
func (h *Hub) settle(ctx context.Context, kind string, key hub.Key) error {
	if !isRunKind(kind) {
		return nil
	}
	_, err := h.settleRun(ctx, key, "")
	return err
}

// ListUpdateStrategies implements hub.Desired.
func (h *Hub) ListUpdateStrategies(context.Context) ([]*fleet.UpdateStrategy, error) {
	return listBoth(h, fleet.KindClusterStagedUpdateStrategy, fleet.KindStagedUpdateStrategy,
		func() *fleet.UpdateStrategy { return &fleet.UpdateStrategy{} })
}

// ListClusterResourceOverrides implements hub.Desired.
func (h *Hub) ListClusterResourceOverrides(context.Context) ([]*fleet.ClusterResourceOverride, error) {
	return list(h, fleet.KindClusterResourceOverride, "", true, labels.Everything(),
		func() *fleet.ClusterResourceOverride { return &fleet.ClusterResourceOverride{} })
}

// ListResourceOverrides implements hub.Desired.
func (h *Hub) ListResourceOverrides(context.Context) ([]*fleet.ResourceOverride, error) {
	return list(h, fleet.KindResourceOverride, "", true, labels.Everything(),
		func() *fleet.ResourceOverride { return &fleet.ResourceOverride{} })
}

// ApplyApprovalRequestStatus implements hub.Desired: a person's
// conditions, merged in Git, replace the request's status on the hub.
func (h *Hub) ApplyApprovalRequestStatus(ctx context.Context, a *fleet.ApprovalRequest) error {
	return hub.ReplaceApprovalRequestStatus(ctx, h, a)
}

// SetResources implements hub.Desired: the workload resources of the
// tracked commit, which Config.Select picks a placement's from.
func (h *Hub) SetResources(res []*unstructured.Unstructured) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.workload = res
}
