package resourcesnapshot

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// group is a one-snapshot group at index holding manifests.
func group(index string, manifests ...string) *fleet.ResourceSnapshot {
	s := snap("web-"+index+"-snapshot", index, master(1))
	for _, m := range manifests {
		s.Spec.SelectedResources = append(s.Spec.SelectedResources, runtime.RawExtension{Raw: []byte(m)})
	}
	return s
}

func diff(t *testing.T, snaps []*fleet.ResourceSnapshot, from, to int) string {
	t.Helper()
	gs := Of(snaps)
	resources := func(i int) map[Resource][]byte {
		g, _ := gs.At(i)
		r, err := g.Resources()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	return fmt.Sprint(Diff(resources(from), resources(to)))
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
	if got, want := diff(t, snaps, 0, 1), "[{changed ClusterRole  pod-reader} {removed ValidatingWebhookConfiguration  guard}]"; got != want {
		t.Errorf("diff %s, want %s", got, want)
	}
}

// TestDiffComparesValues: key order and spacing are no change; a resource
// stored as an object compares with the same one stored as JSON.
func TestDiffComparesValues(t *testing.T) {
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"app"},"data":{"k":"v","n":"1"}}`
	reordered := `{ "kind":"ConfigMap", "apiVersion":"v1", "data":{"n":"1","k":"v"}, "metadata":{"namespace":"app","name":"a"}}`
	asObject := group("2")
	asObject.Spec.SelectedResources = []runtime.RawExtension{{Object: &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a", "namespace": "app"},
		"data": map[string]any{"k": "v", "n": "1"}}}}}
	snaps := []*fleet.ResourceSnapshot{group("0", cm), group("1", reordered), asObject,
		group("3", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"app"},"data":{"k":"w","n":"1"}}`,
			`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"app"}}`)}
	for _, tt := range []struct {
		from, to int
		want     string
	}{
		{0, 1, "[]"},
		{0, 2, "[]"},
		{2, 3, "[{changed ConfigMap app a} {added Namespace  app}]"},
		{3, 0, "[{changed ConfigMap app a} {removed Namespace  app}]"},
	} {
		if got := diff(t, snaps, tt.from, tt.to); got != tt.want {
			t.Errorf("diff %d to %d: %s, want %s", tt.from, tt.to, got, tt.want)
		}
	}
}

// TestManifestsDecodesRawAndObjectResources: in snapshot order; a broken
// manifest is an error, not a resource left out.
func TestManifestsDecodesRawAndObjectResources(t *testing.T) {
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "b", "namespace": "ns"}}}
	snaps := []*fleet.ResourceSnapshot{
		{Spec: fleet.ResourceSnapshotSpec{SelectedResources: []runtime.RawExtension{
			{Raw: []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns"}}`)}}}},
		{Spec: fleet.ResourceSnapshotSpec{SelectedResources: []runtime.RawExtension{{Object: cm}}}},
	}
	got, err := Manifests(snaps)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range got {
		names = append(names, u.GetKind()+"/"+u.GetName())
	}
	if fmt.Sprint(names) != "[Namespace/ns ConfigMap/b]" {
		t.Fatalf("Manifests = %v, want [Namespace/ns ConfigMap/b] in snapshot order", names)
	}
	broken := group("0", `{not json`)
	if _, err := Manifests([]*fleet.ResourceSnapshot{broken}); err == nil {
		t.Fatal("Manifests accepted a broken manifest")
	}
	if _, err := Of([]*fleet.ResourceSnapshot{broken})[0].Resources(); err == nil {
		t.Fatal("Resources left a broken manifest out")
	}
}
