package gitsource

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
)

// Merging own packs streams their indexes into the merged pack's: each is
// sorted by hash, so the merged one is their k-way merge, written as it
// is read, and its reverse index follows from theirs, since the merged
// pack is their bodies one after the other. Collecting the entries to sort
// them, as mergePacks does for packs of any origin, held 60 bytes an
// object of the merged pack at once: a merge of 512 pushes at 1,000
// clusters raised the peak RSS by 30 MiB at run 76 of
// BenchmarkHeapAcrossRuns, and every eighth merge is eight times larger
// than the last. What this holds is 4 bytes an object (where each input's
// objects land) and the diskIndex's samples.

// mergeInput reads an own pack's index in the order of hashes and of
// offsets.
type mergeInput struct {
	n    int
	base uint64 // what its offsets grow by in the merged pack
	// hashOrder lists the entries by hash; offsetOrder the positions in
	// that order of the entries by offset; offsetAt the offset of a
	// position.
	hashOrder   func() (func() (idxfile.Entry, error), error)
	offsetOrder func() (func() (uint32, error), error)
	offsetAt    func(pos int) (uint64, error)
	// counts[b] is how many of its names start with byte b.
	counts [256]uint32
	// landed[p] is where the entry at position p lands in the merged
	// index.
	landed []uint32
}

func inputOf(index idxfile.Index) (*mergeInput, error) {
	switch idx := index.(type) {
	case *packIndex:
		in := &mergeInput{n: len(idx.byHash)}
		in.hashOrder = func() (func() (idxfile.Entry, error), error) {
			i := 0
			return func() (idxfile.Entry, error) { i++; return idx.byHash[i-1], nil }, nil
		}
		in.offsetOrder = func() (func() (uint32, error), error) {
			i := 0
			return func() (uint32, error) { i++; return idx.byOffset[i-1], nil }, nil
		}
		in.offsetAt = func(pos int) (uint64, error) { return idx.byHash[pos].Offset, nil }
		for _, e := range idx.byHash {
			in.counts[e.Hash[0]]++
		}
		return in, nil
	case *diskIndex:
		in := &mergeInput{n: idx.n, offsetAt: idx.offsetAt}
		fanout, err := idx.readAt(idx.idx, 256*4, 8)
		if err != nil {
			return nil, err
		}
		var below uint32
		for b := range in.counts {
			cum := binary.BigEndian.Uint32(fanout[4*b:])
			in.counts[b] = cum - below
			below = cum
		}
		in.hashOrder = func() (func() (idxfile.Entry, error), error) {
			names := bufio.NewReader(io.NewSectionReader(idx.idx, idxNames, int64(20*idx.n)))
			crcs := bufio.NewReader(io.NewSectionReader(idx.idx, int64(idxNames+20*idx.n), int64(4*idx.n)))
			offsets := bufio.NewReader(io.NewSectionReader(idx.idx, int64(idxNames+24*idx.n), int64(4*idx.n)))
			var b [20]byte
			return func() (idxfile.Entry, error) {
				var e idxfile.Entry
				if _, err := io.ReadFull(names, e.Hash[:]); err != nil {
					return e, err
				}
				if _, err := io.ReadFull(crcs, b[:4]); err != nil {
					return e, err
				}
				e.CRC32 = binary.BigEndian.Uint32(b[:4])
				if _, err := io.ReadFull(offsets, b[:4]); err != nil {
					return e, err
				}
				o := binary.BigEndian.Uint32(b[:4])
				if o&(1<<31) == 0 {
					e.Offset = uint64(o)
					return e, nil
				}
				large, err := idx.readAt(idx.idx, 8, int64(idxNames+28*idx.n+8*int(o&^(1<<31))))
				if err != nil {
					return e, err
				}
				e.Offset = binary.BigEndian.Uint64(large)
				return e, nil
			}, nil
		}
		in.offsetOrder = func() (func() (uint32, error), error) {
			positions := bufio.NewReader(io.NewSectionReader(idx.rev, 12, int64(4*idx.n)))
			var b [4]byte
			return func() (uint32, error) {
				if _, err := io.ReadFull(positions, b[:]); err != nil {
					return 0, err
				}
				return binary.BigEndian.Uint32(b[:]), nil
			}, nil
		}
		return in, nil
	}
	return nil, fmt.Errorf("cannot merge a pack indexed by a %T", index)
}

// mergeOwn writes own packs (oldest first) as one, indexes it on disk,
// removes them, and returns the merged pack's hash and index.
func (l *layer) mergeOwn(packs []ownPack) (plumbing.Hash, *diskIndex, error) {
	var total uint32
	inputs := make([]*mergeInput, len(packs))
	for i, p := range packs {
		in, err := inputOf(p.index)
		if err != nil {
			return plumbing.ZeroHash, nil, err
		}
		inputs[i] = in
		total += uint32(in.n)
	}
	w, err := l.newPackWriter(total)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	defer w.close()
	for i, p := range packs {
		inputs[i].base = w.offset - 12 // its entries' offsets count its header
		if _, err := l.appendBody(w, p.hash); err != nil {
			return plumbing.ZeroHash, nil, fmt.Errorf("merging pack %s: %w", p.hash, err)
		}
	}
	checksum, err := w.finish()
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	idxTmp, names, err := l.writeMergedIndex(inputs, int(total), checksum)
	if idxTmp != "" {
		defer os.Remove(idxTmp)
	}
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	if err := l.src.store.loadIndexes(); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	if err := os.Rename(w.tmp.Name(), l.packPath(checksum, "pack")); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	if err := os.Rename(idxTmp, l.packPath(checksum, "idx")); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	d, err := l.writeMergedRev(inputs, int(total), checksum, names)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	for _, p := range packs {
		if p.hash == checksum {
			continue
		}
		if err := l.deletePack(p.hash); err != nil {
			d.close()
			return plumbing.ZeroHash, nil, err
		}
	}
	return checksum, d, nil
}

// writeMergedIndex writes the merged pack's index to a temporary file of
// the pack directory, in three passes over the inputs (names, CRC-32s,
// offsets); the fanout table is the sum of theirs. It records where each
// input's entries land and returns every diskSample-th name.
func (l *layer) writeMergedIndex(inputs []*mergeInput, total int, pack plumbing.Hash) (string, []plumbing.Hash, error) {
	f, err := createTemp(l.packDir(), "tmp_idx_")
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	sum := sha1.New()
	out := bufio.NewWriterSize(io.MultiWriter(f, sum), 64<<10)
	var scratch [8]byte
	put := func(v uint32) { out.Write(binary.BigEndian.AppendUint32(scratch[:0], v)) }
	out.Write([]byte{0xff, 't', 'O', 'c'})
	put(2)
	var cum uint32
	for b := range 256 {
		for _, in := range inputs {
			cum += in.counts[b]
		}
		put(cum)
	}
	if int(cum) != total {
		return f.Name(), nil, fmt.Errorf("the packs' indexes list %d objects, their headers %d", cum, total)
	}
	var names []plumbing.Hash
	var large []uint64
	at := 0
	passes := []func(i int, e idxfile.Entry){
		func(i int, e idxfile.Entry) {
			if at%diskSample == 0 {
				names = append(names, e.Hash)
			}
			at++
			out.Write(e.Hash[:])
		},
		func(i int, e idxfile.Entry) { put(e.CRC32) },
		func(i int, e idxfile.Entry) {
			o := e.Offset + inputs[i].base
			if o < 1<<31 {
				put(uint32(o))
				return
			}
			put(1<<31 | uint32(len(large)))
			large = append(large, o)
		},
	}
	for n, pass := range passes {
		if err := mergeByHash(inputs, total, n == 0, pass); err != nil {
			return f.Name(), nil, err
		}
	}
	for _, o := range large {
		out.Write(binary.BigEndian.AppendUint64(scratch[:0], o))
	}
	out.Write(pack[:])
	if err := out.Flush(); err != nil {
		return f.Name(), nil, err
	}
	if _, err := f.Write(sum.Sum(nil)); err != nil {
		return f.Name(), nil, err
	}
	return f.Name(), names, f.Close()
}

// mergeByHash calls emit with every entry of the inputs in the order of
// hashes, an input's before a later input's of the same hash (the order
// encodeIndex's stable sort gives the packs' entries one after the other);
// record has it note where each entry lands.
func mergeByHash(inputs []*mergeInput, total int, record bool, emit func(i int, e idxfile.Entry)) error {
	type cursor struct {
		next func() (idxfile.Entry, error)
		head idxfile.Entry
		pos  int
	}
	cursors := make([]cursor, len(inputs))
	for i, in := range inputs {
		next, err := in.hashOrder()
		if err != nil {
			return err
		}
		cursors[i].next = next
		if record {
			in.landed = make([]uint32, in.n)
		}
		if in.n > 0 {
			if cursors[i].head, err = next(); err != nil {
				return err
			}
		}
	}
	for out := range total {
		best := -1
		for i := range cursors {
			if cursors[i].pos < inputs[i].n && (best < 0 || bytes.Compare(cursors[i].head.Hash[:], cursors[best].head.Hash[:]) < 0) {
				best = i
			}
		}
		if best < 0 {
			return errors.New("the packs' indexes list fewer objects than their headers")
		}
		c := &cursors[best]
		if record {
			inputs[best].landed[c.pos] = uint32(out)
		}
		emit(best, c.head)
		c.pos++
		if c.pos < inputs[best].n {
			var err error
			if c.head, err = c.next(); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeMergedRev writes the merged pack's reverse index, its inputs'
// objects by offset one input after the other, and opens its diskIndex,
// whose names' samples the index's writing took.
func (l *layer) writeMergedRev(inputs []*mergeInput, total int, pack plumbing.Hash, names []plumbing.Hash) (*diskIndex, error) {
	d := &diskIndex{n: total, names: names}
	f, err := os.CreateTemp(l.packDir(), "tmp_rev_")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name()) // gone already once in place
	defer f.Close()
	sum := sha1.New()
	out := bufio.NewWriterSize(io.MultiWriter(f, sum), 64<<10)
	var scratch [4]byte
	out.Write([]byte("RIDX"))
	out.Write(binary.BigEndian.AppendUint32(scratch[:0], 1)) // version
	out.Write(binary.BigEndian.AppendUint32(scratch[:0], 1)) // SHA-1
	r := 0
	for _, in := range inputs {
		next, err := in.offsetOrder()
		if err != nil {
			return nil, err
		}
		for range in.n {
			p, err := next()
			if err != nil {
				return nil, err
			}
			if int(p) >= in.n {
				return nil, errors.New("reverse index position out of range")
			}
			out.Write(binary.BigEndian.AppendUint32(scratch[:0], in.landed[p]))
			if r%diskSample == 0 {
				o, err := in.offsetAt(int(p))
				if err != nil {
					return nil, err
				}
				d.offsets = append(d.offsets, o+in.base)
			}
			r++
		}
	}
	out.Write(pack[:])
	if err := out.Flush(); err != nil {
		return nil, err
	}
	if _, err := f.Write(sum.Sum(nil)); err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	if err := os.Rename(f.Name(), l.packPath(pack, "rev")); err != nil {
		return nil, err
	}
	if d.idx, err = os.Open(l.packPath(pack, "idx")); err != nil {
		return nil, err
	}
	if d.rev, err = os.Open(l.packPath(pack, "rev")); err != nil {
		d.idx.Close()
		return nil, err
	}
	return d, nil
}
