package ingest

import (
	"context"
	"errors"
	"io/fs"
	"testing/fstest"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/render"
)

// CommitFS is a commit's tree as an fs.FS, for render: every file people
// wrote, without gitfleet's own status/ and approvals/ trees (render skips
// them, and their size follows the fleet, not the people's limits).
// Symbolic links are kept as links, for render to follow or refuse.
func CommitFS(ctx context.Context, src *gitsource.Source, commit plumbing.Hash) (fs.FS, error) {
	tree, err := src.ReadLinkedTree(ctx, commit, "", render.StatusDir, render.ApprovalsDir)
	if err != nil {
		return nil, err
	}
	m := mapFS(tree.Files).(fstest.MapFS)
	for p, target := range tree.Links {
		m[p] = &fstest.MapFile{Data: []byte(target), Mode: fs.ModeSymlink | 0o777}
	}
	return m, nil
}

// DirFS is one folder of a commit (at its repository path; "" for the
// whole tree) as an fs.FS; a missing folder is an empty FS. Reading only
// approvals/ spares reading every workload file on each sync.
func DirFS(ctx context.Context, src *gitsource.Source, commit plumbing.Hash, dir string) (fs.FS, error) {
	files, err := src.ReadTree(ctx, commit, dir)
	if dir != "" && errors.Is(err, gitsource.ErrNotFound) {
		return fstest.MapFS{}, nil
	}
	if err != nil {
		return nil, err
	}
	return mapFS(files), nil
}

// mapFS serves files read from a commit as an fs.FS.
func mapFS(files map[string][]byte) fs.FS {
	m := make(fstest.MapFS, len(files))
	for p, data := range files {
		m[p] = &fstest.MapFile{Data: data, Mode: 0o644}
	}
	return m
}
