package resourcesnapshot

import (
	"bytes"
	"encoding/json"
	"maps"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// Resource names a selected resource as kubectl does.
type Resource struct{ Kind, Namespace, Name string }

// Change is one resource that differs between two groups: Change is
// added, changed or removed.
type Change struct{ Change, Kind, Namespace, Name string }

// Resources are what the group's clusters receive, by identity, with
// their JSON: its Manifests, an envelope standing for what it wraps (an
// envelope that does not unwrap stands for itself). A group without a
// master holds nothing.
func (g Group) Resources() (map[Resource][]byte, error) {
	manifests, err := Manifests(g.Snapshots())
	if err != nil {
		return nil, err
	}
	out := make(map[Resource][]byte, len(manifests))
	for _, u := range manifests {
		if wrapped, ok := unwrap(u); ok {
			maps.Copy(out, wrapped)
			continue
		}
		data, err := u.MarshalJSON()
		if err != nil {
			return nil, err
		}
		out[Resource{u.GetKind(), u.GetNamespace(), u.GetName()}] = data
	}
	return out, nil
}

// Diff lists what changes from the resources have to want, sorted by
// kind, namespace and name.
func Diff(have, want map[Resource][]byte) []Change {
	var out []Change
	for id, w := range want {
		h, ok := have[id]
		switch {
		case !ok:
			out = append(out, Change{"added", id.Kind, id.Namespace, id.Name})
		case !jsonEqual(h, w):
			out = append(out, Change{"changed", id.Kind, id.Namespace, id.Name})
		}
	}
	for id := range have {
		if _, ok := want[id]; !ok {
			out = append(out, Change{"removed", id.Kind, id.Namespace, id.Name})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return out
}

// jsonEqual compares two JSON documents by value (key order and spacing
// do not count).
func jsonEqual(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ca, _ := json.Marshal(x)
	cb, _ := json.Marshal(y)
	return bytes.Equal(ca, cb)
}

// unwrap returns the manifests of an envelope by identity; false for
// anything else, and for an envelope that does not unwrap.
func unwrap(u *unstructured.Unstructured) (map[Resource][]byte, bool) {
	if !fleet.IsEnvelope(u) {
		return nil, false
	}
	wrapped, err := fleet.Unwrap(u)
	if err != nil {
		return nil, false
	}
	out := make(map[Resource][]byte, len(wrapped))
	for _, w := range wrapped {
		data, err := w.Object.MarshalJSON()
		if err != nil {
			return nil, false
		}
		out[Resource{w.Object.GetKind(), w.Object.GetNamespace(), w.Object.GetName()}] = data
	}
	return out, true
}
