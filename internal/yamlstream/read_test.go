package yamlstream

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"
)

// assertReadsBack checks that ReadJSON reads what WriteJSON printed of doc
// as the JSON that sigs.k8s.io/yaml makes of the same YAML.
func assertReadsBack(t testing.TB, doc map[string]any) {
	t.Helper()
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var printed bytes.Buffer
	if err := WriteJSON(&printed, raw, nil); err != nil {
		t.Fatal(err)
	}
	got, ok := ReadJSON(printed.Bytes())
	if !ok && bytes.Contains(printed.Bytes(), []byte("<<")) {
		return // go-yaml's merge key, which ReadJSON leaves to go-yaml
	}
	if !ok {
		t.Fatalf("ReadJSON refused what WriteJSON printed:\n%s", printed.String())
	}
	want, err := yaml.YAMLToJSON(printed.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if g, w := decode(t, string(got)), decode(t, string(want)); !reflect.DeepEqual(g, w) {
		t.Fatalf("ReadJSON of\n%s\n--- got\n%s\n--- want\n%s", printed.String(), got, want)
	}
}

func TestReadJSONReadsWhatWriteJSONPrints(t *testing.T) {
	forGeneratedDocuments(3, func(doc map[string]any) { assertReadsBack(t, doc) })
	// Long text folds onto the next lines in each style.
	long := "The updateRun is waiting for after-stage tasks in stage canary to complete, then for the next stage: " +
		"'canary' and \"prod\"  with  double  spaces"
	for _, s := range []string{long, "'" + long, "\"" + long, "-" + long + "  #"} {
		assertReadsBack(t, map[string]any{"status": map[string]any{"conditions": []any{map[string]any{"message": s}}, "m": s}, "l": []any{s}})
	}
}

// FuzzReadJSON reads fuzzed text printed by WriteJSON back.
func FuzzReadJSON(f *testing.F) {
	f.Add("message", "The updateRun is waiting for after-stage tasks in stage canary to complete", uint8(3))
	f.Add("a: b", "'x' #y", uint8(0))
	f.Fuzz(func(t *testing.T, key, value string, depth uint8) {
		if doc := fuzzDoc(t, key, value, depth); doc != nil {
			assertReadsBack(t, doc)
		}
	})
}

// ReadJSON refuses what WriteJSON does not print rather than guess.
func TestReadJSONRefusesOtherYAML(t *testing.T) {
	for _, doc := range []string{
		"",
		"a: b",               // no final line break
		"---\na: b\n",        // a document marker
		"# comment\na: b\n",  // a comment
		"a: |\n  text\n",     // a block scalar
		"a: [b, c]\n",        // a flow list
		"a:\n\tb: c\n",       // a tab
		"- a\n",              // a list at the top
		"a: \"\\n\"\n",       // an escape WriteJSON never writes
		"a: b\n c: d\n",      // a key too deep
		"a: 'unterminated\n", // a quote that does not end
		"a:\n",               // no value
		"a: é\n",             // not ASCII
		"a: \n",              // a space and no value
		": b\n",              // no key
	} {
		if got, ok := ReadJSON([]byte(doc)); ok {
			t.Errorf("ReadJSON(%q) = %s, want refused", doc, got)
		}
	}
}

// FuzzReadJSONAnyText gives ReadJSON any text: it refuses or returns JSON.
func FuzzReadJSONAnyText(f *testing.F) {
	f.Add("a:\n- b: 'c'\n  d: \"e\"\n")
	f.Add("a: b\n  c\n")
	f.Fuzz(func(t *testing.T, doc string) {
		if got, ok := ReadJSON([]byte(doc)); ok && !json.Valid(got) {
			t.Errorf("ReadJSON(%q) = %s, not JSON", doc, got)
		}
	})
}
