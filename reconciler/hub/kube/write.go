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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// object is a fleet object of api/v1beta1.
type object interface {
	metav1.Object
	runtime.Object
}

func keyOf(o metav1.Object) hub.Key { return hub.Key{Namespace: o.GetNamespace(), Name: o.GetName()} }

func (h *Hub) resource(kind, namespace string) dynamic.ResourceInterface {
	r := h.client.Resource(resources[kind])
	if namespace == "" {
		return r
	}
	return r.Namespace(namespace)
}

// toUnstructured converts a fleet object for the API server, with the
// apiVersion and kind of its family (callers may leave TypeMeta empty).
func toUnstructured(kind string, o object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, fmt.Errorf("converting %s %s: %w", kind, o.GetName(), err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(apiVersionOf(kind))
	u.SetKind(kind)
	return u, nil
}

// normalized is the cached object as the engine would write it back: the
// typed round trip drops what api/v1beta1 does not model, so a comparison
// with a converted caller's object sees only real changes.
func normalized(kind string, u *unstructured.Unstructured, newT func() object) (*unstructured.Unstructured, error) {
	t := newT()
	if err := fromUnstructured(u, t); err != nil {
		return nil, err
	}
	return toUnstructured(kind, t)
}

// cached returns the cache's copy of key, nil when absent.
func (h *Hub) cached(kind string, key hub.Key) *unstructured.Unstructured {
	obj, ok, _ := h.informers[kind].inf.GetStore().GetByKey(cacheKey(key.Namespace, key.Name))
	if !ok {
		return nil
	}
	return obj.(*unstructured.Unstructured)
}

// NamespaceManagedBy is the app.kubernetes.io/managed-by label of the
// namespaces gitfleet creates on the hub.
const NamespaceManagedBy = "gitfleet"

// inNamespace makes a write into namespace and, when the hub lacks the
// namespace, creates it and writes again. A namespaced fleet object in Git
// (a ResourcePlacement, a StagedUpdateRun, a ResourceOverride and its
// snapshots) declares its namespace: waiting for a person to create it
// would hold every other object of the commit back. gitfleet never deletes
// a namespace; where it may not create one, wrap says what to do.
func (h *Hub) inNamespace(ctx context.Context, namespace string, write func() (*unstructured.Unstructured, error)) (*unstructured.Unstructured, error) {
	written, err := write()
	if namespace == "" || !namespaceMissing(err) {
		return written, err
	}
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(namespace)
	ns.SetLabels(map[string]string{"app.kubernetes.io/managed-by": NamespaceManagedBy})
	if _, cerr := h.client.Resource(namespacesGVR).Create(ctx, ns, metav1.CreateOptions{FieldManager: FieldManager}); cerr != nil && !apierrors.IsAlreadyExists(cerr) {
		return nil, fmt.Errorf("%w (creating the namespace: %v)", err, cerr)
	}
	h.log.Info("created a namespace on the hub for the fleet objects of Git", "namespace", namespace)
	return write()
}

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// wrap names the object in an API error; hub.IsNotFound and friends see
// through it. A namespaced object whose namespace the hub lacks, and
// gitfleet could not create (inNamespace), says how to fix it.
func wrap(kind string, key hub.Key, err error) error {
	if err == nil {
		return nil
	}
	if key.Namespace != "" && namespaceMissing(err) {
		return fmt.Errorf("%s %q: namespace %q is not on the hub and gitfleet could not create it; create it there (kubectl create namespace %s) or let gitfleet create namespaces (deploy/components/kube-hub/rbac.yaml): %w",
			kind, keyString(key), key.Namespace, key.Namespace, err)
	}
	return fmt.Errorf("%s %q: %w", kind, keyString(key), err)
}

// namespaceMissing reports whether err is the API server's NotFound of the
// namespace a write went to.
func namespaceMissing(err error) bool {
	var s apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &s) {
		return false
	}
	d := s.Status().Details
	return d != nil && d.Kind == "namespaces"
}

// stamped copies what the API server assigned on a write into the caller's
// object, as the embedded hub stamps it: kind, resourceVersion,
// generation, uid and creation time. The rest (an in-memory defaulted
// spec, say) stays the caller's.
func stamped(o object, kind string, written *unstructured.Unstructured) {
	o.GetObjectKind().SetGroupVersionKind(resources[kind].GroupVersion().WithKind(kind))
	o.SetResourceVersion(written.GetResourceVersion())
	o.SetGeneration(written.GetGeneration())
	o.SetUID(written.GetUID())
	o.SetCreationTimestamp(written.GetCreationTimestamp())
}

// create creates o; a status it carries is written through the status
// subresource right after, as creation ignores it.
func (h *Hub) create(ctx context.Context, kind string, o object) error {
	key := keyOf(o)
	u, err := toUnstructured(kind, o)
	if err != nil {
		return err
	}
	u.SetResourceVersion("")
	status, hasStatus := u.Object["status"].(map[string]any)
	res := h.resource(kind, key.Namespace)
	written, err := h.inNamespace(ctx, key.Namespace, func() (*unstructured.Unstructured, error) {
		return res.Create(ctx, u, metav1.CreateOptions{FieldManager: FieldManager})
	})
	if err != nil {
		return wrap(kind, key, err)
	}
	if hasStatus && len(status) > 0 {
		written.Object["status"] = status
		if written, err = res.UpdateStatus(ctx, written, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			return wrap(kind, key, err)
		}
	}
	stamped(o, kind, written)
	return h.informers[kind].caughtUp(ctx, written)
}

// update writes o's metadata and spec, then its status: two requests
// where the embedded hub makes one write. The object goes first because
// the status the engine writes after a spec change (RolloutStarted at the
// new generation) is about that spec: were the status first, a crash in
// between would leave a condition claiming a generation the spec write
// then bumps past, which every reader ignores — harmless but a wasted
// write; object first leaves, at worst, the new spec with conditions of
// the old generation, which readers evaluate as "not yet" and the engine
// re-marks. The status write carries the resourceVersion the first write
// returned, so nobody's write in between is lost (it is a Conflict).
// Parts equal to the cached object are not written.
func (h *Hub) update(ctx context.Context, kind string, o object, newT func() object) error {
	u, was, err := h.toWrite(kind, o, newT)
	if err != nil {
		return err
	}
	statusChanged := !equality.Semantic.DeepEqual(was.Object["status"], u.Object["status"])
	gone, err := h.writeObject(ctx, kind, o, u, was)
	if err != nil || gone || !statusChanged {
		return err
	}
	u.SetResourceVersion(o.GetResourceVersion())
	return h.writeStatus(ctx, kind, o, u)
}

// updateObject writes o's metadata and spec, not its status, unless they
// equal the cached object's.
func (h *Hub) updateObject(ctx context.Context, kind string, o object, newT func() object) error {
	u, was, err := h.toWrite(kind, o, newT)
	if err != nil {
		return err
	}
	_, err = h.writeObject(ctx, kind, o, u, was)
	return err
}

// toWrite converts o for a write (at the cached resourceVersion when o
// names none) and returns the cached object as the engine would write it.
func (h *Hub) toWrite(kind string, o object, newT func() object) (u, was *unstructured.Unstructured, err error) {
	key := keyOf(o)
	if u, err = toUnstructured(kind, o); err != nil {
		return nil, nil, err
	}
	cur := h.cached(kind, key)
	if cur == nil {
		return nil, nil, wrap(kind, key, apierrors.NewNotFound(resources[kind].GroupResource(), key.Name))
	}
	if u.GetResourceVersion() == "" {
		u.SetResourceVersion(cur.GetResourceVersion())
	}
	if was, err = normalized(kind, cur, newT); err != nil {
		return nil, nil, err
	}
	return u, was, nil
}

// writeObject updates the object u (o converted) unless it equals was at
// the same resourceVersion; gone reports that the write removed the last
// finalizer of a terminating object, which is then gone.
func (h *Hub) writeObject(ctx context.Context, kind string, o object, u, was *unstructured.Unstructured) (gone bool, err error) {
	key := keyOf(o)
	if u.GetResourceVersion() == was.GetResourceVersion() && sameObject(was, u) {
		return false, nil
	}
	written, err := h.resource(kind, key.Namespace).Update(ctx, u, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return false, wrap(kind, key, err)
	}
	if written.GetDeletionTimestamp() != nil && len(written.GetFinalizers()) == 0 {
		// The last finalizer is gone: so is the object.
		return true, h.informers[kind].absent(ctx, key)
	}
	stamped(o, kind, written)
	return false, h.informers[kind].caughtUp(ctx, written)
}

// sameObject compares everything but the status and the server-owned
// metadata.
func sameObject(a, b *unstructured.Unstructured) bool {
	return equality.Semantic.DeepEqual(a.Object["spec"], b.Object["spec"]) &&
		equality.Semantic.DeepEqual(a.GetLabels(), b.GetLabels()) &&
		equality.Semantic.DeepEqual(a.GetAnnotations(), b.GetAnnotations()) &&
		equality.Semantic.DeepEqual(a.GetFinalizers(), b.GetFinalizers()) &&
		equality.Semantic.DeepEqual(a.GetOwnerReferences(), b.GetOwnerReferences())
}

// updateStatus writes o's status through the status subresource; the
// API server keeps everything else as stored.
func (h *Hub) updateStatus(ctx context.Context, kind string, o object) error {
	key := keyOf(o)
	u, err := toUnstructured(kind, o)
	if err != nil {
		return err
	}
	if u.GetResourceVersion() == "" {
		cur := h.cached(kind, key)
		if cur == nil {
			return wrap(kind, key, apierrors.NewNotFound(resources[kind].GroupResource(), key.Name))
		}
		u.SetResourceVersion(cur.GetResourceVersion())
	}
	return h.writeStatus(ctx, kind, o, u)
}

// writeStatus writes the status of u (o converted) and stamps o.
func (h *Hub) writeStatus(ctx context.Context, kind string, o object, u *unstructured.Unstructured) error {
	key := keyOf(o)
	written, err := h.resource(kind, key.Namespace).UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return wrap(kind, key, err)
	}
	stamped(o, kind, written)
	return h.informers[kind].caughtUp(ctx, written)
}

// patchFinalizers replaces the finalizers of the object at resourceVersion
// rv (a stale rv is a Conflict) and returns the written object.
func (h *Hub) patchFinalizers(ctx context.Context, kind string, key hub.Key, rv string, finalizers []string) (*unstructured.Unstructured, error) {
	if finalizers == nil {
		finalizers = []string{}
	}
	meta := map[string]any{"finalizers": finalizers}
	if rv != "" {
		meta["resourceVersion"] = rv
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return nil, err
	}
	written, err := h.resource(kind, key.Namespace).Patch(ctx, key.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager})
	return written, wrap(kind, key, err)
}

// remove deletes key; a finalizer may keep it, terminating.
func (h *Hub) remove(ctx context.Context, kind string, key hub.Key) error {
	if err := h.resource(kind, key.Namespace).Delete(ctx, key.Name, metav1.DeleteOptions{}); err != nil {
		return wrap(kind, key, err)
	}
	return h.informers[kind].gone(ctx, key)
}
