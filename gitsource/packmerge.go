package gitsource

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
)

// Every pushed commit adds a small pack to the cache, and go-git looks an
// object up in every pack's index in turn, so a daemon that makes a status
// commit a second would read slower by the hour until Maintain repacks.
// Packs of pushed commits are therefore merged as they come, eight of a
// size into one of the next size, like a counter: a cache holds at most
// seven packs of each size, and a pushed byte is copied once per size,
// log8 of the commits since Maintain. Merging copies the packs' entries
// byte for byte and builds the index from theirs: nothing is inflated or
// hashed again, which go-git's own pack writer (a full parse) would do.
// Git's pack format allows it: a pack's deltas point at objects of the
// same pack by relative offset or by hash, and both survive concatenation.
// An object pushed twice (a status file back to an earlier content) is in
// two packs, then twice in the merged one, and its index lists it twice,
// as git's own index-pack does for such a pack; go-git's index writer
// would list it once, an index git refuses.

// packFanIn is how many packs of one size are merged into one.
const packFanIn = 8

// ownPack is a pack this Source wrote for pushed commits; a pack of size
// level L holds packFanIn^L commits.
type ownPack struct {
	hash  plumbing.Hash
	level int
}

// addPack records a pack written for a pushed commit and merges the
// newest packs while packFanIn of them have the same size.
func (l *layer) addPack(h plumbing.Hash) error {
	l.packs = append(l.packs, ownPack{hash: h})
	for n := len(l.packs); n >= packFanIn; n = len(l.packs) {
		tail := l.packs[n-packFanIn:]
		for _, p := range tail {
			if p.level != tail[0].level {
				return nil
			}
		}
		merged, err := l.mergePacks(tail)
		if err != nil {
			return err
		}
		l.packs = append(l.packs[:n-packFanIn], ownPack{hash: merged, level: tail[0].level + 1})
	}
	return nil
}

// packPath is where the cache keeps pack h's file of the given extension.
func (l *layer) packPath(h plumbing.Hash, ext string) string {
	return filepath.Join(l.src.cfg.CacheDir, "objects", "pack", "pack-"+h.String()+"."+ext)
}

// mergePacks writes the packs as one, indexed, removes them and returns
// the new pack's hash.
func (l *layer) mergePacks(packs []ownPack) (plumbing.Hash, error) {
	counts := make([]uint32, len(packs))
	var total uint32
	for i, p := range packs {
		n, err := packCount(l.packPath(p.hash, "pack"))
		if err != nil {
			return plumbing.ZeroHash, err
		}
		counts[i], total = n, total+n
	}

	dir := filepath.Join(l.src.cfg.CacheDir, "objects", "pack")
	tmp, err := os.CreateTemp(dir, "tmp_merge_")
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer os.Remove(tmp.Name()) // gone already once renamed
	defer tmp.Close()
	sum := sha1.New()
	out := io.MultiWriter(tmp, sum)
	header := make([]byte, 12)
	copy(header, "PACK")
	binary.BigEndian.PutUint32(header[4:], 2)
	binary.BigEndian.PutUint32(header[8:], total)
	if _, err := out.Write(header); err != nil {
		return plumbing.ZeroHash, err
	}

	entries := make([]idxfile.Entry, 0, total)
	offset := uint64(len(header))
	for _, p := range packs {
		n, err := l.appendEntries(out, p.hash, offset, &entries)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("merging pack %s: %w", p.hash, err)
		}
		offset += n
	}
	if len(entries) != int(total) {
		return plumbing.ZeroHash, fmt.Errorf("the packs' indexes list %d objects, their headers %d", len(entries), total)
	}
	var checksum plumbing.Hash
	copy(checksum[:], sum.Sum(nil))
	if _, err := tmp.Write(checksum[:]); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := tmp.Close(); err != nil {
		return plumbing.ZeroHash, err
	}

	// The pack first, then its index: an index names a complete pack.
	if err := os.Rename(tmp.Name(), l.packPath(checksum, "pack")); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := writeFileAtomic(l.packPath(checksum, "idx"), encodeIndex(entries, checksum)); err != nil {
		return plumbing.ZeroHash, err
	}
	for _, p := range packs {
		if p.hash == checksum {
			continue
		}
		if err := l.src.store.DeleteOldObjectPackAndIndex(p.hash, time.Time{}); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	l.src.store.Reindex()
	return checksum, nil
}

// appendEntries copies the entries of pack h (without its header and
// checksum) to out, where they start at offset, appends its objects' index
// entries there to idx, and returns how many bytes it copied.
func (l *layer) appendEntries(out io.Writer, h plumbing.Hash, offset uint64, idx *[]idxfile.Entry) (uint64, error) {
	entries, err := readIndex(l.packPath(h, "idx"))
	if err != nil {
		return 0, err
	}
	f, err := os.Open(l.packPath(h, "pack"))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	body := info.Size() - 12 - 20
	if body < 0 {
		return 0, errors.New("truncated pack")
	}
	if _, err := f.Seek(12, io.SeekStart); err != nil {
		return 0, err
	}
	if _, err := io.CopyN(out, f, body); err != nil {
		return 0, err
	}
	for _, e := range entries {
		if e.Offset < 12 || int64(e.Offset) >= 12+body {
			return 0, fmt.Errorf("object %s at offset %d is outside the pack", e.Hash, e.Offset)
		}
		*idx = append(*idx, idxfile.Entry{Hash: e.Hash, CRC32: e.CRC32, Offset: e.Offset - 12 + offset})
	}
	return uint64(body), nil
}

// encodeIndex is the version 2 pack index of a pack with the given
// entries and checksum: a fanout table of counts by the hashes' first
// byte, the hashes in order, their CRC-32s, their offsets (those past 2 GiB
// in a table of 64-bit ones), the pack's checksum and the index's own.
func encodeIndex(entries []idxfile.Entry, pack plumbing.Hash) []byte {
	sort.SliceStable(entries, func(i, j int) bool { return bytes.Compare(entries[i].Hash[:], entries[j].Hash[:]) < 0 })
	var b bytes.Buffer
	put := func(v uint32) { _ = binary.Write(&b, binary.BigEndian, v) }
	b.Write([]byte{0xff, 't', 'O', 'c'})
	put(2)
	var fanout [256]uint32
	for _, e := range entries {
		fanout[e.Hash[0]]++
	}
	var sum uint32
	for _, n := range fanout {
		sum += n
		put(sum)
	}
	for _, e := range entries {
		b.Write(e.Hash[:])
	}
	for _, e := range entries {
		put(e.CRC32)
	}
	var large []uint64
	for _, e := range entries {
		if e.Offset < 1<<31 {
			put(uint32(e.Offset))
			continue
		}
		put(1<<31 | uint32(len(large)))
		large = append(large, e.Offset)
	}
	for _, o := range large {
		_ = binary.Write(&b, binary.BigEndian, o)
	}
	b.Write(pack[:])
	own := sha1.Sum(b.Bytes())
	b.Write(own[:])
	return b.Bytes()
}

// packCount reads the object count from a pack's header.
func packCount(path string) (uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	header := make([]byte, 12)
	if _, err := io.ReadFull(f, header); err != nil {
		return 0, err
	}
	if string(header[:4]) != "PACK" || binary.BigEndian.Uint32(header[4:]) != 2 {
		return 0, fmt.Errorf("%s: not a version 2 pack", filepath.Base(path))
	}
	return binary.BigEndian.Uint32(header[8:]), nil
}

// readIndex lists the entries of a pack index file.
func readIndex(path string) ([]idxfile.Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	idx := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(f).Decode(idx); err != nil {
		return nil, err
	}
	iter, err := idx.Entries()
	if err != nil {
		return nil, err
	}
	defer iter.Close()
	var out []idxfile.Entry
	for {
		e, err := iter.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, *e)
	}
}

// writeFileAtomic writes data to path through a temporary file in the
// same directory.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "tmp_idx_")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
