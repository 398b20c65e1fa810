package render

import (
	"encoding/json"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// An envelope (ClusterResourceEnvelope, ResourceEnvelope) is a hub resource
// like any workload resource: placements select it and snapshots hold it.
// Its manifests are what members receive, so they are checked here as the
// documents of a file are, each named by its data key: a bad one refuses
// the commit, as a bad workload resource does, instead of failing at
// delivery as it would in KubeFleet.

// envelopeResource checks an envelope and its manifests and returns it as
// a workload resource, with the references of the manifests it wraps
// (for duplicates).
func envelopeResource(d document, ref ObjectRef, gvk schema.GroupVersionKind, mk func(string, string) ManifestError) (*unstructured.Unstructured, []ObjectRef, []ManifestError) {
	if gvk.Version != fleet.Version {
		return nil, nil, []ManifestError{mk("apiVersion", fmt.Sprintf("%s is not supported for %s (KubeFleet serves it at %s/%s only)", gvk.GroupVersion(), gvk.Kind, fleet.PlacementGroup, fleet.Version))}
	}
	data, err := json.Marshal(d.obj)
	if err != nil {
		return nil, nil, []ManifestError{mk("", err.Error())}
	}
	if errs := strictDecode(data, &fleet.Envelope{}, mk); len(errs) > 0 {
		return nil, nil, errs
	}
	manifests, isMap := d.obj["data"].(map[string]any)
	switch {
	case d.obj["data"] == nil:
		return nil, nil, []ManifestError{mk("data", "Required value")}
	case !isMap:
		return nil, nil, []ManifestError{mk("data", notAnObject("data", d.obj["data"]))}
	case len(manifests) == 0:
		return nil, nil, []ManifestError{mk("data", "Invalid value: 0: data in body should have at least 1 properties")}
	case len(manifests) > fleet.MaxEnvelopeManifests:
		return nil, nil, []ManifestError{mk("data", fmt.Sprintf("Too many: %d: must have at most %d items", len(manifests), fleet.MaxEnvelopeManifests))}
	}
	env := &unstructured.Unstructured{Object: d.obj}
	keys := make([]string, 0, len(manifests))
	for k := range manifests {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var (
		errs    []ManifestError
		wrapped []ObjectRef
	)
	for _, k := range keys {
		p := field.NewPath("data").Key(k).String()
		at := func(fieldPath, msg string) ManifestError {
			if fieldPath != "" {
				fieldPath = p + "." + fieldPath
			} else {
				fieldPath = p
			}
			return mk(fieldPath, msg)
		}
		obj, isObj := manifests[k].(map[string]any)
		if !isObj {
			errs = append(errs, at("", notAnObject("data."+k, manifests[k])))
			continue
		}
		wref, merrs := wrappedManifest(env, k, obj, at)
		if len(merrs) > 0 {
			errs = append(errs, merrs...)
			continue
		}
		wrapped = append(wrapped, wref)
	}
	if len(errs) > 0 {
		return nil, nil, errs
	}
	res, errs := workloadResource(d, ref, mk)
	return res, wrapped, errs
}

// wrappedManifest checks one manifest of env: identified as a document
// is, a kind that exists, valid names, and the scope env allows.
func wrappedManifest(env *unstructured.Unstructured, key string, obj map[string]any, at func(string, string) ManifestError) (ObjectRef, []ManifestError) {
	ref, gvk, merr := identify(document{obj: obj})
	if merr != nil {
		return ObjectRef{}, []ManifestError{at(merr.Field, merr.Message)}
	}
	if errs := checkNames(ref); len(errs) > 0 {
		return ObjectRef{}, fieldErrors(errs, at)
	}
	if fieldPath, msg, ok := checkKind(gvk); !ok {
		return ObjectRef{}, []ManifestError{at(fieldPath, msg)}
	}
	var namespaced *bool
	gk := ref.Group + "/" + ref.Kind
	switch {
	case wellKnownNamespaced[gk]:
		namespaced = new(bool)
		*namespaced = true
	case wellKnownClusterScoped[gk]:
		namespaced = new(bool)
	}
	if msg := fleet.WrappedScopeError(env, key, &unstructured.Unstructured{Object: obj}, namespaced); msg != "" {
		return ObjectRef{}, []ManifestError{at("metadata.namespace", msg)}
	}
	return ref, nil
}

// notAnObject is the API server's message for a value of fieldPath that
// the envelope's schema wants an object for.
func notAnObject(fieldPath string, v any) string {
	t := "null"
	switch v.(type) {
	case string:
		t = "string"
	case bool:
		t = "boolean"
	case int, int64, uint64:
		t = "integer"
	case float64:
		t = "number"
	case []any:
		t = "array"
	}
	return fmt.Sprintf("Invalid value: %q: %s in body must be of type object: %q", t, fieldPath, t)
}
