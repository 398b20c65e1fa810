package yamlstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// decode reads a JSON document as the status encoder does.
func decode(t testing.TB, raw string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// assertSame checks that WriteJSON prints doc as sigs.k8s.io/yaml prints
// it without its null map values.
func assertSame(t testing.TB, doc map[string]any) {
	t.Helper()
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if !Supported(raw) {
		t.Fatalf("document not supported: %s", raw)
	}
	want, err := yaml.Marshal(dropNulls(doc))
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := WriteJSON(&got, raw, nil); err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Fatalf("Write differs from sigs.k8s.io/yaml:\n--- got\n%s\n--- want\n%s", got.String(), want)
	}
}

func TestWritePrintsWhatSigsYAMLPrints(t *testing.T) {
	long := "Successfully scheduled resources for placement in \"member1\" (affinity score: 0, topology spread score: 0): picked by scheduling policy"
	for name, raw := range map[string]string{
		"condition list": `{"status":{"conditions":[{"lastTransitionTime":"2026-01-01T00:00:00Z","message":"All clusters in the stage are updated and after-stage tasks are completed","observedGeneration":1,"reason":"StageUpdatingSucceeded","status":"True","type":"Progressing"}]}}`,
		"folded plain":   `{"a":{"b":{"message":"found all cluster needed as specified by the scheduling policy, found 3 cluster(s) and some more words to fold twice over the width of eighty columns"}}}`,
		"folded single":  `{"a":[{"message":` + jsonString(long) + `}]}`,
		"folded double":  `{"x":{"y":"2026-01-01T00:00:00Z","z":` + jsonString(strings.Repeat(`"quoted" `, 20)+"1") + `}}`,
		"empties":        `{"m":{},"l":[],"items":[{},[],null,true,false,"",1.5,-0,1e3,12345678901234567890]}`,
		"scalars":        `{"yes":"no","on":"y","null":"~","num":"0x10","float":".5","inf":".inf","dash":"-","colon":"a: b","hash":"a #b","lead":" a","trail":"a ","dashes":"--- x","backslash":"a\\b","quote":"it's"}`,
		"key order":      `{"a10":1,"a9":2,"a09":3,"B":4,"a":5,"_":6,"1":7,"01":8,"a-b":9,"a.b":10,"kubernetes-fleet.io/taskType":11}`,
		"lists in maps":  `{"spec":{"stages":[{"name":"s","labelSelector":{"matchLabels":{"stage":"0"}},"clusters":["c1","c2"]}]}}`,
	} {
		t.Run(name, func(t *testing.T) {
			assertSame(t, decode(t, raw))
		})
	}
}

func TestSupportedRejectsWhatItCannotPrint(t *testing.T) {
	for name, raw := range map[string]string{
		"non-ASCII":    `{"a":"café"}`,
		"line break":   `{"a":"one\ntwo"}`,
		"tab":          `{"a":"one\ttwo"}`,
		"escaped NUL":  `{"a":"\u0000"}`,
		"list in list": `{"a":[["x"]]}`,
		"long key":     `{"` + strings.Repeat("k", 129) + `":1}`,
		"empty":        `{}`,
	} {
		t.Run(name, func(t *testing.T) {
			if Supported([]byte(raw)) {
				t.Fatal("Supported accepted a document Write would print differently")
			}
		})
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestWriteMatchesOnGeneratedDocuments compares both printers on thousands
// of generated documents: nested maps and lists at every depth, keys and
// strings made of the characters that change a scalar's style, lengths
// around the fold width.
func TestWriteMatchesOnGeneratedDocuments(t *testing.T) {
	forGeneratedDocuments(1, func(doc map[string]any) { assertSame(t, doc) })
}

// forGeneratedDocuments calls check with 3,000 documents of genMap, from
// seed.
func forGeneratedDocuments(seed uint64, check func(doc map[string]any)) {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	for range 3000 {
		if doc := genMap(rng, 0); len(doc) > 0 {
			check(doc)
		}
	}
}

// FuzzWrite compares both printers on a document built from fuzzed text.
func FuzzWrite(f *testing.F) {
	f.Add("message", "The updateRun is waiting for after-stage tasks in stage canary to complete", uint8(3))
	f.Add("a: b", "'x' #y", uint8(0))
	f.Fuzz(func(t *testing.T, key, value string, depth uint8) {
		if doc := fuzzDoc(t, key, value, depth); doc != nil {
			assertSame(t, doc)
		}
	})
}

// fuzzDoc is the document the fuzz tests build from fuzzed text: key and
// value nested depth times in maps and lists; nil when WriteJSON does not
// cover it.
func fuzzDoc(t *testing.T, key, value string, depth uint8) map[string]any {
	var doc any = map[string]any{key: value, "list": []any{value, map[string]any{key: value}}}
	for range depth % 8 {
		doc = map[string]any{key: doc, "x": []any{doc}}
	}
	raw, err := json.Marshal(doc)
	if err != nil || !Supported(raw) {
		return nil
	}
	return decode(t, string(raw))
}

const alphabet = "abcXYZ019 -.:#'\"\\,[]{}&*!|>%@`?~_/()+="

func genString(rng *rand.Rand) string {
	words := []string{"y", "no", "True", "null", "~", "0", "1.5", "-1", "0x1F", "1e3", "2026-01-01T00:00:00Z", "1:20", ".inf", "---", "...", "-", "- a", "a: b", "", " ", "<<"}
	if rng.IntN(4) == 0 {
		return words[rng.IntN(len(words))]
	}
	n := rng.IntN(140)
	var b strings.Builder
	for range n {
		if rng.IntN(5) == 0 {
			b.WriteByte(' ')
			continue
		}
		b.WriteByte(alphabet[rng.IntN(len(alphabet))])
	}
	return b.String()
}

func genKey(rng *rand.Rand) string {
	if rng.IntN(3) == 0 {
		s := genString(rng)
		return s[:min(len(s), maxSimpleKey)]
	}
	return fmt.Sprintf("%c%d", 'a'+rng.IntN(26), rng.IntN(120))
}

func genMap(rng *rand.Rand, depth int) map[string]any {
	m := map[string]any{}
	for range rng.IntN(5) {
		m[genKey(rng)] = genValue(rng, depth+1, false)
	}
	return m
}

func genValue(rng *rand.Rand, depth int, inList bool) any {
	kinds := 6
	if depth > 5 {
		kinds = 3
	}
	switch rng.IntN(kinds) {
	case 0:
		return genString(rng)
	case 1:
		return []any{json.Number("7"), json.Number("-3.25"), true, nil}[rng.IntN(4)]
	case 2:
		return genString(rng)
	case 3, 4:
		return genMap(rng, depth)
	default:
		if inList {
			return genMap(rng, depth)
		}
		var l []any
		for range rng.IntN(4) {
			l = append(l, genValue(rng, depth+1, true))
		}
		if l == nil {
			l = []any{}
		}
		return l
	}
}

// dropNulls removes null map values at every depth, as status.Encode does
// before it prints.
func dropNulls(v any) map[string]any {
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, e := range t {
				if e == nil {
					delete(t, k)
					continue
				}
				walk(e)
			}
		case []any:
			for _, e := range t {
				walk(e)
			}
		}
	}
	walk(v)
	return v.(map[string]any)
}

func TestWriteJSONLeavesOutWhatDropSays(t *testing.T) {
	drop := func(path []string, val []byte) bool {
		return strings.Join(path, ".") == "metadata.resourceVersion" || strings.Join(path, ".") == "status" && EmptyObject(val)
	}
	for raw, want := range map[string]string{
		`{"metadata":{"name":"a","resourceVersion":"7","labels":{"resourceVersion":"x"}},"status":{"x":null}}`: "metadata:\n  labels:\n    resourceVersion: x\n  name: a\n",
		`{"kind":"K","status":{"x":null,"w":{"z":null}}}`:                                                      "kind: K\nstatus:\n  w: {}\n",
	} {
		var got bytes.Buffer
		if err := WriteJSON(&got, []byte(raw), drop); err != nil {
			t.Fatal(err)
		}
		if got.String() != want {
			t.Errorf("%s: got\n%s\nwant\n%s", raw, got.String(), want)
		}
	}
}
