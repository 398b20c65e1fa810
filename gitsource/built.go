package gitsource

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// A commit gitfleet makes is built in memory, pushed from memory, and
// reaches the cache as the pack the push sent, once the remote has taken
// it (packs.go).
// Written as loose objects instead, each blob, tree and commit cost a zlib
// stream and four system calls, and the push read every one back to pack
// it: at 10,000 clusters that was a third of serve's CPU, and a few files
// per status commit for Maintain to clean up.

// maxRecentBytes bounds the trees kept from the commits pushed last, which
// are the bases of the next commit's trees; past it only the last commit's
// are kept (older bases are read from the cache). A bound by size, not by
// number: at 1,000 clusters a status commit writes trees of tens of
// kilobytes, and 16,384 of them held 13 MB more after every twenty runs,
// for as long as serve ran (BenchmarkHeapAcrossRuns).
var maxRecentBytes int64 = 8 << 20 // a variable for tests

// layer is the object store the commit code reads and writes: objects of
// the commit being built (staged), trees of the commits pushed last
// (recent), then the cache. Only the holder of Source's lock uses it.
type layer struct {
	src    *Source
	staged map[plumbing.Hash]plumbing.EncodedObject
	recent map[plumbing.Hash]plumbing.EncodedObject
	// recentBytes is the size of the objects in recent.
	recentBytes int64
}

var _ storer.EncodedObjectStorer = (*layer)(nil)

// reset forgets every object held in memory; the cache was replaced or
// repacked.
func (l *layer) reset() {
	l.staged, l.recent, l.recentBytes = nil, nil, 0
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

// keep moves the staged objects of a pushed commit into the cache: the
// pack the push sent (none if it sent none or it was too large) holds the
// objects it lists. Objects the pack lacks are written loose. The trees and
// the commit stay in memory as the next commit's bases.
func (l *layer) keep(sent sentPack) error {
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
	var size int64
	for _, o := range staged {
		if o.Type() != plumbing.BlobObject {
			size += o.Size()
		}
	}
	if l.recent == nil || l.recentBytes+size > maxRecentBytes {
		l.recent, l.recentBytes = map[plumbing.Hash]plumbing.EncodedObject{}, 0
	}
	for h, o := range staged {
		if !packed || !sent.objects[h] {
			if _, err := l.src.store.SetEncodedObject(o); err != nil {
				return fmt.Errorf("object %s: %w", h, err)
			}
		}
		if o.Type() != plumbing.BlobObject {
			if _, ok := l.recent[h]; !ok {
				l.recent[h] = o
				l.recentBytes += o.Size()
			}
		}
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
