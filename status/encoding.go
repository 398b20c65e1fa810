package status

import (
	"reflect"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// encoding is an object's files as last encoded, kept so that the next
// encoding of the object renders only the files whose content changed: a
// run of 10,000 clusters that advanced one batch re-encodes its own file
// and the few parts of that batch, not 5 MB of YAML. The change detector
// is a deep comparison of the Go values behind each file, far cheaper than
// encoding them.
type encoding struct {
	paths []string // its own file first, then the parts in order
	data  [][]byte // content, by index of paths
	// values are what each file was encoded from: the main object (its
	// lists cut when split) and the part values. An object that is not
	// split keeps none: it is one file, re-encoded when it is put again
	// (the hub puts what changed), and 10,000 bindings kept twice, here and
	// in the hub, would cost more memory than their encoding costs time.
	values []any
}

// encodeObject returns obj's files, re-encoding only those whose values
// differ from the cached encoding of ref.
func (s *TreeStore) encodeObject(ref hub.ObjectRef, obj runtime.Object) (*encoding, error) {
	mainPath, err := PathFor(obj)
	if err != nil {
		return nil, err
	}
	layout := s.layoutOf(obj)
	if b, ok := obj.(*fleet.Binding); ok {
		mainPath = stagedBindingPath(mainPath, b.Spec.TargetCluster, layout)
	}
	main, parts, err := split(obj, mainPath, layout)
	if err != nil {
		return nil, err
	}
	prev := map[string]int{}
	old := s.cache[ref]
	if old != nil {
		for i, p := range old.paths {
			prev[p] = i
		}
	}
	reuse := func(p string, v any) []byte {
		if i, ok := prev[p]; ok && old.values[i] != nil && sameValue(old.values[i], v) {
			return old.data[i]
		}
		return nil
	}
	enc := &encoding{paths: make([]string, 0, 1+len(parts)), data: make([][]byte, 0, 1+len(parts)), values: make([]any, 0, 1+len(parts))}
	data := reuse(mainPath, main)
	if data == nil {
		header := ""
		if len(parts) > 0 {
			header = splitHeader(obj, mainPath)
		}
		if data, err = encodeFile(header, main); err != nil {
			return nil, err
		}
	}
	kept := any(main)
	if len(parts) == 0 {
		kept = nil
	}
	enc.paths, enc.data, enc.values = append(enc.paths, mainPath), append(enc.data, data), append(enc.values, kept)
	for _, p := range parts {
		data := reuse(p.path, p.value)
		if data == nil {
			if data, err = encodePart(mainPath, p); err != nil {
				return nil, err
			}
		}
		enc.paths, enc.data, enc.values = append(enc.paths, p.path), append(enc.data, data), append(enc.values, p.value)
	}
	return enc, nil
}

// sameValue reports whether a file's values a and b are the same, as
// reflect.DeepEqual would (or stricter): the parts, which hold nearly all
// of a split object, through the typed comparisons of their lists, which
// cost a tenth of reflection (see fleet.SameClusterUpdatingStatuses).
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case runPart:
		y, ok := b.(runPart)
		return ok && x.StageName == y.StageName && fleet.SameClusterUpdatingStatuses(x.Clusters, y.Clusters)
	case placementPart:
		y, ok := b.(placementPart)
		return ok && (x.Indexes == nil) == (y.Indexes == nil) && slices.Equal(x.Indexes, y.Indexes) &&
			fleet.SamePerClusterPlacementStatuses(x.PlacementStatuses, y.PlacementStatuses)
	}
	return reflect.DeepEqual(a, b)
}

// A field added to a part must be compared in sameValue too; these
// conversions stop the build until it is.
var (
	_ = struct {
		StageName string
		Clusters  []fleet.ClusterUpdatingStatus
	}(runPart{})
	_ = struct {
		Indexes           []int
		PlacementStatuses []fleet.PerClusterPlacementStatus
	}(placementPart{})
)

// wholeObjects is the changeset as Summarize reads it, one path per
// object: the writes of a split object's parts count as a write of its own
// file, and parts deleted with no deletion of the object are left out.
func wholeObjects(changes Changeset, objects map[string]runtime.Object) (Changeset, map[string]runtime.Object) {
	ch := Changeset{Writes: make(map[string][]byte, len(changes.Writes))}
	objs := make(map[string]runtime.Object, len(objects))
	for p, data := range changes.Writes {
		if main, _, ok := partOf(p); ok {
			if _, own := changes.Writes[main]; !own {
				ch.Writes[main] = nil
				objs[main] = objects[p]
			}
			continue
		}
		ch.Writes[p] = data
		objs[p] = objects[p]
	}
	for _, p := range changes.Deletes {
		if _, _, ok := partOf(p); !ok {
			ch.Deletes = append(ch.Deletes, p)
		}
	}
	sort.Strings(ch.Deletes)
	return ch, objs
}
