package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/delivery"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// The hub stores the Works of members whose agent pulls them
// (delivery.WorkStore) as real objects in fleet-member-<cluster>, where
// the agent reads them and writes their status. They are delivery's, not
// fleet objects: the engine does not read them and the status tree in Git
// does not hold them.

var _ delivery.WorkStore = (*Hub)(nil)

// worksGVR is the Work resource.
var worksGVR = func() schema.GroupVersionResource {
	k, _ := fleet.LookupKind(fleet.KindWork)
	return k.GroupVersionResource()
}()

// watchWorks adds the Works' informer to factory: a report on a Work (a
// change of its status) or its deletion tells delivery, and kick runs it.
func (h *Hub) watchWorks(factory dynamicinformer.DynamicSharedInformerFactory) error {
	in := &informer{kind: fleet.KindWork, gvr: worksGVR, inf: factory.ForResource(worksGVR).Informer(),
		changed: make(chan struct{}), handled: map[string]handledState{}}
	if err := in.inf.SetTransform(stripManagedFields); err != nil {
		return err
	}
	report := func(old, obj any, deleted bool) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		in.observed(u, deleted)
		if prev, ok := old.(*unstructured.Unstructured); ok && !deleted &&
			equality.Semantic.DeepEqual(prev.Object["status"], u.Object["status"]) {
			return // the hub's own write
		}
		if old == nil && !deleted {
			return // created (by the hub) or listed at the start, which resyncs anyway
		}
		h.delivery.WorkChanged(&fleet.Work{ObjectMeta: metav1.ObjectMeta{Labels: u.GetLabels()}})
		h.kickDelivery()
	}
	if _, err := in.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { report(nil, obj, false) },
		UpdateFunc: func(old, obj any) { report(old, obj, false) },
		DeleteFunc: func(obj any) { report(nil, obj, true) },
	}); err != nil {
		return err
	}
	h.works = in
	return nil
}

// kickDelivery runs delivery soon, once however many Works reported
// meanwhile (runDelivery).
func (h *Hub) kickDelivery() {
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// runDelivery dispatches what the Works' reports asked for until ctx ends.
func (h *Hub) runDelivery(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.kick:
			if err := h.delivery.Dispatch(ctx); err != nil {
				h.log.Error("delivery after a work's report failed; retried on the next", "err", err.Error())
			}
		}
	}
}

// ListWorks implements delivery.WorkStore from the informer's cache; a
// hub that does not deliver (Config.Deliver) watches no Works and holds
// none.
func (h *Hub) ListWorks(_ context.Context, cluster string, binding hub.Key) ([]*fleet.Work, error) {
	if h.works == nil {
		return nil, nil
	}
	objs, err := h.works.inf.GetIndexer().ByIndex(cache.NamespaceIndex, delivery.MemberNamespace(cluster))
	if err != nil {
		return nil, err
	}
	var out []*fleet.Work
	for _, obj := range objs {
		u := obj.(*unstructured.Unstructured)
		if !ofBinding(u.GetLabels(), binding) {
			continue
		}
		w, err := workOf(u)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

func ofBinding(labels map[string]string, binding hub.Key) bool {
	return labels[fleet.ParentBindingLabel] == binding.Name && labels[fleet.ParentNamespaceLabel] == binding.Namespace
}

// ApplyWorks implements delivery.WorkStore: a Work whose spec, labels and
// annotations are as wanted (delivery.SameWork) is not written; the status an agent wrote and
// its finalizers are kept.
func (h *Hub) ApplyWorks(ctx context.Context, cluster string, binding hub.Key, works []*fleet.Work) (bool, error) {
	if h.works == nil {
		return false, errors.New("the hub does not deliver (Config.Deliver), so it keeps no Works")
	}
	have, err := h.ListWorks(ctx, cluster, binding)
	if err != nil {
		return false, err
	}
	byName := make(map[string]*fleet.Work, len(have))
	for _, w := range have {
		byName[w.Name] = w
	}
	res := h.client.Resource(worksGVR).Namespace(delivery.MemberNamespace(cluster))
	changed := false
	for _, want := range works {
		cur, ok := byName[want.Name]
		delete(byName, want.Name)
		var written *unstructured.Unstructured
		switch {
		case !ok:
			u, err := unstructuredOf(want)
			if err != nil {
				return false, err
			}
			written, err = h.inNamespace(ctx, want.Namespace, func() (*unstructured.Unstructured, error) {
				return res.Create(ctx, u, metav1.CreateOptions{FieldManager: FieldManager})
			})
			if err != nil {
				return false, fmt.Errorf("create work %s/%s: %w", want.Namespace, want.Name, err)
			}
		case delivery.SameWork(cur, want):
			continue
		default:
			next := cur.DeepCopy()
			next.Labels, next.Annotations, next.Spec = want.Labels, want.Annotations, want.Spec
			u, err := unstructuredOf(next)
			if err != nil {
				return false, err
			}
			if written, err = res.Update(ctx, u, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
				return false, fmt.Errorf("update work %s/%s: %w", want.Namespace, want.Name, err)
			}
		}
		changed = true
		if err := h.works.caughtUp(ctx, written); err != nil {
			return false, err
		}
	}
	for _, stale := range byName {
		if err := h.deleteWork(ctx, stale); err != nil {
			return false, err
		}
		changed = true
	}
	return changed, nil
}

// DeleteWorks implements delivery.WorkStore.
func (h *Hub) DeleteWorks(ctx context.Context, cluster string, binding hub.Key) (int, error) {
	have, err := h.ListWorks(ctx, cluster, binding)
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, w := range have {
		if w.DeletionTimestamp == nil {
			errs = append(errs, h.deleteWork(ctx, w))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	left, err := h.ListWorks(ctx, cluster, binding)
	return len(left), err
}

// deleteWork deletes w and waits until the cache shows it gone or held by
// a finalizer.
func (h *Hub) deleteWork(ctx context.Context, w *fleet.Work) error {
	err := h.client.Resource(worksGVR).Namespace(w.Namespace).Delete(ctx, w.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete work %s/%s: %w", w.Namespace, w.Name, err)
	}
	return h.works.gone(ctx, hub.Key{Namespace: w.Namespace, Name: w.Name})
}

// workOf and unstructuredOf convert through JSON: a Work's manifests are
// raw JSON, which only their own (un)marshalers read right.
func workOf(u *unstructured.Unstructured) (*fleet.Work, error) {
	data, err := u.MarshalJSON()
	if err != nil {
		return nil, err
	}
	w := &fleet.Work{}
	if err := json.Unmarshal(data, w); err != nil {
		return nil, fmt.Errorf("work %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return w, nil
}

func unstructuredOf(w *fleet.Work) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, err
	}
	u.SetAPIVersion(worksGVR.GroupVersion().String())
	u.SetKind(fleet.KindWork)
	return u, nil
}
