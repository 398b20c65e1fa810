package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

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
	node *yaml.Node // nil for kustomize output
}

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

// splitDocuments parses a multi-document YAML (or JSON) file. A syntax error
// fails the whole file: half a file is worse than the last good version.
func splitDocuments(file string, data []byte) ([]document, *ManifestError) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []document
	// A budget of converted nodes stops alias bombs ("billion laughs").
	budget := 4*len(data) + 10000
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, syntaxError(file, err)
		}
		if len(n.Content) == 0 {
			continue
		}
		root := n.Content[0]
		if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
			continue // an empty document ("---" followed by comments)
		}
		v, err := nodeValue(root, &budget)
		if err != nil {
			return nil, &ManifestError{File: file, Line: errLine(err, root.Line), Message: err.Error()}
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, &ManifestError{File: file, Line: root.Line, Message: "a manifest must be a YAML mapping (an object), not a " + nodeKindName(root)}
		}
		docs = append(docs, document{file: file, line: root.Line, obj: obj, node: root})
	}
}

func syntaxError(file string, err error) *ManifestError {
	msg := err.Error()
	line := 0
	if loc := yamlLineRE.FindStringSubmatchIndex(msg); loc != nil {
		line, _ = strconv.Atoi(msg[loc[2]:loc[3]])
		// "yaml: line 3: mapping values are not allowed" → keep the reason.
		msg = strings.TrimPrefix(msg[loc[1]:], ":")
	}
	return &ManifestError{File: file, Line: line, Message: "YAML syntax error: " + strings.TrimSpace(msg)}
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
