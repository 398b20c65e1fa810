package status

import (
	"fmt"
	"io"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitfleet/gitfleet/internal/yamlstream"
)

// EncodeTo writes what Encode returns to w, printing the object's JSON
// text as YAML as it walks it, without a second JSON round trip and trees
// of maps: serve's status files, `simulate -o yaml` and `get -o yaml` of
// runs and placements of 10,000 clusters go through it. Documents
// yamlstream cannot print byte for byte (non-ASCII text, say) go through
// encodeTree.
func EncodeTo(w io.Writer, obj runtime.Object) error {
	if !typeMetaComplete(obj) {
		obj = obj.DeepCopyObject()
		if err := fillTypeMeta(obj); err != nil {
			return err
		}
	}
	printing := false
	err := withJSON(obj, func(raw []byte) error {
		printing = true
		if !yamlstream.Supported(raw) {
			out, err := encodeTree(obj)
			if err != nil {
				return err
			}
			_, err = w.Write(out)
			return err
		}
		return yamlstream.WriteJSON(w, raw, dropNoise)
	})
	if err != nil && !printing {
		return fmt.Errorf("encode %s: %w", describeObject(obj), err)
	}
	return err
}

// typeMetaComplete reports whether fillTypeMeta would leave obj as it is,
// so EncodeTo need not copy it (the hub's objects carry their kind).
func typeMetaComplete(obj runtime.Object) bool {
	gvk := obj.GetObjectKind().GroupVersionKind()
	return kindFor(obj) != "" && gvk.Kind != "" && (gvk.Group != "" || gvk.Version != "")
}

// dropNoise leaves out what Encode leaves out besides nulls: the
// resourceVersion and an empty status.
func dropNoise(path []string, val []byte) bool {
	switch {
	case slices.Equal(path, []string{"metadata", "resourceVersion"}):
		return true
	case len(path) == 1 && path[0] == "status":
		return yamlstream.EmptyObject(val)
	}
	return false
}
