package gitsource

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// FirstParentHistory returns the commits after from (exclusive) up to to
// (inclusive), following first parents only, oldest first. With a zero from
// it walks back to the root. Following first parents is what makes a merged
// pull request one step of history: the merge commit, not the commits of
// the merged branch.
//
// If from is not on to's first-parent chain (the branch was rewritten, or
// from is on a merged side branch) the error wraps ErrNotAncestor.
func (s *Source) FirstParentHistory(ctx context.Context, from, to plumbing.Hash) ([]*object.Commit, error) {
	if err := s.lock(ctx); err != nil {
		return nil, s.wrap("history", err)
	}
	var hashes []plumbing.Hash
	err := func() error {
		defer s.unlock()
		for h := to; h != from; {
			if len(hashes)%256 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			c, err := object.GetCommit(&s.built, h)
			if err != nil {
				return fmt.Errorf("commit %s: %w", h, err)
			}
			hashes = append(hashes, h)
			if len(c.ParentHashes) == 0 {
				if !from.IsZero() {
					return errorf("history", ErrNotAncestor, fmt.Sprintf("%s is not on the first-parent history of %s", from, to))
				}
				break
			}
			h = c.ParentHashes[0]
		}
		return nil
	}()
	if err != nil {
		return nil, s.wrap("history", err)
	}
	// Decode outside the lock against the locking store, so the commits
	// stay safe to use (Tree, Parents, …) from any goroutine.
	commits := make([]*object.Commit, len(hashes))
	for i, h := range hashes {
		c, err := object.GetCommit(s.objects, h)
		if err != nil {
			return nil, s.wrap("history", err)
		}
		commits[len(hashes)-1-i] = c
	}
	return commits, nil
}

// Commit returns the commit with hash h from the cache.
func (s *Source) Commit(ctx context.Context, h plumbing.Hash) (*object.Commit, error) {
	if err := ctx.Err(); err != nil {
		return nil, s.wrap("read", err)
	}
	c, err := object.GetCommit(s.objects, h)
	if err != nil {
		return nil, s.wrap("read", fmt.Errorf("commit %s: %w", h, err))
	}
	return c, nil
}

// ChangedPaths returns the sorted paths of files that differ between the
// trees of parent and commit (added, removed, modified or mode-changed).
// A zero parent means the empty tree, so every file of commit is listed.
// Together with OnlyUnder it tells a commit that touched only status/ or
// approvals/ from one that touched workloads.
func (s *Source) ChangedPaths(ctx context.Context, parent, commit plumbing.Hash) ([]string, error) {
	if err := s.lock(ctx); err != nil {
		return nil, s.wrap("diff", err)
	}
	defer s.unlock()
	var a, b plumbing.Hash
	var err error
	if !parent.IsZero() {
		if a, err = s.treeOf(parent); err != nil {
			return nil, s.wrap("diff", err)
		}
	}
	if b, err = s.treeOf(commit); err != nil {
		return nil, s.wrap("diff", err)
	}
	var out []string
	if err := s.diffTrees(ctx, a, b, "", &out); err != nil {
		return nil, s.wrap("diff", err)
	}
	sort.Strings(out)
	return out, nil
}

// treeOf returns the root tree hash of a commit; the caller holds the lock.
func (s *Source) treeOf(commit plumbing.Hash) (plumbing.Hash, error) {
	c, err := object.GetCommit(&s.built, commit)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("commit %s: %w", commit, err)
	}
	return c.TreeHash, nil
}

// diffTrees appends to out the file paths that differ between trees a and b
// (either may be zero, meaning empty). Subtrees with equal hashes are
// skipped without being read, so the cost follows the size of the change.
func (s *Source) diffTrees(ctx context.Context, a, b plumbing.Hash, dir string, out *[]string) error {
	if a == b {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ea, err := s.treeEntries(a)
	if err != nil {
		return err
	}
	eb, err := s.treeEntries(b)
	if err != nil {
		return err
	}
	names := make(map[string]struct{}, len(ea)+len(eb))
	for n := range ea {
		names[n] = struct{}{}
	}
	for n := range eb {
		names[n] = struct{}{}
	}
	for name := range names {
		x, inA := ea[name]
		y, inB := eb[name]
		if inA && inB && x == y {
			continue
		}
		p := path.Join(dir, name)
		// A side that is a tree contributes its files; a side that is a
		// file (or submodule) contributes its own path.
		var ta, tb plumbing.Hash
		file := false
		if inA {
			if x.Mode == filemode.Dir {
				ta = x.Hash
			} else {
				file = true
			}
		}
		if inB {
			if y.Mode == filemode.Dir {
				tb = y.Hash
			} else {
				file = true
			}
		}
		if file {
			*out = append(*out, p)
		}
		if err := s.diffTrees(ctx, ta, tb, p, out); err != nil {
			return err
		}
	}
	return nil
}

// treeEntries returns the entries of tree h by name (none for a zero h).
func (s *Source) treeEntries(h plumbing.Hash) (map[string]object.TreeEntry, error) {
	if h.IsZero() {
		return nil, nil
	}
	t, err := object.GetTree(&s.built, h)
	if err != nil {
		return nil, fmt.Errorf("tree %s: %w", h, err)
	}
	m := make(map[string]object.TreeEntry, len(t.Entries))
	for _, e := range t.Entries {
		m[e.Name] = e
	}
	return m, nil
}

// OnlyUnder reports whether every path lies below one of the directory
// prefixes ("status/", "approvals"); it is false for an empty list, since a
// commit that changes nothing is not a status-only commit either.
func OnlyUnder(paths []string, prefixes ...string) bool {
	if len(paths) == 0 {
		return false
	}
	for _, p := range paths {
		if !underAny(p, prefixes) {
			return false
		}
	}
	return true
}

func underAny(p string, prefixes []string) bool {
	for _, prefix := range prefixes {
		if strings.HasPrefix(p, strings.TrimSuffix(prefix, "/")+"/") {
			return true
		}
	}
	return false
}
