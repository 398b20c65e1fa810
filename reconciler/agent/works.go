package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

var works = fleet.SchemeGroupVersion.WithResource("works")

// delivered is what the member was last handed for a Work.
type delivered struct {
	generation int64
	ids        []fleet.WorkResourceIdentifier
}

func (a *Agent) next(ctx context.Context) bool {
	name, quit := a.queue.Get()
	if quit {
		return false
	}
	defer a.queue.Done(name)
	if err := a.process(ctx, name); err != nil && ctx.Err() == nil {
		a.log.Info("work not processed, retrying", "work", name, "err", err.Error())
		a.queue.AddRateLimited(name)
		return true
	}
	a.queue.Forget(name)
	return true
}

// process hands Work name to the member as it stands on the hub: applied
// (its AppliedWork written first), or removed once deleted.
func (a *Agent) process(ctx context.Context, name string) error {
	if !a.Joined() {
		return nil // taken again on join
	}
	obj, ok, err := a.works.GetStore().GetByKey(a.namespace + "/" + name)
	if err != nil {
		return err
	}
	if !ok {
		return a.remove(ctx, name)
	}
	w := obj.(*unstructured.Unstructured)
	if w.GetDeletionTimestamp() != nil {
		if !slices.Contains(w.GetFinalizers(), fleet.WorkFinalizer) {
			return nil
		}
		if err := a.remove(ctx, name); err != nil {
			return err
		}
		return a.setFinalizers(ctx, w, slices.DeleteFunc(slices.Clone(w.GetFinalizers()), func(f string) bool { return f == fleet.WorkFinalizer }))
	}
	if !slices.Contains(w.GetFinalizers(), fleet.WorkFinalizer) {
		if err := a.setFinalizers(ctx, w, append(slices.Clone(w.GetFinalizers()), fleet.WorkFinalizer)); err != nil {
			return err
		}
	}
	d, ids, err := a.deliveryOf(w)
	if err != nil {
		return a.reportUnusable(ctx, w, err)
	}
	a.mu.Lock()
	a.delivered[name] = &delivered{generation: w.GetGeneration(), ids: ids}
	a.mu.Unlock()
	aw := &fleet.AppliedWork{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: fleet.AppliedWorkSpec{WorkName: name, WorkNamespace: a.namespace}}
	for _, id := range ids {
		aw.Status.AppliedResources = append(aw.Status.AppliedResources, fleet.AppliedResourceMeta{WorkResourceIdentifier: id})
	}
	if err := a.member.RecordApplied(ctx, aw); err != nil {
		return err
	}
	return a.member.Deliver(ctx, d)
}

// remove takes off the member what Work name applied, and its AppliedWork.
func (a *Agent) remove(ctx context.Context, name string) error {
	d := a.delivery(name, 0, nil, nil)
	if err := a.member.Remove(ctx, d); err != nil {
		return err
	}
	a.mu.Lock()
	delete(a.delivered, name)
	a.mu.Unlock()
	return a.member.ForgetApplied(ctx, name)
}

func (a *Agent) setFinalizers(ctx context.Context, w *unstructured.Unstructured, finalizers []string) error {
	if finalizers == nil {
		finalizers = []string{}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": finalizers, "resourceVersion": w.GetResourceVersion()}})
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(fleet.SchemeGroupVersion.WithKind("Work"))
	obj.SetNamespace(w.GetNamespace())
	obj.SetName(w.GetName())
	if err := a.hub.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("set the finalizers of work %s: %w", w.GetName(), err)
	}
	return nil
}

// deliveryOf is Work w as a delivery to the member — the one place that
// turns a Work into what member/kube's driver (the push transport's code)
// applies: its manifests in order, its apply strategy, named after the
// Work (the member's inventory and the owner labels of what it applies
// are the Work's). It also returns the manifests' identifiers.
func (a *Agent) deliveryOf(w *unstructured.Unstructured) (member.Delivery, []fleet.WorkResourceIdentifier, error) {
	raw, _, err := unstructured.NestedSlice(w.Object, "spec", "workload", "manifests")
	if err != nil {
		return member.Delivery{}, nil, fmt.Errorf("spec.workload.manifests: %w", err)
	}
	resources := make([]*unstructured.Unstructured, 0, len(raw))
	ids := make([]fleet.WorkResourceIdentifier, 0, len(raw))
	for i, m := range raw {
		obj, ok := m.(map[string]any)
		if !ok {
			return member.Delivery{}, nil, fmt.Errorf("manifest %d is not an object", i)
		}
		u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(obj)}
		gvk := u.GroupVersionKind()
		if gvk.Kind == "" || gvk.Version == "" || u.GetName() == "" {
			return member.Delivery{}, nil, fmt.Errorf("manifest %d has no apiVersion, kind or name", i)
		}
		resources = append(resources, u)
		ids = append(ids, fleet.WorkResourceIdentifier{Ordinal: i, Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind,
			Namespace: u.GetNamespace(), Name: u.GetName()})
	}
	var strategy *fleet.ApplyStrategy
	if s, ok, _ := unstructured.NestedMap(w.Object, "spec", "applyStrategy"); ok {
		strategy = &fleet.ApplyStrategy{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(s, strategy); err != nil {
			return member.Delivery{}, nil, fmt.Errorf("spec.applyStrategy: %w", err)
		}
	}
	return a.delivery(w.GetName(), w.GetGeneration(), strategy, resources), ids, nil
}

// delivery names a delivery after Work name: its "placement" is the Work
// (without KubeFleet's -work suffix), so WorkName() gives the Work's name
// back and no two Works share an inventory or owner labels.
func (a *Agent) delivery(name string, generation int64, strategy *fleet.ApplyStrategy, resources []*unstructured.Unstructured) member.Delivery {
	b := &fleet.Binding{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: generation,
		Labels: map[string]string{fleet.PlacementTrackingLabel: strings.TrimSuffix(name, "-work")}},
		Spec: fleet.ResourceBindingSpec{TargetCluster: a.cfg.MemberName, ApplyStrategy: strategy}}
	return member.Delivery{Binding: b, Member: &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: a.cfg.MemberName}},
		Resources: resources}
}
