package status

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
)

// Dir is a fleet repository checkout on disk, usable both as the Files a
// TreeStore loads from and as its Committer (it writes the files, no Git):
// `gitfleet simulate` and tests run the real TreeStore against it.
type Dir string

// Read implements Files.
func (d Dir) Read(p string) ([]byte, error) {
	return os.ReadFile(d.join(p))
}

// List implements Files.
func (d Dir) List(prefix string) ([]string, error) {
	root := d.join(prefix)
	var out []string
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == root {
				return fs.SkipAll
			}
			return err
		}
		if e.Type().IsRegular() {
			rel, err := filepath.Rel(string(d), p)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// Commit implements Committer: deletions first, then writes, each write
// through a temporary file and a rename so a crash never leaves half a file.
func (d Dir) Commit(_ context.Context, ch Changeset, _ string, _ bool) error {
	for _, p := range ch.Deletes {
		if err := os.Remove(d.join(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	for _, p := range ch.WritePaths() {
		dst := d.join(p)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		tmp, err := os.CreateTemp(filepath.Dir(dst), "."+path.Base(p)+".*")
		if err != nil {
			return err
		}
		_, werr := tmp.Write(ch.Writes[p])
		cerr := tmp.Close()
		if err := errors.Join(werr, cerr); err != nil {
			os.Remove(tmp.Name())
			return err
		}
		if err := os.Rename(tmp.Name(), dst); err != nil {
			os.Remove(tmp.Name())
			return err
		}
	}
	return nil
}

func (d Dir) join(p string) string { return filepath.Join(string(d), filepath.FromSlash(p)) }
