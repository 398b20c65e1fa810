package render

import (
	"encoding/json"
	"regexp"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func mustHash(t *testing.T, rs []*unstructured.Unstructured) string {
	t.Helper()
	h, err := Hash(rs)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func withData(u *unstructured.Unstructured, k, v string) *unstructured.Unstructured {
	u = u.DeepCopy()
	_ = unstructured.SetNestedField(u.Object, v, "data", k)
	return u
}

func TestHashIsOrderIndependentAndSeesEveryField(t *testing.T) {
	base := hubResources()
	h := mustHash(t, base)
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(h) {
		t.Fatalf("hash %q is not sha-256 hex", h)
	}
	reversed := slices.Clone(base)
	slices.Reverse(reversed)
	if got := mustHash(t, reversed); got != h {
		t.Errorf("same resources in another order hash differently")
	}
	if got := mustHash(t, hubResources()); got != h {
		t.Errorf("hash is not deterministic")
	}
	for name, change := range map[string]func([]*unstructured.Unstructured) []*unstructured.Unstructured{
		"data value": func(rs []*unstructured.Unstructured) []*unstructured.Unstructured {
			rs[1] = withData(rs[1], "k", "v")
			return rs
		},
		"label": func(rs []*unstructured.Unstructured) []*unstructured.Unstructured {
			rs[0].SetLabels(map[string]string{"tier": "back"})
			return rs
		},
		"name": func(rs []*unstructured.Unstructured) []*unstructured.Unstructured { rs[3].SetName("w2"); return rs },
		"api version": func(rs []*unstructured.Unstructured) []*unstructured.Unstructured {
			rs[3].SetAPIVersion("example.com/v2")
			return rs
		},
		"one removed": func(rs []*unstructured.Unstructured) []*unstructured.Unstructured { return rs[:9] },
	} {
		rs := change(hubResources())
		if got := mustHash(t, rs); got == h {
			t.Errorf("changing the %s does not change the hash", name)
		}
	}
}

func TestHashIgnoresServerSetFields(t *testing.T) {
	plain := hubResources()
	noisy := hubResources()
	noisy[1].SetResourceVersion("123")
	noisy[1].SetUID("abc")
	_ = unstructured.SetNestedField(noisy[1].Object, map[string]any{"phase": "Active"}, "status")
	noisy[1].SetAnnotations(map[string]string{lastAppliedAnnotation: "{}"})
	if mustHash(t, plain) != mustHash(t, noisy) {
		t.Errorf("server-set fields change the hash")
	}
	if noisy[1].GetResourceVersion() != "123" {
		t.Errorf("Hash modified its input")
	}
}

func TestSnapshotSpecIsSortedCompactJSON(t *testing.T) {
	spec, err := SnapshotSpec(hubResources())
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.SelectedResources) != 10 {
		t.Fatalf("got %d manifests", len(spec.SelectedResources))
	}
	first := map[string]any{}
	if err := json.Unmarshal(spec.SelectedResources[0].Raw, &first); err != nil {
		t.Fatal(err)
	}
	if first["kind"] != "Namespace" {
		t.Errorf("first manifest is %v, want the first Namespace", first["kind"])
	}
	if got := string(spec.SelectedResources[0].Raw); got != `{"apiVersion":"v1","kind":"Namespace","metadata":{"labels":{"team":"a"},"name":"app"}}` {
		t.Errorf("raw = %s", got)
	}
	h1, _ := HashSpec(spec)
	if h2 := mustHash(t, hubResources()); h1 != h2 {
		t.Errorf("HashSpec(SnapshotSpec(x)) != Hash(x)")
	}
}
