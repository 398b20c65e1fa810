package gitsource

import (
	"bufio"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// A pushed pack is written here rather than by go-git's encoder, for
// three costs that were a third of serve's CPU at 100 concurrent runs:
//
//   - the pack's index (each object's offset and CRC-32) is recorded while
//     the pack is written, so the cache takes the pack without parsing it
//     again (inflating every object, resolving its deltas, hashing it);
//   - the delta search tries one base per blob, the first whole blob pushed
//     in the same directory (the status files of one placement's bindings
//     or of the runs are alike), instead of a window of candidates by size;
//     chains are one delta deep, so reading an object back costs one delta;
//   - whole objects are deflated at zlib's fastest level, whose writer
//     resets without clearing the 640 KB of match tables the default level
//     clears for every object; deltas (a few dozen bytes of copy
//     instructions and new text) are stored in zlib without deflating,
//     whose Huffman tables cost more than the bytes they save.
//
// Trees are sent whole: a status tree is mostly the hashes of its entries,
// which no sibling tree shares.

// pushObject is an object to push and the tree that holds it (zero if
// unknown), whose other blobs are its candidate delta bases.
type pushObject struct {
	hash plumbing.Hash
	dir  plumbing.Hash
}

// Pack entry types (Git's pack format).
const (
	packOFSDelta = 6
	packREFDelta = 7
)

// deltaBase is the whole blob of a directory that later blobs of the same
// directory are tried against.
type deltaBase struct {
	hash   plumbing.Hash
	offset uint64
	data   []byte
}

// packEncoder writes a version 2 pack and the index entries of its
// objects.
type packEncoder struct {
	out     *bufio.Writer
	sum     hash.Hash
	crc     hash.Hash32
	zw      *zlib.Writer // whole objects
	zstore  *zlib.Writer // deltas
	offset  uint64
	entries []idxfile.Entry
	// refDeltas names delta bases by hash, for a remote without the
	// ofs-delta capability.
	refDeltas bool
	scratch   []byte
}

// encodePack writes the objects (read from store) to w as a pack and
// returns its index entries and checksum.
func encodePack(w io.Writer, store storer.EncodedObjectStorer, objects []pushObject, refDeltas bool) ([]idxfile.Entry, plumbing.Hash, error) {
	e := &packEncoder{sum: sha1.New(), crc: crc32.NewIEEE(), refDeltas: refDeltas,
		entries: make([]idxfile.Entry, 0, len(objects))}
	e.out = bufio.NewWriterSize(io.MultiWriter(w, e.sum), 64<<10)
	zw, err := zlib.NewWriterLevel(e.out, zlib.BestSpeed)
	if err != nil {
		return nil, plumbing.ZeroHash, err
	}
	e.zw = zw
	if e.zstore, err = zlib.NewWriterLevel(e.out, zlib.NoCompression); err != nil {
		return nil, plumbing.ZeroHash, err
	}
	header := make([]byte, 12)
	copy(header, "PACK")
	binary.BigEndian.PutUint32(header[4:], 2)
	binary.BigEndian.PutUint32(header[8:], uint32(len(objects)))
	if err := e.write(header); err != nil {
		return nil, plumbing.ZeroHash, err
	}
	bases := map[plumbing.Hash]*deltaBase{}
	for _, po := range objects {
		o, err := store.EncodedObject(plumbing.AnyObject, po.hash)
		if err != nil {
			return nil, plumbing.ZeroHash, fmt.Errorf("object %s: %w", po.hash, err)
		}
		data, err := objectBytes(o)
		if err != nil {
			return nil, plumbing.ZeroHash, fmt.Errorf("object %s: %w", po.hash, err)
		}
		if o.Type() != plumbing.BlobObject || po.dir.IsZero() {
			if err := e.entry(po.hash, o.Type(), data, nil); err != nil {
				return nil, plumbing.ZeroHash, err
			}
			continue
		}
		base := bases[po.dir]
		if base != nil && len(data) >= len(base.data)>>4 {
			if delta := packfile.DiffDelta(base.data, data); len(delta) < len(data)>>1 {
				if err := e.entry(po.hash, plumbing.BlobObject, delta, base); err != nil {
					return nil, plumbing.ZeroHash, err
				}
				continue
			}
		}
		offset := e.offset
		if err := e.entry(po.hash, plumbing.BlobObject, data, nil); err != nil {
			return nil, plumbing.ZeroHash, err
		}
		if base == nil {
			bases[po.dir] = &deltaBase{hash: po.hash, offset: offset, data: data}
		}
	}
	if err := e.out.Flush(); err != nil {
		return nil, plumbing.ZeroHash, err
	}
	var checksum plumbing.Hash
	copy(checksum[:], e.sum.Sum(nil))
	if _, err := w.Write(checksum[:]); err != nil {
		return nil, plumbing.ZeroHash, err
	}
	return e.entries, checksum, nil
}

// entry writes one object, whole or (base not nil) as a delta of base.
func (e *packEncoder) entry(h plumbing.Hash, t plumbing.ObjectType, data []byte, base *deltaBase) error {
	start := e.offset
	e.crc.Reset()
	typ := int64(t)
	switch {
	case base != nil && e.refDeltas:
		typ = packREFDelta
	case base != nil:
		typ = packOFSDelta
	}
	b := e.scratch[:0]
	size := int64(len(data))
	c := byte(typ<<4) | byte(size&0x0f)
	for size >>= 4; size > 0; size >>= 7 {
		b = append(b, c|0x80)
		c = byte(size & 0x7f)
	}
	b = append(b, c)
	switch typ {
	case packREFDelta:
		b = append(b, base.hash[:]...)
	case packOFSDelta:
		b = appendOFSOffset(b, start-base.offset)
	}
	e.scratch = b
	if err := e.write(b); err != nil {
		return err
	}
	zw := e.zw
	if base != nil {
		zw = e.zstore
	}
	zw.Reset(entryWriter{e})
	if _, err := zw.Write(data); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	e.entries = append(e.entries, idxfile.Entry{Hash: h, CRC32: e.crc.Sum32(), Offset: start})
	return nil
}

// write writes b as part of the current entry.
func (e *packEncoder) write(b []byte) error {
	_, err := e.out.Write(b)
	e.crc.Write(b)
	e.offset += uint64(len(b))
	return err
}

// entryWriter is where the zlib stream of an entry goes.
type entryWriter struct{ e *packEncoder }

func (w entryWriter) Write(b []byte) (int, error) {
	if err := w.e.write(b); err != nil {
		return 0, err
	}
	return len(b), nil
}

// appendOFSOffset appends the distance back to an ofs-delta's base in
// Git's encoding: seven bits a byte, most significant first, each byte but
// the last with its high bit set and one added to what it carries.
func appendOFSOffset(b []byte, d uint64) []byte {
	var buf [10]byte
	i := len(buf) - 1
	buf[i] = byte(d & 0x7f)
	for d >>= 7; d > 0; d >>= 7 {
		d--
		i--
		buf[i] = 0x80 | byte(d&0x7f)
	}
	return append(b, buf[i:]...)
}

// objectBytes is an object's content.
func objectBytes(o plumbing.EncodedObject) ([]byte, error) {
	r, err := o.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data := make([]byte, o.Size())
	_, err = io.ReadFull(r, data)
	return data, err
}
