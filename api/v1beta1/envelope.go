package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// EnvelopeKind is ClusterResourceEnvelope or ResourceEnvelope.
func EnvelopeKind(namespace string) string {
	return scoped(namespace, KindClusterResourceEnvelope, KindResourceEnvelope)
}

// IsEnvelopeKind reports whether group and kind name an envelope.
func IsEnvelopeKind(group, kind string) bool {
	return group == PlacementGroup && (kind == KindClusterResourceEnvelope || kind == KindResourceEnvelope)
}
