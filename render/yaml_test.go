package render

import (
	"reflect"
	"strings"
	"testing"
)

func TestSplitDocumentsConvertsWithYAML12RulesAndKeepsText(t *testing.T) {
	src := `# leading comment
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a, namespace: ns}
data:
  date: 2025-01-02
  quoted: "007"
  hex: 0x1F
  int: 42
  float: 1.5
  yes: yes
  bool: true
  empty: null
  base: &b {x: 1}
  derived:
    <<: *b
    y: 2
---
# only a comment
---
{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}
`
	docs, merr := splitDocuments("f.yaml", []byte(src))
	if merr != nil {
		t.Fatal(merr)
	}
	if len(docs) != 2 {
		t.Fatalf("got %d documents, want 2 (empty ones skipped)", len(docs))
	}
	if docs[0].line != 3 || docs[1].line != 22 {
		t.Errorf("document lines = %d, %d; want 3, 22", docs[0].line, docs[1].line)
	}
	data := docs[0].obj["data"].(map[string]any)
	want := map[string]any{
		"date": "2025-01-02", "quoted": "007", "hex": int64(31), "int": int64(42), "float": 1.5,
		"yes": "yes", "bool": true, "empty": nil,
		"base": map[string]any{"x": int64(1)}, "derived": map[string]any{"x": int64(1), "y": int64(2)},
	}
	if !reflect.DeepEqual(data, want) {
		t.Errorf("data = %#v\nwant   %#v", data, want)
	}
}

func TestSplitDocumentsRejects(t *testing.T) {
	for _, tc := range []struct {
		name, src, msg string
		line           int
	}{
		{"duplicate keys", "apiVersion: v1\nkind: A\nkind: B\n", `duplicate key "kind" (first at line 2)`, 3},
		{"a list instead of an object", "- a\n- b\n", "must be a YAML mapping", 1},
		{"infinity", "apiVersion: v1\nx: .inf\n", "cannot be represented in JSON", 2},
		{"alias bomb", "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n",
			"too many nodes", 0},
		{"tab indentation", "apiVersion: v1\nmetadata:\n\tname: x\n", "YAML syntax error", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, merr := splitDocuments("f.yaml", []byte(tc.src))
			if merr == nil {
				t.Fatal("accepted")
			}
			if merr.File != "f.yaml" || !strings.Contains(merr.Message, tc.msg) || (tc.line != 0 && merr.Line != tc.line) {
				t.Errorf("got %+v, want line %d and %q", merr, tc.line, tc.msg)
			}
		})
	}
}

func TestLineOfFindsFields(t *testing.T) {
	src := "spec:\n  stages:\n    - name: a\n    - name: b\n      maxConcurrency: 0\nmetadata:\n  annotations:\n    gitfleet.io/driver: x\n"
	docs, merr := splitDocuments("f.yaml", []byte(src))
	if merr != nil {
		t.Fatal(merr)
	}
	for path, want := range map[string]int{
		"spec.stages[1].maxConcurrency":            5,
		"spec.stages[1]":                           4,
		"spec.stages[7].name":                      2, // deepest existing ancestor
		"metadata.annotations[gitfleet.io/driver]": 8,
		"spec.missing":                             1,
	} {
		if got := lineOf(docs[0].root(), path); got != want {
			t.Errorf("lineOf(%s) = %d, want %d", path, got, want)
		}
	}
}

// A document's node tree, parsed again when asked for, is the one of that
// document: empty documents between them count as splitDocuments counts
// them (not at all).
func TestRootIsTheDocumentsOwnTree(t *testing.T) {
	src := "---\n# only a comment\n---\nkind: A\n---\n---\n\n---\nkind: B\nspec:\n  x: 1\n"
	docs, merr := splitDocuments("f.yaml", []byte(src))
	if merr != nil {
		t.Fatal(merr)
	}
	if len(docs) != 2 {
		t.Fatalf("%d documents, want 2", len(docs))
	}
	for i, d := range docs {
		root := d.root()
		if root == nil || root.Line != d.line {
			t.Fatalf("document %d (line %d): root %v", i, d.line, root)
		}
	}
	if got := lineOf(docs[1].root(), "spec.x"); got != 11 {
		t.Errorf("lineOf(spec.x) of the second document = %d, want 11", got)
	}
}
