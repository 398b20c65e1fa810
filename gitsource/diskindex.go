package gitsource

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
)

// A merged own pack is looked up in its index files on disk, not in memory.
// The cache holds the whole history, so an index of it in memory grows with
// every status commit: packIndex costs 36 bytes an object, about 85 KB a
// run at 1,000 clusters, 7.5 MiB of the heap after 100 runs and rising for
// as long as serve runs (BenchmarkHeapAcrossRuns). diskIndex reads the
// pack's version 2 index (.idx) and its reverse index (.rev, the index's
// positions in the order of their offsets), both in git's formats, so git
// reads them too and git fsck checks them. It keeps one hash and one offset
// of every diskSample objects in memory (0.4 bytes an object): a look-up by
// hash reads one block of names and an offset, one by offset (a delta's
// base) one block of positions and a few offsets.
//
// go-git cannot do this: its MemoryIndex reads a whole index into memory
// and its packs answer a delta's base with a map of every offset. Packs of
// level 0 (the last few pushes) keep packIndex: they are small, and the
// newest are read most.

// diskSample is how many objects of a diskIndex share one sample in memory.
const diskSample = 64

// idxNames is where a version 2 index's names start: its magic, version
// and fanout table come first.
const idxNames = 8 + 256*4

// diskIndex is the index of a merged own pack, read from its files.
type diskIndex struct {
	idx, rev *os.File
	n        int
	// names[i] is the name at position i*diskSample.
	names []plumbing.Hash
	// offsets[i] is the offset of the (i*diskSample)th object by offset.
	offsets []uint64
}

var _ idxfile.Index = (*diskIndex)(nil)

func (d *diskIndex) close() {
	d.idx.Close()
	d.rev.Close()
}

func (d *diskIndex) readAt(f *os.File, n int, off int64) ([]byte, error) {
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		return nil, fmt.Errorf("reading %s: %w", f.Name(), err)
	}
	return b, nil
}

// find returns the position of h, or -1.
func (d *diskIndex) find(h plumbing.Hash) (int, error) {
	block := sort.Search(len(d.names), func(i int) bool { return bytes.Compare(d.names[i][:], h[:]) > 0 }) - 1
	if block < 0 {
		return -1, nil
	}
	start := block * diskSample
	count := min(diskSample, d.n-start)
	names, err := d.readAt(d.idx, 20*count, int64(idxNames+20*start))
	if err != nil {
		return -1, err
	}
	i := sort.Search(count, func(i int) bool { return bytes.Compare(names[20*i:20*i+20], h[:]) >= 0 })
	if i == count || !bytes.Equal(names[20*i:20*i+20], h[:]) {
		return -1, nil
	}
	return start + i, nil
}

// offsetAt is the offset of the object at position pos.
func (d *diskIndex) offsetAt(pos int) (uint64, error) {
	b, err := d.readAt(d.idx, 4, int64(idxNames+24*d.n+4*pos))
	if err != nil {
		return 0, err
	}
	o := binary.BigEndian.Uint32(b)
	if o&(1<<31) == 0 {
		return uint64(o), nil
	}
	b, err = d.readAt(d.idx, 8, int64(idxNames+28*d.n+8*int(o&^(1<<31))))
	if err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint64(b), nil
}

// entryAt reads the entry at position pos.
func (d *diskIndex) entryAt(pos int) (*idxfile.Entry, error) {
	e := &idxfile.Entry{}
	name, err := d.readAt(d.idx, 20, int64(idxNames+20*pos))
	if err != nil {
		return nil, err
	}
	copy(e.Hash[:], name)
	crc, err := d.readAt(d.idx, 4, int64(idxNames+20*d.n+4*pos))
	if err != nil {
		return nil, err
	}
	e.CRC32 = binary.BigEndian.Uint32(crc)
	e.Offset, err = d.offsetAt(pos)
	return e, err
}

// positionByOffset returns the position of the object at offset o, or -1.
func (d *diskIndex) positionByOffset(o uint64) (int, error) {
	block := sort.Search(len(d.offsets), func(i int) bool { return d.offsets[i] > o }) - 1
	if block < 0 {
		return -1, nil
	}
	start := block * diskSample
	count := min(diskSample, d.n-start)
	raw, err := d.readAt(d.rev, 4*count, int64(12+4*start))
	if err != nil {
		return -1, err
	}
	var searchErr error
	i := sort.Search(count, func(i int) bool {
		off, err := d.offsetAt(int(binary.BigEndian.Uint32(raw[4*i:])))
		if err != nil {
			searchErr = err
			return true
		}
		return off >= o
	})
	if searchErr != nil {
		return -1, searchErr
	}
	if i == count {
		return -1, nil
	}
	pos := int(binary.BigEndian.Uint32(raw[4*i:]))
	if off, err := d.offsetAt(pos); err != nil || off != o {
		return -1, err
	}
	return pos, nil
}

func (d *diskIndex) Contains(h plumbing.Hash) (bool, error) {
	pos, err := d.find(h)
	return pos >= 0, err
}

func (d *diskIndex) FindOffset(h plumbing.Hash) (int64, error) {
	pos, err := d.find(h)
	if err != nil {
		return 0, err
	}
	if pos < 0 {
		return 0, plumbing.ErrObjectNotFound
	}
	o, err := d.offsetAt(pos)
	return int64(o), err
}

func (d *diskIndex) FindCRC32(h plumbing.Hash) (uint32, error) {
	pos, err := d.find(h)
	if err != nil {
		return 0, err
	}
	if pos < 0 {
		return 0, plumbing.ErrObjectNotFound
	}
	e, err := d.entryAt(pos)
	if err != nil {
		return 0, err
	}
	return e.CRC32, nil
}

func (d *diskIndex) FindHash(o int64) (plumbing.Hash, error) {
	if o < 0 {
		return plumbing.ZeroHash, plumbing.ErrObjectNotFound
	}
	pos, err := d.positionByOffset(uint64(o))
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if pos < 0 {
		return plumbing.ZeroHash, plumbing.ErrObjectNotFound
	}
	e, err := d.entryAt(pos)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return e.Hash, nil
}

func (d *diskIndex) Count() (int64, error) { return int64(d.n), nil }

// Entries lists the entries by hash, reading each; nothing of gitfleet's
// reads an own pack whole.
func (d *diskIndex) Entries() (idxfile.EntryIter, error) {
	return &diskEntryIter{d: d, at: func(i int) (int, error) { return i, nil }}, nil
}

func (d *diskIndex) EntriesByOffset() (idxfile.EntryIter, error) {
	return &diskEntryIter{d: d, at: func(i int) (int, error) {
		b, err := d.readAt(d.rev, 4, int64(12+4*i))
		if err != nil {
			return 0, err
		}
		return int(binary.BigEndian.Uint32(b)), nil
	}}, nil
}

// diskEntryIter lists a diskIndex's entries, the ith at position at(i).
type diskEntryIter struct {
	d  *diskIndex
	at func(int) (int, error)
	i  int
}

func (it *diskEntryIter) Next() (*idxfile.Entry, error) {
	if it.i >= it.d.n {
		return nil, io.EOF
	}
	pos, err := it.at(it.i)
	if err != nil {
		return nil, err
	}
	if pos >= it.d.n {
		return nil, errors.New("reverse index position out of range")
	}
	it.i++
	return it.d.entryAt(pos)
}

func (it *diskEntryIter) Close() error {
	it.i = it.d.n
	return nil
}
