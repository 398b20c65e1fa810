package v1beta1

import (
	"encoding/json"
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Envelopes carry objects that must not act on the hub (a webhook
// configuration, a ResourceQuota): the hub holds the envelope, a placement
// selects it like any other resource, and members receive its contents.
// gitfleet reads them from Git as hub resources, not as fleet objects the
// engine holds (KindInfo.Workload), and expands them at delivery.

// Kinds of the envelope family.
const (
	KindClusterResourceEnvelope = "ClusterResourceEnvelope"
	KindResourceEnvelope        = "ResourceEnvelope"
)

// EnvelopeIdentifier.Type values, as upstream's EnvelopeType names them.
const (
	ClusterResourceEnvelopeType = "ClusterResourceEnvelope"
	ResourceEnvelopeType        = "ResourceEnvelope"
)

// Labels KubeFleet puts on the Work of an envelope; gitfleet uses no Work
// but names them where KubeFleet's messages do.
const (
	// EnvelopeTypeLabel marks a Work generated from an envelope.
	EnvelopeTypeLabel = FleetPrefix + "envelope-work"
	// EnvelopeNamespaceLabel is the namespace of that envelope.
	EnvelopeNamespaceLabel = FleetPrefix + "envelope-namespace"
	// EnvelopeNameLabel is the name of that envelope.
	EnvelopeNameLabel = FleetPrefix + "envelope-name"
)

// MaxEnvelopeManifests is the most manifests one envelope holds (the CRD's
// maxProperties).
const MaxEnvelopeManifests = 50

// Envelope is a ClusterResourceEnvelope (cluster-scoped: it wraps
// cluster-scoped objects) or a ResourceEnvelope (namespaced: it wraps
// objects of its own namespace).
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type Envelope struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// The manifests wrapped in this envelope.
	//
	// Each manifest is uniquely identified by a string key, typically a filename that represents
	// the manifest. The value is the manifest object itself.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=50
	Data map[string]runtime.RawExtension `json:"data"`
}

// IsEnvelopeKind reports whether group and kind name an envelope.
func IsEnvelopeKind(group, kind string) bool {
	return group == PlacementGroup && (kind == KindClusterResourceEnvelope || kind == KindResourceEnvelope)
}

// IsEnvelope reports whether u is an envelope.
func IsEnvelope(u *unstructured.Unstructured) bool {
	gvk := u.GroupVersionKind()
	return IsEnvelopeKind(gvk.Group, gvk.Kind)
}

// EnvelopeOf names envelope u as placement statuses do (a ResourceIdentifier's
// envelope).
func EnvelopeOf(u *unstructured.Unstructured) EnvelopeIdentifier {
	return EnvelopeIdentifier{Name: u.GetName(), Namespace: u.GetNamespace(), Type: u.GetKind()}
}

// EnvelopeRef is the envelope as KubeFleet's messages print it
// (klog.KObj: namespace/name, or name).
func EnvelopeRef(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// WrappedScopeError is KubeFleet's message for an object of the wrong
// scope in an envelope (workgenerator's extractManifestsFromEnvelopeCR),
// or "" when obj may be wrapped: a ClusterResourceEnvelope wraps objects
// without a namespace, a ResourceEnvelope objects of its own namespace.
// namespaced says whether obj's kind is known to be namespaced (true),
// cluster-scoped (false), or unknown (nil: its namespace decides, as in
// KubeFleet).
func WrappedScopeError(envelope *unstructured.Unstructured, key string, obj *unstructured.Unstructured, namespaced *bool) string {
	envRef := EnvelopeRef(envelope.GetNamespace(), envelope.GetName())
	objRef := EnvelopeRef(obj.GetNamespace(), obj.GetName())
	isNamespaced := obj.GetNamespace() != ""
	if namespaced != nil {
		isNamespaced = *namespaced
	}
	switch {
	case envelope.GetKind() == KindClusterResourceEnvelope && (isNamespaced || obj.GetNamespace() != ""):
		return fmt.Sprintf("a namespaced object %s (%s) has been wrapped in a cluster resource envelope %s", key, objRef, envRef)
	case envelope.GetKind() == KindResourceEnvelope && (!isNamespaced || obj.GetNamespace() == ""):
		return fmt.Sprintf("a cluster scope object %s (%s) has been wrapped in a resource envelope %s", key, objRef, envRef)
	case envelope.GetNamespace() != obj.GetNamespace():
		return fmt.Sprintf("a namespaced object %s (%s) in has been wrapped in a resource envelope from another namespace (%s)", key, objRef, envRef)
	}
	return ""
}

// EnvelopeManifest is one manifest an envelope wraps.
// +kubebuilder:object:generate=false
type EnvelopeManifest struct {
	// Key is its key in the envelope's data.
	Key    string
	Object *unstructured.Unstructured
}

// Unwrap returns the manifests envelope u wraps, in the order of their
// keys, or KubeFleet's error for the first that is not an object or has
// the wrong scope (WrappedScopeError). Render refuses such envelopes, so
// the error is for snapshots made elsewhere.
func Unwrap(u *unstructured.Unstructured) ([]EnvelopeManifest, error) {
	data, _, err := unstructured.NestedMap(u.Object, "data")
	if err != nil {
		return nil, fmt.Errorf("envelope %s: data: %w", EnvelopeRef(u.GetNamespace(), u.GetName()), err)
	}
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]EnvelopeManifest, 0, len(keys))
	for _, k := range keys {
		obj := &unstructured.Unstructured{}
		raw, err := json.Marshal(data[k])
		if err == nil {
			err = obj.UnmarshalJSON(raw)
		}
		if err != nil {
			return nil, fmt.Errorf("failed to parse the wrapped manifest data to a Kubernetes runtime object (manifestKey=%s,envelopeObjRef=%s): %w",
				k, EnvelopeRef(u.GetNamespace(), u.GetName()), err)
		}
		if msg := WrappedScopeError(u, k, obj, nil); msg != "" {
			return nil, fmt.Errorf("%s", msg)
		}
		out = append(out, EnvelopeManifest{Key: k, Object: obj})
	}
	return out, nil
}
