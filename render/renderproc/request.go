package renderproc

import (
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/gitfleet/gitfleet/render"
)

// The request the parent writes on the worker's standard input: one
// header, then one entry per file, link or empty folder the render may
// read, gob-encoded (any byte is allowed in a name, unlike tar's PAX
// records). The worker builds an fstest.MapFS from them, the fs.FS serve
// renders in process, so the result is the same.

// header opens a request.
type header struct {
	Options render.Options
}

// entry is one file (Data), symbolic link (Link, its target as
// committed) or folder of the tree, at its repository path.
type entry struct {
	Name string
	Kind entryKind
	Data []byte
}

type entryKind uint8

const (
	kindFile entryKind = iota
	kindLink
	kindDir
)

// writer selects and encodes what one render reads.
type writer struct {
	fsys  fs.FS
	opts  render.Options
	enc   *gob.Encoder
	sent  map[string]bool  // links and folders sent
	sizes map[string]int64 // files sent, and their size as sent
	// total counts the bytes of the files render's reader reads, in its
	// order, as it does.
	total int64
	err   error // the first error of sendResolved
}

// errPath is a problem with opts.Path that render reports before reading
// anything; Render returns it without starting a worker.
type errPath struct{ err error }

func (e errPath) Error() string { return e.err.Error() }
func (e errPath) Unwrap() error { return e.err }

// writeRequest writes the request for rendering opts.Path of fsys to w:
// in a plain layout the manifest files below the path (render reads no
// other), with a kustomization every file render copies for kustomize
// (the whole repository but hidden files and gitfleet's status/ and
// approvals/: a base may be outside the path), and for every symbolic
// link the links and the file or folder it leads to. Files are cut one
// byte past MaxFileSize (render reads no more to know one is too big),
// kustomization files excepted (render reads them whole).
func writeRequest(w io.Writer, fsys fs.FS, opts render.Options) error {
	opts = opts.WithDefaults()
	rw := &writer{fsys: fsys, opts: opts, enc: gob.NewEncoder(w), sent: map[string]bool{}, sizes: map[string]int64{}}
	if err := rw.enc.Encode(header{Options: opts}); err != nil {
		return err
	}
	root, realRoot, err := rw.root()
	if err != nil {
		return err
	}
	kustomized := false
	for _, n := range render.KustomizationNames {
		if mode, _ := rw.sendResolved(path.Join(root, n)); mode == 0 { // a regular file
			kustomized = true
			break
		}
	}
	if err := rw.failed(); err != nil {
		return err
	}
	if kustomized {
		return rw.walkMount(root)
	}
	return rw.walkPlain(realRoot)
}

// root checks opts.Path as render does first: the errors are render's.
func (rw *writer) root() (root, realRoot string, err error) {
	root = path.Clean(rw.opts.Path)
	if !fs.ValidPath(root) {
		return "", "", errPath{fmt.Errorf("render: path %q must be relative to the repository root and stay inside it", rw.opts.Path)}
	}
	realRoot, res, err := rw.follow(root)
	if err != nil {
		return "", "", err
	}
	if res == looped {
		return "", "", errPath{fmt.Errorf("render: path %q: %w", root, &fs.PathError{Op: "stat", Path: root, Err: errLoop})}
	}
	if res == missing {
		realRoot = root // fs.Stat says what is wrong (it cannot loop)
	}
	info, err := fs.Stat(rw.fsys, realRoot)
	if err != nil {
		return "", "", errPath{fmt.Errorf("render: path %q: %w", root, err)}
	}
	if !info.IsDir() {
		return "", "", errPath{fmt.Errorf("render: path %q is not a folder", root)}
	}
	return root, realRoot, nil
}

// checkPath returns the error render returns for opts.Path before it
// reads anything, if any.
func checkPath(fsys fs.FS, opts render.Options) error {
	rw := &writer{fsys: fsys, opts: opts.WithDefaults(), enc: gob.NewEncoder(io.Discard), sent: map[string]bool{}, sizes: map[string]int64{}}
	_, _, err := rw.root()
	var pe errPath
	if errors.As(err, &pe) {
		return pe.err
	}
	return err
}

// walkPlain sends the manifest files below root that render's plain
// reader reads: not hidden, not in approvals/ or status/ directly under
// root.
func (rw *writer) walkPlain(root string) error {
	return fs.WalkDir(rw.fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("render: %s: %w", p, err)
		}
		if d.IsDir() {
			if render.PlainSkipsDir(root, p, d) {
				return fs.SkipDir
			}
			return nil
		}
		if !render.PlainReads(p, d) {
			return nil
		}
		return rw.sendEntry(p, d)
	})
}

// walkMount sends what render copies for kustomize: every file but
// hidden ones and approvals/ and status/ at the repository root and under
// root.
func (rw *writer) walkMount(root string) error {
	return fs.WalkDir(rw.fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("render: %s: %w", p, err)
		}
		if render.MountSkips(root, p, d) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		return rw.sendEntry(p, d)
	})
}

// sendEntry sends a regular file, or a link and what it leads to, met in
// the walk: where render's reader reads it, so it counts towards the
// total there.
func (rw *writer) sendEntry(p string, d fs.DirEntry) error {
	switch {
	case d.Type()&fs.ModeSymlink != 0:
		if mode, size := rw.sendResolved(p); mode == 0 {
			rw.count(size)
		}
		return rw.failed()
	case d.Type().IsRegular():
		size, err := rw.sendFile(p)
		rw.count(size)
		return err
	}
	return nil
}

// count adds a file read to the total as render's reader does (a file
// over MaxFileSize is not read).
func (rw *writer) count(size int64) {
	if size <= rw.opts.MaxFileSize {
		rw.total += size
	}
}

// failed is the first error of sending, kept by sendResolved.
func (rw *writer) failed() error { return rw.err }

// sendFile sends the regular file p once, cut past MaxFileSize, and
// returns its size as sent. Once the files counted are over MaxTotalSize
// the render fails at the one that went over, so only kustomizations
// (which render reads first, whole) are still sent.
func (rw *writer) sendFile(p string) (int64, error) {
	if size, ok := rw.sizes[p]; ok {
		return size, nil
	}
	kustomization := render.IsKustomizationName(path.Base(p))
	if rw.total > rw.opts.MaxTotalSize && !kustomization {
		return 0, nil
	}
	f, err := rw.fsys.Open(p)
	if err != nil {
		return 0, fmt.Errorf("render: %s: %w", p, err)
	}
	defer f.Close()
	var r io.Reader = f
	if !kustomization {
		r = io.LimitReader(f, rw.opts.MaxFileSize+1)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return 0, fmt.Errorf("render: %s: %w", p, err)
	}
	rw.sizes[p] = int64(len(data))
	return int64(len(data)), rw.enc.Encode(entry{Name: p, Kind: kindFile, Data: data})
}

// sendResolved follows p through symbolic links (in any component), as an
// fs.FS resolves a name, sending every link on the way and the file or
// folder it ends at. It returns that one's type (0 for a regular file, and
// its size), or fs.ModeIrregular if p leads nowhere (it dangles, loops or
// leaves the repository). Errors of reading are kept for failed.
func (rw *writer) sendResolved(p string) (fs.FileMode, int64) {
	real, res, err := rw.follow(p)
	if err != nil {
		rw.keep(err)
		return fs.ModeIrregular, 0
	}
	if res != followed {
		return fs.ModeIrregular, 0
	}
	info, err := fs.Lstat(rw.fsys, real)
	if err != nil {
		return fs.ModeIrregular, 0
	}
	switch {
	case info.Mode().IsRegular():
		size, err := rw.sendFile(real)
		rw.keep(err)
		return 0, size
	case info.IsDir():
		if !rw.sent[real] {
			rw.sent[real] = true
			rw.keep(rw.enc.Encode(entry{Name: real, Kind: kindDir}))
		}
		return fs.ModeDir, 0
	}
	return fs.ModeIrregular, 0
}

func (rw *writer) keep(err error) {
	if rw.err == nil {
		rw.err = err
	}
}

// follow resolves p one component at a time, never asking fsys to
// resolve a link itself: an fstest.MapFS recurses without bound on a link
// loop (a kustomization.yaml linking to itself would end the process).
// Each link met is sent. res says whether p leads to an entry inside the
// repository, nowhere, or through more than render.MaxLinkHops links.
func (rw *writer) follow(p string) (real string, res followResult, err error) {
	hops := 0
	parts := strings.Split(p, "/")
	cur := "."
	for i := 0; i < len(parts); i++ {
		if parts[i] == "." {
			continue
		}
		next := path.Join(cur, parts[i])
		info, lerr := fs.Lstat(rw.fsys, next)
		if lerr != nil {
			return "", missing, nil
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops++; hops > render.MaxLinkHops {
			return "", looped, nil
		}
		target, rerr := fs.ReadLink(rw.fsys, next)
		if rerr != nil {
			return "", missing, nil
		}
		if !rw.sent[next] {
			rw.sent[next] = true
			if err := rw.enc.Encode(entry{Name: next, Kind: kindLink, Data: []byte(target)}); err != nil {
				return "", missing, err
			}
		}
		if path.IsAbs(target) {
			return "", missing, nil
		}
		rest := path.Join(append([]string{path.Dir(next), target}, parts[i+1:]...)...)
		if !fs.ValidPath(rest) {
			return "", missing, nil
		}
		parts, cur, i = strings.Split(rest, "/"), ".", -1
	}
	return cur, followed, nil
}

type followResult uint8

const (
	followed followResult = iota
	missing               // dangles, or leaves the repository
	looped                // more than render.MaxLinkHops links
)

// Digest identifies what a render of opts.Path of fsys reads: two trees
// with one digest render the same (render is deterministic), so a caller
// that knows the result of one need not render the other. It reads the
// files a render would, not more.
func Digest(fsys fs.FS, opts render.Options) (string, error) {
	opts.Accepted = nil // changes the time a render takes, not its result
	h := sha256.New()
	if err := writeRequest(h, fsys, opts); err != nil {
		var pe errPath
		if !errors.As(err, &pe) {
			return "", err
		}
		// The path itself is wrong: the error is the whole input.
		fmt.Fprintf(h, "\x00path error: %v", pe)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
