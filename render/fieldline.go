package render

import (
	"io"
	"io/fs"

	yaml "go.yaml.in/yaml/v3"
)

// FieldLine is the line of fieldPath (a JSON path such as
// spec.placementName or spec.stages[1].maxConcurrency) in the object that
// Render read from src, for problems found after the render (a run naming
// a placement the tree lacks). It reads src.File from fsys again, as
// Render keeps no node trees; it falls back to the deepest ancestor of the
// field found, and to src.Line when the file cannot be read again or the
// object came out of kustomize (src.Line 0).
func FieldLine(fsys fs.FS, src Source, fieldPath string) int {
	if src.Line == 0 || fsys == nil {
		return src.Line
	}
	from := src.File
	if info, err := fs.Lstat(fsys, from); err == nil && info.Mode()&fs.ModeSymlink != 0 {
		target, merr := resolveLink(fsys, from)
		if merr != nil {
			return src.Line
		}
		from = target
	}
	f, err := fsys.Open(from)
	if err != nil {
		return src.Line
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, DefaultMaxFileSize+1))
	if err != nil || len(data) > DefaultMaxFileSize {
		return src.Line
	}
	if data, merr := asText(src.File, data); merr == nil {
		text := &fileText{data: data}
		for i := 0; text.root(i) != nil; i++ {
			if root := text.root(i); root.Line == src.Line {
				if line := lineOf(root, fieldPath); line > 0 {
					return line
				}
			}
		}
	}
	return src.Line
}

// placeKustomizeOutput gives the refusals of objects kustomize produced,
// which carry their origin file but no line, the line of their field in
// that file: the document whose kind and name match (an object a
// transformer renamed is not found and keeps line 0).
func placeKustomizeOutput(fsys fs.FS, refusals []ManifestError) {
	texts := map[string]*fileText{}
	for i, e := range refusals {
		if e.Line != 0 || e.Name == "" {
			continue
		}
		text, seen := texts[e.File]
		if !seen {
			if data, err := fs.ReadFile(fsys, e.File); err == nil && len(data) <= DefaultMaxFileSize {
				if data, merr := asText(e.File, data); merr == nil {
					text = &fileText{data: data}
				}
			}
			texts[e.File] = text
		}
		if text == nil {
			continue
		}
		for j := 0; text.root(j) != nil; j++ {
			root := text.root(j)
			if scalarAt(root, "metadata", "name") == e.Name &&
				(e.Kind == "" || scalarAt(root, "kind") == e.Kind) {
				refusals[i].Line = lineOf(root, e.Field)
				break
			}
		}
	}
}

// scalarAt is the text of the scalar at a mapping path, "" if none.
func scalarAt(n *yaml.Node, keys ...string) string {
	for _, k := range keys {
		if n.Kind != yaml.MappingNode {
			return ""
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				next = n.Content[i+1]
			}
		}
		if next == nil {
			return ""
		}
		n = next
	}
	if n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}
