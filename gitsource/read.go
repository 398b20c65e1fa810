package gitsource

import (
	"context"
	"fmt"
	"io"
	"path"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Tree returns the root tree of commit. The tree reads lazily through the
// Source (safe from any goroutine) and refuses blobs above MaxFileSize.
func (s *Source) Tree(ctx context.Context, commit plumbing.Hash) (*object.Tree, error) {
	c, err := s.Commit(ctx, commit)
	if err != nil {
		return nil, err
	}
	t, err := c.Tree()
	if err != nil {
		return nil, s.wrap("read", fmt.Errorf("tree of %s: %w", commit, err))
	}
	return t, nil
}

// ReadFile returns the content of the regular file at path in commit. The
// error wraps ErrNotFound if there is no such file and ErrTooLarge if it is
// bigger than MaxFileSize.
func (s *Source) ReadFile(ctx context.Context, commit plumbing.Hash, p string) ([]byte, error) {
	if err := s.lock(ctx); err != nil {
		return nil, s.wrap("read", err)
	}
	defer s.unlock()
	t, err := s.rootTree(commit)
	if err != nil {
		return nil, err
	}
	e, err := t.FindEntry(p)
	if err != nil || !e.Mode.IsFile() || e.Mode == filemode.Symlink {
		return nil, errorf("read", ErrNotFound, fmt.Sprintf("%s: no such file in %s", p, commit))
	}
	return s.readBlob(e.Hash, p)
}

// ReadTree returns every regular file below dir ("" or "." for the whole
// repository) in commit, keyed by repository path. Symlinks and submodules
// are skipped: the content must come from the commit itself. Files above
// MaxFileSize, or a total above MaxTotalSize, fail with ErrTooLarge.
func (s *Source) ReadTree(ctx context.Context, commit plumbing.Hash, dir string) (map[string][]byte, error) {
	return s.readTree(ctx, commit, dir, nil, true)
}

// ReadTreeExcept is ReadTree without the folders listed in except
// (repository paths): render reads a commit without gitfleet's own
// status/ and approvals/ trees, whose size follows the fleet, not what
// people wrote.
func (s *Source) ReadTreeExcept(ctx context.Context, commit plumbing.Hash, dir string, except ...string) (map[string][]byte, error) {
	return s.readTree(ctx, commit, dir, except, true)
}

// Tree is a commit's files and symbolic links, as ReadLinkedTree returns
// them.
type Tree struct {
	Files map[string][]byte // regular files by repository path
	Links map[string]string // symbolic links: path → target, as committed
}

// ReadLinkedTree is ReadTreeExcept that also returns the symbolic links,
// unresolved: whether a link may be followed is for the reader to decide
// (render follows only links that stay inside the repository).
func (s *Source) ReadLinkedTree(ctx context.Context, commit plumbing.Hash, dir string, except ...string) (Tree, error) {
	t := Tree{Links: map[string]string{}}
	var err error
	t.Files, err = s.readTreeLinks(ctx, commit, dir, except, true, t.Links)
	return t, err
}

// ReadOwnTree is ReadTree for the trees gitfleet writes itself (status/,
// approvals/): no size limit applies, since a limit meant for what people
// push must never stop gitfleet from reading back what it wrote (a
// placement of 10,000 clusters is a file of several MiB).
func (s *Source) ReadOwnTree(ctx context.Context, commit plumbing.Hash, dir string) (map[string][]byte, error) {
	return s.readTree(ctx, commit, dir, nil, false)
}

func (s *Source) readTree(ctx context.Context, commit plumbing.Hash, dir string, except []string, limited bool) (map[string][]byte, error) {
	return s.readTreeLinks(ctx, commit, dir, except, limited, nil)
}

// readTreeLinks reads the files below dir; with links non-nil, it also
// records symbolic links there.
func (s *Source) readTreeLinks(ctx context.Context, commit plumbing.Hash, dir string, except []string, limited bool, links map[string]string) (map[string][]byte, error) {
	if err := s.lock(ctx); err != nil {
		return nil, s.wrap("read", err)
	}
	defer s.unlock()
	t, err := s.rootTree(commit)
	if err != nil {
		return nil, err
	}
	dir = path.Clean(dir)
	if dir != "." && dir != "" {
		if t, err = t.Tree(dir); err != nil {
			return nil, errorf("read", ErrNotFound, fmt.Sprintf("%s: no such directory in %s", dir, commit))
		}
	} else {
		dir = ""
	}

	files := map[string][]byte{}
	var total int64
	walker := object.NewTreeWalker(t, true, nil)
	defer walker.Close()
	for {
		name, e, err := walker.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, s.wrap("read", err)
		}
		p := path.Join(dir, name)
		if underAny(p, except) {
			continue
		}
		if e.Mode == filemode.Symlink && links != nil {
			target, err := s.readBlobLimit(e.Hash, p, 4096)
			if err != nil {
				return nil, err
			}
			links[p] = string(target)
			continue
		}
		if !e.Mode.IsFile() || e.Mode == filemode.Symlink {
			continue
		}
		if len(files)%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, s.wrap("read", err)
			}
		}
		limit := s.cfg.MaxFileSize
		if !limited {
			limit = 0
		}
		data, err := s.readBlobLimit(e.Hash, p, limit)
		if err != nil {
			return nil, err
		}
		if total += int64(len(data)); limited && total > s.cfg.MaxTotalSize {
			return nil, errorf("read", ErrTooLarge, fmt.Sprintf("%s in %s: more than %d bytes in total", dir, commit, s.cfg.MaxTotalSize))
		}
		files[p] = data
	}
	return files, nil
}

// readBlob reads a blob after checking its size against MaxFileSize; the
// caller holds the lock.
func (s *Source) readBlob(h plumbing.Hash, p string) ([]byte, error) {
	return s.readBlobLimit(h, p, s.cfg.MaxFileSize)
}

// readBlobLimit reads a blob of at most limit bytes (0: any size).
func (s *Source) readBlobLimit(h plumbing.Hash, p string, limit int64) ([]byte, error) {
	size, err := s.built.EncodedObjectSize(h)
	if err != nil {
		return nil, s.wrap("read", fmt.Errorf("%s: %w", p, err))
	}
	if limit > 0 && size > limit {
		return nil, errorf("read", ErrTooLarge, fmt.Sprintf("%s is %d bytes, more than the %d byte limit", p, size, limit))
	}
	obj, err := s.built.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		return nil, s.wrap("read", fmt.Errorf("%s: %w", p, err))
	}
	r, err := obj.Reader()
	if err != nil {
		return nil, s.wrap("read", fmt.Errorf("%s: %w", p, err))
	}
	defer r.Close()
	if limit <= 0 {
		limit = size
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, s.wrap("read", fmt.Errorf("%s: %w", p, err))
	}
	return data, nil
}

// rootTree reads the root tree of commit; the lock is held.
func (s *Source) rootTree(commit plumbing.Hash) (*object.Tree, error) {
	root, err := s.treeOf(commit)
	if err != nil {
		return nil, s.wrap("read", err)
	}
	t, err := object.GetTree(&s.built, root)
	if err != nil {
		return nil, s.wrap("read", err)
	}
	return t, nil
}
