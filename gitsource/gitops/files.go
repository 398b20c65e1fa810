package gitops

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/render"
)

// treeFiles serves status.Files from one commit of the source: the status
// tree as the remote has it, which is all a restart needs. Once the store
// has loaded it and released the copy, it reads the source's current tips
// instead: the store reads back the files of a run whose record it forgot
// (status.TreeStore.EndedKept).
type treeFiles struct {
	files map[string][]byte
	src   *gitsource.Source // read once released
}

// newTreeFiles reads each folder from its commit (status/ may live on
// another branch than approvals/).
func newTreeFiles(ctx context.Context, src *gitsource.Source, dirs map[string]plumbing.Hash) (*treeFiles, error) {
	t := &treeFiles{files: map[string][]byte{}, src: src}
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

// tipFor is the commit whose tree holds p now: the status branch's tip
// for status/, the tracked branch's for approvals/; zero when there is none.
func (t *treeFiles) tipFor(p string) (plumbing.Hash, error) {
	head, err := t.src.Head(context.Background())
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if strings.HasPrefix(p, render.StatusDir+"/") && !head.Status.IsZero() {
		return head.Status, nil
	}
	return head.Commit, nil
}

// Read implements status.Files.
func (t *treeFiles) Read(p string) ([]byte, error) {
	if t.files == nil {
		return t.readReleased(p)
	}
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
	if t.files == nil {
		return t.listReleased(prefix)
	}
	var out []string
	for p := range t.files {
		if strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (t *treeFiles) readReleased(p string) ([]byte, error) {
	tip, err := t.tipFor(p)
	if err != nil || tip.IsZero() {
		return nil, errors.Join(err, fs.ErrNotExist)
	}
	data, err := t.src.ReadFile(context.Background(), tip, p)
	if errors.Is(err, gitsource.ErrNotFound) {
		return nil, fmt.Errorf("%s: %w", p, fs.ErrNotExist)
	}
	return data, err
}

func (t *treeFiles) listReleased(prefix string) ([]string, error) {
	tip, err := t.tipFor(prefix)
	if err != nil {
		return nil, err
	}
	if tip.IsZero() {
		return nil, nil
	}
	files, err := t.src.ReadTree(context.Background(), tip, prefix)
	if errors.Is(err, gitsource.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(files))
	for p := range files {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}
