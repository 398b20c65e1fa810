package render

import (
	"io"
	"io/fs"
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
