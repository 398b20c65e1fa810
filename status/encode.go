package status

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	goyaml "go.yaml.in/yaml/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/yamlstream"
)

// Encode renders obj the way `kubectl get -o yaml` would: apiVersion, kind,
// metadata, spec, status with keys sorted. The output is a pure function of
// the object, so re-encoding an unchanged object yields identical bytes and
// the Git loop can drop the write.
//
// Encode leaves out what is noise in a Git tree: null fields (such as
// `creationTimestamp: null`), an empty `status: {}`, and
// metadata.resourceVersion, the hub's in-memory write counter — persisting it
// would turn every no-op write into a diff. TypeMeta is filled in from the Go
// type and the namespace when the caller left it empty.
//
// The result is exactly as long as the document: the status tree keeps the
// bytes of every file it wrote (10,000 bindings), and a buffer grown by
// doubling would keep up to as much again in spare capacity.
func Encode(obj runtime.Object) ([]byte, error) {
	return encodeFile("", obj)
}

// encodeFile is Encode after a header (a comment), both written into one
// pooled buffer and copied out once.
func encodeFile(header string, obj runtime.Object) ([]byte, error) {
	buf := getBuffer()
	defer putBuffer(buf)
	buf.WriteString(header)
	if err := EncodeTo(buf, obj); err != nil {
		return nil, err
	}
	return bytes.Clone(buf.Bytes()), nil
}

// encodeBuffers are the scratch buffers of Encode and of the JSON text it
// prints; one larger than maxPooledBuffer (a run of 10,000 clusters in one
// file) is not kept.
var encodeBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledBuffer = 1 << 20

func getBuffer() *bytes.Buffer {
	buf := encodeBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	return buf
}

func putBuffer(buf *bytes.Buffer) {
	if buf.Cap() <= maxPooledBuffer {
		encodeBuffers.Put(buf)
	}
}

// withJSON calls f with v's JSON text as json.Marshal writes it, held in a
// pooled buffer that f must not keep: json.Marshal copies its output into
// a new slice on every call, a quarter of what a flush allocated.
func withJSON(v any, f func(raw []byte) error) error {
	buf := getBuffer()
	defer putBuffer(buf)
	if err := json.NewEncoder(buf).Encode(v); err != nil { // json.Marshal's text and a newline
		return err
	}
	return f(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// encodeTree is Encode through trees of maps and go-yaml: the reference
// the streaming writer is held to, and what prints the documents it does
// not cover (non-ASCII text, say).
func encodeTree(obj runtime.Object) ([]byte, error) {
	obj = obj.DeepCopyObject()
	if err := fillTypeMeta(obj); err != nil {
		return nil, err
	}
	content, err := cleanMap(obj)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", describeObject(obj), err)
	}
	if md, ok := content["metadata"].(map[string]any); ok {
		delete(md, "resourceVersion")
	}
	if st, ok := content["status"].(map[string]any); ok && len(st) == 0 {
		delete(content, "status")
	}
	out, err := toYAML(content)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", describeObject(obj), err)
	}
	return out, nil
}

// marshalClean renders v as YAML with sorted keys and no null fields,
// through the streaming writer where it covers the document.
func marshalClean(v any) ([]byte, error) {
	buf := getBuffer()
	defer putBuffer(buf)
	if err := marshalCleanTo(buf, v); err != nil {
		return nil, err
	}
	return bytes.Clone(buf.Bytes()), nil
}

// marshalCleanTo appends what marshalClean returns to buf.
func marshalCleanTo(buf *bytes.Buffer, v any) error {
	streamed := false
	err := withJSON(v, func(raw []byte) error {
		if !yamlstream.Supported(raw) {
			return nil
		}
		mark := buf.Len()
		if err := yamlstream.WriteJSON(buf, raw, nil); err != nil {
			buf.Truncate(mark)
			return nil
		}
		streamed = true
		return nil
	})
	if err == nil && streamed {
		return nil
	}
	content, err := cleanMap(v)
	if err != nil {
		return err
	}
	out, err := toYAML(content)
	if err != nil {
		return err
	}
	buf.Write(out)
	return nil
}

// toYAML writes a JSON map as sigs.k8s.io/yaml.Marshal would — the bytes
// kubectl prints — without its second JSON round trip (marshal to JSON,
// parse that JSON as YAML), which took half of the encoding time: numbers
// get the Go types go-yaml would have resolved them to, and go-yaml writes
// the map with sorted keys. TestToYAMLWritesWhatSigsYAMLWrites holds the two
// to the same bytes.
func toYAML(content map[string]any) ([]byte, error) {
	return goyaml.Marshal(yamlValue(content))
}

// yamlValue replaces json.Numbers, in place, by what go-yaml resolves the
// number to: int, int64 or uint64 when it is written as an integer, else
// float64.
func yamlValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = yamlValue(e)
		}
	case []any:
		for i, e := range t {
			t[i] = yamlValue(e)
		}
	case json.Number:
		if i, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			if int64(int(i)) == i {
				return int(i)
			}
			return i
		}
		if u, err := strconv.ParseUint(string(t), 10, 64); err == nil {
			return u
		}
		if f, err := strconv.ParseFloat(string(t), 64); err == nil {
			return f
		}
		return string(t)
	}
	return v
}

// cleanMap is v as a JSON map without null fields.
func cleanMap(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keep integers exact; float64 would round large ones
	var content map[string]any
	if err := dec.Decode(&content); err != nil {
		return nil, err
	}
	dropNulls(content)
	return content, nil
}

// dropNulls removes null map values at every depth. List elements are kept:
// removing one would change the list.
func dropNulls(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == nil {
				delete(t, k)
				continue
			}
			dropNulls(e)
		}
	case []any:
		for _, e := range t {
			dropNulls(e)
		}
	}
}

// fillTypeMeta sets apiVersion and kind from the Go type and the scope when
// they are missing; objects built in code often leave TypeMeta empty.
func fillTypeMeta(obj runtime.Object) error {
	info, ok := fleet.KindFor(obj)
	if !ok {
		return fmt.Errorf("encode: %T is not a fleet object of a known scope", obj)
	}
	ta := obj.GetObjectKind()
	gvk := ta.GroupVersionKind()
	if gvk.Kind == "" {
		gvk.Kind = info.Kind
	}
	if gvk.Group == "" && gvk.Version == "" {
		gvk.Group, gvk.Version = info.Group, info.Version
	}
	ta.SetGroupVersionKind(gvk)
	return nil
}

// kindFor is the kind a fleet object has given its Go type and scope; ""
// when there is none (not a fleet type, or a namespaced MemberCluster).
func kindFor(obj runtime.Object) string {
	info, _ := fleet.KindFor(obj)
	return info.Kind
}

// describeObject names an object in error messages: "Kind ns/name".
func describeObject(obj runtime.Object) string {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if kind == "" {
		kind = fmt.Sprintf("%T", obj)
	}
	if mo, ok := obj.(metav1.Object); ok {
		if mo.GetNamespace() != "" {
			return fmt.Sprintf("%s %s/%s", kind, mo.GetNamespace(), mo.GetName())
		}
		return fmt.Sprintf("%s %s", kind, mo.GetName())
	}
	return kind
}
