package status

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/yamlstream"
)

// Decode reads one fleet object written by Encode (or by a person, for
// approval files). It is strict: unknown fields, duplicate keys, a kind
// outside the fleet API or an apiVersion that does not match the kind are
// errors, because a typo in a status or approval file must not be silently
// dropped on the next write.
func Decode(data []byte) (runtime.Object, error) { return DecodeFile("", data) }

// DecodeFile is Decode with the file name in every error message.
func DecodeFile(name string, data []byte) (runtime.Object, error) {
	fail := func(format string, args ...any) error {
		msg := fmt.Sprintf(format, args...)
		if name == "" {
			return fmt.Errorf("decode: %s", msg)
		}
		return fmt.Errorf("%s: %s", name, msg)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fail("empty document")
	}
	if multiDocument(data) {
		return nil, fail("more than one YAML document")
	}
	if obj, ok := decodeOwn(data); ok {
		return obj, nil
	}
	// The document is converted to JSON once, for its kind and its
	// content: converting is most of the cost of a decode (go-yaml), and a
	// start reads 10,000 bindings. A document the strict conversion refuses
	// (duplicate keys, say), or whose kind does not read as a string, is
	// read the long way, which words the errors.
	j, err := yaml.YAMLToJSONStrict(data)
	var tm metav1.TypeMeta
	if err == nil {
		err = json.Unmarshal(j, &tm)
	}
	if err != nil {
		j = nil
		if err := yaml.Unmarshal(data, &tm); err != nil {
			return nil, fail("%v", err)
		}
	}
	info, ok := fleet.LookupKind(tm.Kind)
	if !ok {
		if tm.Kind == "" {
			return nil, fail("missing kind")
		}
		return nil, fail("kind %q is not a fleet object", tm.Kind)
	}
	if apiVersion := info.APIVersion(); tm.APIVersion != apiVersion {
		return nil, fail("apiVersion %q does not serve kind %s, want %s", tm.APIVersion, tm.Kind, apiVersion)
	}
	obj := info.New()
	if j == nil {
		err = strictUnmarshal(data, obj)
	} else {
		err = strictUnmarshalJSON(j, obj)
	}
	if err != nil {
		return nil, fail("%v", err)
	}
	if want, _ := fleet.KindFor(obj); want.Kind != tm.Kind {
		ns := obj.(metav1.Object).GetNamespace()
		if ns == "" {
			return nil, fail("kind %s is namespaced but metadata.namespace is empty", tm.Kind)
		}
		return nil, fail("kind %s is cluster-scoped but metadata.namespace is %q", tm.Kind, ns)
	}
	return obj, nil
}

// strictUnmarshal decodes YAML into v, refusing duplicate keys (caught
// converting to JSON) and unknown or differently-cased fields (by the
// Kubernetes strict decoder, which names the full field path "spec.stat").
func strictUnmarshal(data []byte, v any) error {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return err
	}
	return strictUnmarshalJSON(j, v)
}

// strictUnmarshalJSON is strictUnmarshal of a document already converted
// to JSON.
func strictUnmarshalJSON(j []byte, v any) error {
	strict, err := kjson.UnmarshalStrict(j, v, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

// multiDocument reports whether data holds a second YAML document: a "---"
// line after some content.
func multiDocument(data []byte) bool {
	seen := false
	for _, line := range bytes.Split(data, []byte("\n")) {
		t := bytes.TrimRight(line, " \t\r")
		if bytes.Equal(t, []byte("---")) || bytes.HasPrefix(t, []byte("--- ")) {
			if seen {
				return true
			}
			continue
		}
		if len(bytes.TrimSpace(t)) > 0 && !bytes.HasPrefix(bytes.TrimSpace(t), []byte("#")) {
			seen = true
		}
	}
	return false
}

// decodeOwn decodes a file the store wrote itself without go-yaml, whose
// parser is most of what a start pays to read the status tree (10,000
// bindings, 2,000 parts): yamlstream.ReadJSON reads back what Encode
// prints. Its reading of plain scalars is trusted only because the object
// it decoded prints back, through Encode, as exactly the bytes read, and
// Decode of Encode's output is that object. Anything else — a file a
// person wrote, one of an older layout, an error to word — reports false
// and is read the long way, which is what Decode always did. Leading
// comment lines (the headers of split files) are left out on both sides.
func decodeOwn(data []byte) (runtime.Object, bool) {
	body := skipComments(data)
	j, ok := yamlstream.ReadJSON(body)
	if !ok {
		return nil, false
	}
	// Encode prints apiVersion and kind first, as plain scalars; reading
	// them from there spares scanning all of j for them (the decoded
	// object must say the same).
	var tm metav1.TypeMeta
	var rest []byte
	tm.APIVersion, rest, _ = cutLine(body, "apiVersion: ")
	tm.Kind, _, _ = cutLine(rest, "kind: ")
	info, ok := fleet.LookupKind(tm.Kind)
	if !ok || tm.APIVersion != info.APIVersion() {
		return nil, false
	}
	obj := info.New()
	switch obj.(type) {
	case *fleet.ResourceSnapshot, *fleet.ClusterResourceOverrideSnapshot, *fleet.ResourceOverrideSnapshot:
		// They keep raw JSON text, which would keep ReadJSON's order of
		// keys instead of the one sigs.k8s.io/yaml gives it: the long way.
		return nil, false
	}
	if strictUnmarshalJSON(j, obj) != nil {
		return nil, false
	}
	if want, _ := fleet.KindFor(obj); want.Kind != tm.Kind || obj.GetObjectKind().GroupVersionKind() != tm.GroupVersionKind() {
		return nil, false
	}
	if again, err := Encode(obj); err != nil || !bytes.Equal(again, body) {
		return nil, false
	}
	return obj, true
}

// unmarshalOwn is decodeOwn for a part file (into v, a *runPart or a
// *placementPart): false leaves v as it was.
func unmarshalOwn[T any](data []byte, v *T) bool {
	body := skipComments(data)
	j, ok := yamlstream.ReadJSON(body)
	if !ok {
		return false
	}
	var got T
	if strictUnmarshalJSON(j, &got) != nil {
		return false
	}
	if again, err := marshalClean(got); err != nil || !bytes.Equal(again, body) {
		return false
	}
	*v = got
	return true
}

// cutLine returns the value of the line that starts data with prefix
// ("" when it does not), and the lines after it.
func cutLine(data []byte, prefix string) (value string, rest []byte, ok bool) {
	line, rest, found := bytes.Cut(data, []byte("\n"))
	v, ok := bytes.CutPrefix(line, []byte(prefix))
	if !found || !ok {
		return "", data, false
	}
	return string(v), rest, true
}

// skipComments is data without its leading comment lines.
func skipComments(data []byte) []byte {
	for len(data) > 0 && data[0] == '#' {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return nil
		}
		data = data[i+1:]
	}
	return data
}
