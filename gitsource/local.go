package gitsource

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
)

// localUpToDate reports whether a local (file://) remote's branches are
// where the cache has them, read from the remote's ref files: then a fetch
// has nothing to bring, and git-upload-pack need not be started only to say
// so. That is the fetch after each of gitfleet's own pushes, which makes
// the remote's tip the cached one. Only the files backend of refs is read
// (loose refs, then packed-refs, as git reads them; both are replaced
// whole by a rename, so a read never sees half a ref); anything else — a
// reftable repository, a gitdir link, a symbolic or unreadable ref —
// answers false, and the caller fetches as usual.
func (s *Source) localUpToDate(branches []string) bool {
	dir, ok := s.localGitDir()
	if !ok {
		return false
	}
	refs := dotgit.New(osfs.New(dir))
	for _, b := range branches {
		cached, known := s.tip(b)
		ref, err := refs.Ref(plumbing.NewBranchReferenceName(b))
		switch {
		case errors.Is(err, plumbing.ErrReferenceNotFound):
			// Gone, or never there: only a status branch may be missing,
			// and the fetch reports a missing tracked branch.
			if known || b == s.cfg.Branch {
				return false
			}
		case err != nil, ref.Type() != plumbing.HashReference:
			return false
		case !known || ref.Hash() != cached:
			return false
		}
	}
	return true
}

// localGitDir is the git directory of a local remote whose refs
// localUpToDate can read: a bare repository or the .git folder of a
// working one, with the files backend.
func (s *Source) localGitDir() (string, bool) {
	if s.ep.Protocol != "file" {
		return "", false
	}
	dir := s.ep.Path
	if fi, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		if !fi.IsDir() {
			return "", false // a gitdir link: leave it to git
		}
		dir = filepath.Join(dir, ".git")
	}
	if fi, err := os.Stat(filepath.Join(dir, "refs")); err != nil || !fi.IsDir() {
		return "", false
	}
	if _, err := os.Stat(filepath.Join(dir, "reftable")); err == nil {
		return "", false
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "config"))
	if err != nil || strings.Contains(strings.ToLower(string(cfg)), "refstorage") {
		return "", false
	}
	return dir, true
}
