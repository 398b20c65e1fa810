// Package snapshotdiff tells what a resource snapshot changes against
// another: what an approval pull request lists for a stage's clusters and
// what `gitfleet plan` lists for a new snapshot.
package snapshotdiff

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

// Change is one resource that differs: Change is added, changed or
// removed.
type Change struct{ Change, Kind, Namespace, Name string }

// Group returns the resources of snapshot group index (master and
// sub-snapshots) by identity, with their JSON, and the commit the master
// records. An index no snapshot has is an empty group. An envelope stands
// for what it wraps, which is what the clusters receive.
func Group(snaps []*fleet.ResourceSnapshot, index string) (map[Resource][]byte, string) {
	out := map[Resource][]byte{}
	commit := ""
	for _, s := range snaps {
		if s.Labels[fleet.ResourceIndexLabel] != index {
			continue
		}
		if c := s.Annotations[fleet.CommitAnnotation]; c != "" {
			commit = c
		}
		for _, raw := range s.Spec.SelectedResources {
			var obj struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name, Namespace string
				} `json:"metadata"`
			}
			if json.Unmarshal(raw.Raw, &obj) != nil {
				continue
			}
			if wrapped, ok := unwrap(raw.Raw); ok {
				maps.Copy(out, wrapped)
				continue
			}
			out[Resource{obj.Kind, obj.Metadata.Namespace, obj.Metadata.Name}] = raw.Raw
		}
	}
	return out, commit
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
// anything else, and for an envelope that does not unwrap (it then stands
// for itself).
func unwrap(raw []byte) (map[Resource][]byte, bool) {
	u := &unstructured.Unstructured{}
	if u.UnmarshalJSON(raw) != nil || !fleet.IsEnvelope(u) {
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
