package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"

	yaml "go.yaml.in/yaml/v3"
)

// A document is one object read from a file: its JSON-compatible tree
// (map[string]any, []any, string, int64, float64, bool, nil — what
// unstructured.Unstructured holds) and, for plain YAML, its node so errors
// can point at the line of a field.
type document struct {
	file string
	line int
	obj  map[string]any
	// text is the file the document came from (nil for kustomize output)
	// and index its place among the file's documents: its YAML node tree,
	// for the line of a field in an error and for an override's
	// selections, is parsed again when asked for (root) rather than kept
	// beside obj, which for a file of 10,000 members was 40 MB.
	text  *fileText
	index int
}

// root is the document's YAML node tree, nil for kustomize output.
func (d document) root() *yaml.Node {
	if d.text == nil {
		return nil
	}
	return d.text.root(d.index)
}

// fileText is a manifest file's text, and its documents' node trees once
// one was asked for.
type fileText struct {
	data []byte
	// parse fills roots once: the file's documents are decoded in
	// parallel (decodeAll).
	parse sync.Once
	roots []*yaml.Node
}

// root returns the node tree of the file's document i, counting documents
// as splitDocuments keeps them.
func (f *fileText) root(i int) *yaml.Node {
	f.parse.Do(func() {
		f.roots = []*yaml.Node{}
		dec := yaml.NewDecoder(bytes.NewReader(f.data))
		for {
			var n yaml.Node
			if err := dec.Decode(&n); err != nil {
				break // splitDocuments read the file whole: EOF
			}
			if root := documentRoot(&n); root != nil {
				f.roots = append(f.roots, root)
			}
		}
	})
	if i < len(f.roots) {
		return f.roots[i]
	}
	return nil
}

// documentRoot is the root node of a decoded document, nil for an empty one
// (nothing, or "---" followed by comments).
func documentRoot(n *yaml.Node) *yaml.Node {
	if len(n.Content) == 0 {
		return nil
	}
	if root := n.Content[0]; root.Kind != yaml.ScalarNode || root.ShortTag() != "!!null" {
		return root
	}
	return nil
}

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

// splitDocuments parses a multi-document YAML (or JSON) file. A syntax error
// fails the whole file: half a file is worse than the last good version.
func splitDocuments(file string, data []byte) ([]document, *ManifestError) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []document
	text := &fileText{data: data}
	// A budget of converted nodes stops alias bombs ("billion laughs").
	budget := 4*len(data) + 10000
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, syntaxError(file, data, err)
		}
		root := documentRoot(&n)
		if root == nil {
			continue
		}
		v, err := nodeValue(root, &budget)
		if err != nil {
			return nil, &ManifestError{File: file, Line: errLine(err, root.Line), Message: err.Error()}
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, &ManifestError{File: file, Line: root.Line, Message: "a manifest must be a YAML mapping (an object), not a " + nodeKindName(root)}
		}
		docs = append(docs, document{file: file, line: root.Line, obj: obj, text: text, index: len(docs)})
	}
}

func syntaxError(file string, data []byte, err error) *ManifestError {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if loc := yamlLineRE.FindStringSubmatchIndex(msg); loc != nil {
		line, _ = strconv.Atoi(msg[loc[2]:loc[3]])
		// "yaml: line 3: mapping values are not allowed" → keep the reason.
		msg = strings.TrimPrefix(msg[loc[1]:], ":")
	} else if m := unknownAnchorRE.FindStringSubmatch(msg); m != nil {
		// go-yaml does not say where the alias is: its first use is.
		line = lineOfText(data, "*"+m[1])
	}
	return &ManifestError{File: file, Line: line, Message: "YAML syntax error: " + strings.TrimSpace(msg)}
}

var unknownAnchorRE = regexp.MustCompile(`unknown anchor '([^']*)' referenced`)

// lineOfText is the line of the first occurrence of s in data, 0 if none.
func lineOfText(data []byte, s string) int {
	i := bytes.Index(data, []byte(s))
	if i < 0 {
		return 0
	}
	return bytes.Count(data[:i], []byte("\n")) + 1
}

// checkJSON parses a .json file as JSON, a stream of values as kubectl
// reads one: YAML, which the documents are then read as, would accept
// what JSON does not (a trailing comma, comments, single quotes).
func checkJSON(file string, data []byte) *ManifestError {
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		var v json.RawMessage
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			off := dec.InputOffset()
			var se *json.SyntaxError
			if errors.As(err, &se) {
				off = se.Offset
			}
			off = min(max(off, 0), int64(len(data)))
			return &ManifestError{File: file, Line: bytes.Count(data[:off], []byte("\n")) + 1,
				Message: "JSON syntax error: " + strings.TrimPrefix(err.Error(), "json: ")}
		}
	}
}

func nodeKindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "scalar"
	}
	return "node"
}

// lineError carries the line of the node a conversion error is about.
type lineError struct {
	line int
	msg  string
}

func (e *lineError) Error() string { return e.msg }

func errLine(err error, fallback int) int {
	var le *lineError
	if errors.As(err, &le) && le.line > 0 {
		return le.line
	}
	return fallback
}

// nodeValue converts a YAML node into a JSON-compatible value with YAML 1.2
// rules, as kustomize (kyaml) reads manifests, so both layouts agree: yes/no
// stay strings, timestamps stay strings (a date in a ConfigMap must not
// become an RFC 3339 time), integers are int64, and duplicate keys are an
// error instead of last-one-wins.
func nodeValue(n *yaml.Node, budget *int) (any, error) {
	*budget--
	if *budget < 0 {
		return nil, &lineError{n.Line, "document expands to too many nodes (aliases?)"}
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return nodeValue(n.Content[0], budget)
	case yaml.AliasNode:
		return nodeValue(n.Alias, budget)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := nodeValue(c, budget)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		lines := make(map[string]int, len(n.Content)/2)
		var merges []*yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.ShortTag() == "!!merge" {
				merges = append(merges, val)
				continue
			}
			if k.Kind != yaml.ScalarNode {
				return nil, &lineError{k.Line, "mapping keys must be scalars"}
			}
			if first, dup := lines[k.Value]; dup {
				return nil, &lineError{k.Line, fmt.Sprintf("duplicate key %q (first at line %d)", k.Value, first)}
			}
			lines[k.Value] = k.Line
			v, err := nodeValue(val, budget)
			if err != nil {
				return nil, err
			}
			out[k.Value] = v
		}
		// Merge keys (<<: *base) fill in what the mapping does not set.
		for _, m := range merges {
			sources := []*yaml.Node{m}
			if m.Kind == yaml.SequenceNode {
				sources = m.Content
			}
			for _, s := range sources {
				v, err := nodeValue(s, budget)
				if err != nil {
					return nil, err
				}
				mv, ok := v.(map[string]any)
				if !ok {
					return nil, &lineError{s.Line, "a merge key (<<) needs a mapping"}
				}
				for k, x := range mv {
					if _, set := out[k]; !set {
						out[k] = x
					}
				}
			}
		}
		return out, nil
	case yaml.ScalarNode:
		return scalarValue(n)
	}
	return nil, &lineError{n.Line, "unsupported YAML node"}
}

func scalarValue(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool":
		return strings.EqualFold(n.Value, "true"), nil
	case "!!int":
		s := strings.ReplaceAll(n.Value, "_", "")
		if strings.HasPrefix(s, "0o") || strings.HasPrefix(s, "-0o") || strings.HasPrefix(s, "+0o") {
			s = strings.Replace(s, "0o", "0", 1)
		}
		if i, err := strconv.ParseInt(s, 0, 64); err == nil {
			return i, nil
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f, nil
		}
		return n.Value, nil
	case "!!float":
		f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, &lineError{n.Line, fmt.Sprintf("%q cannot be represented in JSON; quote it to make it a string", n.Value)}
		}
		return f, nil
	default: // !!str, !!timestamp, !!binary and custom tags keep their text
		return n.Value, nil
	}
}

// lineOf finds the line of a field (JSON path such as
// spec.stages[1].maxConcurrency or metadata.annotations[a.b/c]) in a
// document node, falling back to the deepest ancestor found.
func lineOf(n *yaml.Node, path string) int {
	if n == nil {
		return 0
	}
	line := n.Line
	for _, tok := range splitPath(path) {
		for n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		switch n.Kind {
		case yaml.MappingNode:
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == tok {
					line, next = n.Content[i].Line, n.Content[i+1]
					break
				}
			}
			if next == nil {
				return line
			}
			n = next
		case yaml.SequenceNode:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n.Content) {
				return line
			}
			n = n.Content[i]
			line = n.Line
		default:
			return line
		}
	}
	return line
}

// splitPath splits a.b[1].c[x.y/z] into a, b, 1, c, x.y/z.
func splitPath(p string) []string {
	var toks []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			toks = append(toks, cur.String())
			cur.Reset()
		}
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '.':
			flush()
		case '[':
			flush()
			end := strings.IndexByte(p[i:], ']')
			if end < 0 {
				cur.WriteString(p[i+1:])
				i = len(p)
				break
			}
			toks = append(toks, p[i+1:i+end])
			i += end
		default:
			cur.WriteByte(c)
		}
	}
	flush()
	return toks
}
