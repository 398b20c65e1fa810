package gitsource

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// A commit gitfleet makes is built in memory, pushed from memory, and
// reaches the cache as the pack the push sent, once the remote has taken
// it (packs.go).
// Written as loose objects instead, each blob, tree and commit cost a zlib
// stream and four system calls, and the push read every one back to pack
// it: at 10,000 clusters that was a third of serve's CPU, and a few files
// per status commit for Maintain to clean up.

// layer is the object store the commit code reads and writes: objects of
// the commit being built (staged), trees of the commits pushed last
// (recent), then the cache. Only the holder of Source's lock uses it.
type layer struct {
	src    *Source
	staged map[plumbing.Hash]plumbing.EncodedObject
	// recent holds the trees of the commit pushed last: the bases of the
	// next commit's trees.
	recent map[plumbing.Hash]plumbing.EncodedObject
}

var _ storer.EncodedObjectStorer = (*layer)(nil)

// reset forgets every object held in memory; the cache was replaced or
// repacked.
func (l *layer) reset() {
	l.staged, l.recent = nil, nil
}

func (l *layer) lookup(h plumbing.Hash) plumbing.EncodedObject {
	if o, ok := l.staged[h]; ok {
		return o
	}
	return l.recent[h]
}

func (l *layer) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if o := l.lookup(h); o != nil {
		if t != plumbing.AnyObject && o.Type() != t {
			return nil, plumbing.ErrObjectNotFound
		}
		return o, nil
	}
	return l.src.store.EncodedObject(t, h)
}

func (l *layer) HasEncodedObject(h plumbing.Hash) error {
	if l.lookup(h) != nil {
		return nil
	}
	return l.src.store.HasEncodedObject(h)
}

func (l *layer) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	if o := l.lookup(h); o != nil {
		return o.Size(), nil
	}
	return l.src.store.EncodedObjectSize(h)
}

func (l *layer) NewEncodedObject() plumbing.EncodedObject { return &plumbing.MemoryObject{} }

// SetEncodedObject stages obj for the commit being built.
func (l *layer) SetEncodedObject(obj plumbing.EncodedObject) (plumbing.Hash, error) {
	h := obj.Hash()
	if l.lookup(h) != nil {
		return h, nil
	}
	if l.staged == nil {
		l.staged = map[plumbing.Hash]plumbing.EncodedObject{}
	}
	l.staged[h] = obj
	return h, nil
}

func (l *layer) IterEncodedObjects(plumbing.ObjectType) (storer.EncodedObjectIter, error) {
	return nil, errors.New("gitsource: cannot iterate the objects of a commit being built")
}

func (l *layer) AddAlternate(string) error {
	return errors.New("gitsource: cannot add alternates to a commit being built")
}

// discard drops the staged objects: the commit was not pushed.
func (l *layer) discard() { l.staged = nil }

// keep moves the staged objects of pushed commit into the cache: the
// pack the push sent (none if it sent none or it was too large) holds the
// objects it lists. Objects the pack lacks are written loose. The commit's
// trees stay in memory as the next commit's bases (keepTrees).
func (l *layer) keep(commit plumbing.Hash, sent sentPack) error {
	staged := l.staged
	l.staged = nil
	if len(staged) == 0 {
		return nil
	}
	packed := false
	if len(sent.pack) > 0 {
		if err := l.addPack(sent.pack, sent.index, sent.checksum); err != nil {
			l.src.log.Warn("cannot write the pushed pack to the cache; writing its objects one by one", "err", l.src.red.scrub(err.Error()))
		} else {
			packed = true
		}
	}
	for h, o := range staged {
		if !packed || !sent.objects[h] {
			if _, err := l.src.store.SetEncodedObject(o); err != nil {
				return fmt.Errorf("object %s: %w", h, err)
			}
		}
	}
	l.keepTrees(commit, staged)
	return nil
}

// keepTrees keeps in memory the trees of commit that are staged or were
// kept already, and forgets every other: a commit is built on the branch's
// tip, so its bases are the tip's trees, and a tree the tip no longer has
// is read again only by a commit built on an older one (from the cache).
// Kept by the trees of the commits pushed last instead, bounded at 8 MiB,
// they swung the heap by 8 MiB every twenty runs at 1,000 clusters
// (BenchmarkHeapAcrossRuns) and still missed a subtree no commit of the
// last few had changed.
func (l *layer) keepTrees(commit plumbing.Hash, staged map[plumbing.Hash]plumbing.EncodedObject) {
	find := func(h plumbing.Hash) plumbing.EncodedObject {
		if o, ok := staged[h]; ok {
			return o
		}
		return l.recent[h]
	}
	kept := map[plumbing.Hash]plumbing.EncodedObject{}
	var walk func(h plumbing.Hash)
	walk = func(h plumbing.Hash) {
		if _, ok := kept[h]; ok {
			return
		}
		o := find(h)
		if o == nil || o.Type() != plumbing.TreeObject {
			return // read from the cache when a commit needs it
		}
		kept[h] = o
		if err := subtrees(o, walk); err != nil {
			delete(kept, h) // cannot happen for a tree built here
		}
	}
	c := find(commit)
	if c == nil {
		l.recent = kept
		return
	}
	kept[commit] = c
	var decoded object.Commit
	if err := decoded.Decode(c); err == nil {
		walk(decoded.TreeHash)
	}
	l.recent = kept
}

// subtrees calls f with the hash of each directory entry of tree o. It
// reads the tree's encoding ("<mode> <name>\x00<20-byte hash>" an entry)
// itself: go-git's decoder makes an entry and a name string of each file,
// and a status tree of 1,000 clusters has a thousand files in one directory.
func subtrees(o plumbing.EncodedObject, f func(plumbing.Hash)) error {
	r, err := o.Reader()
	if err != nil {
		return err
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	for len(data) > 0 {
		nul := bytes.IndexByte(data, 0)
		if nul < 0 || len(data) < nul+1+20 {
			return errors.New("truncated tree entry")
		}
		if bytes.HasPrefix(data, []byte("40000 ")) {
			var h plumbing.Hash
			copy(h[:], data[nul+1:])
			f(h)
		}
		data = data[nul+1+20:]
	}
	return nil
}

// maxKeptPack bounds the pushed pack kept in memory to be written to the
// cache. A larger push (the first of a large fleet's status, or a push
// after the remote lost the parent) writes its new objects loose.
var maxKeptPack = 64 << 20 // a variable for tests

// packCopy keeps a copy of what the push encoder writes, up to
// maxKeptPack bytes; past it the copy is dropped.
type packCopy struct {
	buf  bytes.Buffer
	over bool
}

func (p *packCopy) Write(b []byte) (int, error) {
	if !p.over {
		if p.buf.Len()+len(b) > maxKeptPack {
			p.over = true
			p.buf = bytes.Buffer{}
		} else {
			p.buf.Write(b)
		}
	}
	return len(b), nil
}

// bytes is the whole pack, or nil if it grew past maxKeptPack.
func (p *packCopy) bytes() []byte {
	if p.over {
		return nil
	}
	return p.buf.Bytes()
}
