package snapshotdiff

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

func group(index string, manifests ...string) *fleet.ResourceSnapshot {
	s := &fleet.ResourceSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "s" + index,
		Labels: map[string]string{fleet.ResourceIndexLabel: index}}}
	for _, m := range manifests {
		s.Spec.SelectedResources = append(s.Spec.SelectedResources, runtime.RawExtension{Raw: []byte(m)})
	}
	return s
}

// TestAnEnvelopeDiffsAsWhatItWraps: clusters receive what an envelope
// wraps, so a change inside one is listed as the wrapped object that
// changes, appears or goes, never as the envelope.
func TestAnEnvelopeDiffsAsWhatItWraps(t *testing.T) {
	envelope := func(entries string) string {
		return `{"apiVersion":"placement.kubernetes-fleet.io/v1beta1","kind":"ClusterResourceEnvelope","metadata":{"name":"example"},"data":{` + entries + `}}`
	}
	role := func(verb string) string {
		return `"role.yaml":{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"pod-reader"},"rules":[{"verbs":["` + verb + `"]}]}`
	}
	webhook := `"webhook.yaml":{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"guard"}}`
	snaps := []*fleet.ResourceSnapshot{
		group("0", envelope(role("get")+","+webhook)),
		group("1", envelope(role("list"))),
	}
	have, _ := Group(snaps, "0")
	want, _ := Group(snaps, "1")
	got := fmt.Sprint(Diff(have, want))
	if exp := "[{changed ClusterRole  pod-reader} {removed ValidatingWebhookConfiguration  guard}]"; got != exp {
		t.Errorf("diff %s, want %s", got, exp)
	}
}
