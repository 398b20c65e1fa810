package gitops

import (
	"context"
	"errors"
	"io/fs"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitfleet/gitfleet/gitsource"
)

// treeFiles serves status.Files from one commit of the source: the status
// tree as the remote has it, which is all a restart needs.
type treeFiles struct {
	files map[string][]byte
}

// newTreeFiles reads each folder from its commit (status/ may live on
// another branch than approvals/).
func newTreeFiles(ctx context.Context, src *gitsource.Source, dirs map[string]plumbing.Hash) (*treeFiles, error) {
	t := &treeFiles{files: map[string][]byte{}}
	for d, commit := range dirs {
		if commit.IsZero() {
			continue
		}
		files, err := src.ReadOwnTree(ctx, commit, d)
		if err != nil {
			if errors.Is(err, gitsource.ErrNotFound) {
				continue
			}
			return nil, err
		}
		for p, data := range files {
			t.files[p] = data
		}
	}
	return t, nil
}

// Read implements status.Files.
func (t *treeFiles) Read(p string) ([]byte, error) {
	data, ok := t.files[p]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return data, nil
}

// Release implements status.Snapshot: the store has loaded what it
// needs, and keeps it itself.
func (t *treeFiles) Release() { t.files = nil }

// List implements status.Files.
func (t *treeFiles) List(prefix string) ([]string, error) {
	var out []string
	for p := range t.files {
		if strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out, nil
}
