package member

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// Envelopes names, by Identify of each delivered resource that an envelope
// wrapped, that envelope. Members receive an envelope's manifests, never
// the envelope; status names such a manifest with its envelope, as
// KubeFleet names the manifests of an envelope's Work.
type Envelopes map[fleet.ResourceIdentifier]fleet.EnvelopeIdentifier

// Unwrap replaces every envelope among resources by the manifests it
// wraps (fleet.Unwrap: in the order of their keys), and says which
// envelope each came from. The error is KubeFleet's for an envelope whose
// manifests cannot be delivered.
func Unwrap(resources []*unstructured.Unstructured) ([]*unstructured.Unstructured, Envelopes, error) {
	var envs Envelopes
	out := make([]*unstructured.Unstructured, 0, len(resources))
	for _, r := range resources {
		if !fleet.IsEnvelope(r) {
			out = append(out, r)
			continue
		}
		wrapped, err := fleet.Unwrap(r)
		if err != nil {
			return nil, nil, err
		}
		if envs == nil {
			envs = Envelopes{}
		}
		for _, w := range wrapped {
			envs[Identify(w.Object)] = fleet.EnvelopeOf(r)
			out = append(out, w.Object)
		}
	}
	return out, envs, nil
}

// Of returns the envelope u came out of, or nil.
func (e Envelopes) Of(u *unstructured.Unstructured) *fleet.EnvelopeIdentifier {
	env, ok := e[Identify(u)]
	if !ok {
		return nil
	}
	return &env
}

// Name fills in the envelope of each failed placement that came out of
// one, as KubeFleet reports the manifests of an envelope's Work.
func (e Envelopes) Name(failed []fleet.FailedResourcePlacement) []fleet.FailedResourcePlacement {
	if len(e) == 0 {
		return failed
	}
	for i := range failed {
		id := failed[i].ResourceIdentifier
		id.Envelope = nil
		if env, ok := e[id]; ok {
			failed[i].Envelope = &env
		}
	}
	return failed
}

// overrideTarget is a resource as KubeFleet's override errors name it
// (workgenerator's formatOverrideTarget).
func overrideTarget(u *unstructured.Unstructured) string {
	kind := u.GetKind()
	if kind == "" {
		kind = "Unknown"
	}
	if ns := u.GetNamespace(); ns != "" {
		return fmt.Sprintf("%s %q in namespace %q", kind, u.GetName(), ns)
	}
	return fmt.Sprintf("%s %q", kind, u.GetName())
}
