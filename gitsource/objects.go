package gitsource

import (
	"errors"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// errReadOnly is returned by the write methods of lockedObjects.
var errReadOnly = errors.New("gitsource: objects handed out by a Source are read-only")

// lockedObjects is the object store behind every commit and tree a Source
// hands out. go-git objects read lazily from their store, and the filesystem
// store is not safe for concurrent use, so each read takes the Source's lock
// and copies the object into memory before releasing it. Blobs larger than
// MaxFileSize are refused, which bounds what a caller can pull out of a
// returned tree.
type lockedObjects struct {
	src *Source
}

var _ storer.EncodedObjectStorer = (*lockedObjects)(nil)

func (l *lockedObjects) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	l.src.sem <- struct{}{}
	defer l.src.unlock()
	return l.src.readObject(t, h)
}

// readObject copies an object out of the store; the caller holds the lock.
func (s *Source) readObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	obj, err := s.built.EncodedObject(t, h)
	if err != nil {
		return nil, err
	}
	if obj.Type() == plumbing.BlobObject && obj.Size() > s.cfg.MaxFileSize {
		return nil, errorf("read", ErrTooLarge, fmt.Sprintf("blob %s is %d bytes, more than the %d byte limit", h, obj.Size(), s.cfg.MaxFileSize))
	}
	mem := &plumbing.MemoryObject{}
	mem.SetType(obj.Type())
	r, err := obj.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if _, err := io.Copy(mem, r); err != nil {
		return nil, err
	}
	return mem, nil
}

func (l *lockedObjects) HasEncodedObject(h plumbing.Hash) error {
	l.src.sem <- struct{}{}
	defer l.src.unlock()
	return l.src.store.HasEncodedObject(h)
}

func (l *lockedObjects) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	l.src.sem <- struct{}{}
	defer l.src.unlock()
	return l.src.store.EncodedObjectSize(h)
}

func (l *lockedObjects) NewEncodedObject() plumbing.EncodedObject { return &plumbing.MemoryObject{} }

func (l *lockedObjects) SetEncodedObject(plumbing.EncodedObject) (plumbing.Hash, error) {
	return plumbing.ZeroHash, errReadOnly
}

func (l *lockedObjects) IterEncodedObjects(plumbing.ObjectType) (storer.EncodedObjectIter, error) {
	return nil, errReadOnly
}

func (l *lockedObjects) AddAlternate(string) error { return errReadOnly }
