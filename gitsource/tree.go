package gitsource

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// fileOp is one validated entry of a Change: write data, or delete the file
// or directory at its path.
type fileOp struct {
	data []byte
	del  bool
}

// cleanPath checks that p is a canonical, relative, slash-separated path
// inside the repository with no component that Git or a checkout could
// interpret specially, and returns it.
func cleanPath(p string) (string, error) {
	switch {
	case p == "":
		return "", fmt.Errorf("empty path")
	case strings.HasPrefix(p, "/"):
		return "", fmt.Errorf("absolute path")
	case strings.ContainsAny(p, "\\\x00"):
		return "", fmt.Errorf("backslash or NUL in path")
	case path.Clean(p) != p:
		return "", fmt.Errorf("path is not canonical (want %q)", path.Clean(p))
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." || part == "." || strings.EqualFold(part, ".git") {
			return "", fmt.Errorf("forbidden path component %q", part)
		}
	}
	return p, nil
}

// buildTree writes the tree obtained by applying ops to the tree base (zero
// for empty) and returns its hash. Only directories on the path of an op are
// read and rewritten; everything else is shared with base. Deletions apply
// before writes, so deleting a directory and writing files below it
// replaces the directory's content. The caller holds the lock.
func (s *Source) buildTree(base plumbing.Hash, ops map[string]fileOp) (plumbing.Hash, error) {
	h, err := s.applyOps(base, ops, "")
	if err != nil || !h.IsZero() {
		return h, err
	}
	// Everything was deleted: the root is the empty tree, which unlike
	// subdirectories must exist.
	return s.writeTree(nil, plumbing.ZeroHash)
}

// applyOps returns the hash of the directory dir (tree base) after ops,
// whose keys are relative to dir, or zero if the directory ends up empty.
func (s *Source) applyOps(base plumbing.Hash, ops map[string]fileOp, dir string) (plumbing.Hash, error) {
	entries := map[string]object.TreeEntry{}
	if !base.IsZero() {
		t, err := object.GetTree(&s.built, base)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("tree %s: %w", base, err)
		}
		for _, e := range t.Entries {
			entries[e.Name] = e
		}
	}

	direct := map[string]fileOp{}            // ops on an entry of dir itself
	nested := map[string]map[string]fileOp{} // ops below a subdirectory
	for p, op := range ops {
		name, rest, deeper := strings.Cut(p, "/")
		if !deeper {
			direct[name] = op
			continue
		}
		if nested[name] == nil {
			nested[name] = map[string]fileOp{}
		}
		nested[name][rest] = op
	}

	for name, op := range direct {
		if op.del {
			delete(entries, name)
			continue
		}
		if e, ok := entries[name]; ok && e.Mode == filemode.Dir {
			return plumbing.ZeroHash, errorf("apply", ErrInvalid, fmt.Sprintf("%s is a directory, cannot write a file there", path.Join(dir, name)))
		}
		obj := blob(op.data)
		if e, ok := entries[name]; ok && e.Hash == obj.Hash() && e.Mode == filemode.Regular {
			continue // unchanged
		}
		h, err := s.built.SetEncodedObject(obj)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries[name] = object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: h}
	}
	for name, sub := range nested {
		var subBase plumbing.Hash
		if e, ok := entries[name]; ok {
			if e.Mode != filemode.Dir {
				return plumbing.ZeroHash, errorf("apply", ErrInvalid, fmt.Sprintf("%s is a file, cannot write below it", path.Join(dir, name)))
			}
			subBase = e.Hash
		}
		h, err := s.applyOps(subBase, sub, path.Join(dir, name))
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if h.IsZero() {
			delete(entries, name) // Git has no empty directories.
		} else {
			entries[name] = object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h}
		}
	}

	if len(entries) == 0 {
		return plumbing.ZeroHash, nil
	}
	list := make([]object.TreeEntry, 0, len(entries))
	for _, e := range entries {
		list = append(list, e)
	}
	return s.writeTree(list, base)
}

// writeTree stages a tree with the given entries, in Git's order, unless
// it is base (the tree it replaces), which exists already.
func (s *Source) writeTree(entries []object.TreeEntry, base plumbing.Hash) (plumbing.Hash, error) {
	sort.Sort(object.TreeEntrySorter(entries))
	t := &object.Tree{Entries: entries}
	obj := s.built.NewEncodedObject()
	if err := t.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	if h := obj.Hash(); h == base {
		return h, nil
	}
	return s.built.SetEncodedObject(obj)
}

// blob is a blob object holding a copy of data.
func blob(data []byte) *plumbing.MemoryObject {
	obj := &plumbing.MemoryObject{}
	obj.SetType(plumbing.BlobObject)
	_, _ = obj.Write(data) // a MemoryObject's Write cannot fail
	return obj
}
