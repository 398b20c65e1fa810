package gitsource

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
)

// The pack a push sent becomes the cache's copy of the commit: written
// with the index its encoder recorded (packenc.go), with no loose object
// per blob, tree and commit and nothing inflated or hashed again.
//
// A pack per status commit would make a busy daemon read slower by the
// hour until Maintain (an object is looked up in every pack's index in
// turn) and leave a file each. Packs of pushed commits are therefore
// merged as they come, eight of a size into one of the next size, like a
// counter: the cache holds at most seven packs of each size, and a pushed
// byte is copied once per size, log8 of the commits since Maintain.
// Merging copies the packs' entries byte for byte and builds the index
// from theirs; nothing is inflated or hashed again. Git's pack format
// allows it: a pack's deltas point at objects of the same pack by relative
// offset or by hash, and both survive concatenation. An object in two packs (a status file back
// to an earlier content) is twice in the merged one, and its index lists
// it twice, as git's index-pack does for such a pack.
//
// The store indexes these packs itself (cachestore.go), so placing one
// costs its own index, not a reading of every index of the cache.

// packFanIn is how many packs of one size are merged into one.
const packFanIn = 8

// addPack writes pack to the cache and merges the newest packs while
// packFanIn of them have the same size. A failed merge leaves the packs as
// they are, for Maintain, and has go-git read the cache's indexes again.
func (l *layer) addPack(pack []byte, index []idxfile.Entry, checksum plumbing.Hash) error {
	store := l.src.store
	h, idx, err := l.writePack(pack, index, checksum)
	if err != nil {
		return err
	}
	store.addPack(h, 0, idx)
	for n := len(store.own); n >= packFanIn; n = len(store.own) {
		tail := store.own[n-packFanIn:]
		for _, p := range tail {
			if p.level != tail[0].level {
				return nil
			}
		}
		merged, idx, err := l.mergeOwn(tail)
		if err != nil {
			l.src.log.Warn("cannot merge the cache's packs; they stay until cache maintenance", "err", l.src.red.scrub(err.Error()))
			store.Reindex()
			return nil
		}
		level := tail[0].level + 1
		for i := range tail {
			tail[i].close()
		}
		store.own = store.own[:n-packFanIn]
		store.addPack(merged, level, idx)
	}
	return nil
}

// removeOrphanRevs deletes the reverse indexes of packs that are gone:
// go-git's repack deletes a pack and its index, not its reverse index.
func (l *layer) removeOrphanRevs() error {
	revs, err := filepath.Glob(filepath.Join(l.packDir(), "pack-*.rev"))
	if err != nil {
		return err
	}
	for _, rev := range revs {
		if _, err := os.Stat(strings.TrimSuffix(rev, ".rev") + ".pack"); errors.Is(err, fs.ErrNotExist) {
			if err := os.Remove(rev); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// writePack writes pack, whose objects are at the index's entries, to the
// cache; it returns its hash and index.
func (l *layer) writePack(pack []byte, index []idxfile.Entry, checksum plumbing.Hash) (plumbing.Hash, *packIndex, error) {
	if len(pack) < 12+20 || !bytes.Equal(pack[len(pack)-20:], checksum[:]) {
		return plumbing.ZeroHash, nil, errors.New("truncated pack")
	}
	if n := binary.BigEndian.Uint32(pack[8:12]); int(n) != len(index) {
		return plumbing.ZeroHash, nil, fmt.Errorf("the pack holds %d objects, its index lists %d", n, len(index))
	}
	tmp, err := createTemp(l.packDir(), "tmp_pack_")
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	defer os.Remove(tmp.Name()) // gone already once in place
	_, err = tmp.Write(pack)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	idx, err := l.place(tmp.Name(), checksum, index)
	return checksum, idx, err
}

// packWriter writes a pack to a temporary file of the cache's pack
// directory and collects its index.
type packWriter struct {
	tmp     *os.File
	sum     hash.Hash
	out     *bufio.Writer
	offset  uint64
	entries []idxfile.Entry
}

// createTemp creates a pack's temporary file; tests make it fail.
var createTemp = os.CreateTemp

func (l *layer) newPackWriter(count uint32) (*packWriter, error) {
	tmp, err := createTemp(l.packDir(), "tmp_pack_")
	if err != nil {
		return nil, err
	}
	w := &packWriter{tmp: tmp, sum: sha1.New()}
	w.out = bufio.NewWriterSize(io.MultiWriter(tmp, w.sum), 64<<10)
	header := make([]byte, 12)
	copy(header, "PACK")
	binary.BigEndian.PutUint32(header[4:], 2)
	binary.BigEndian.PutUint32(header[8:], count)
	_, err = w.out.Write(header)
	w.offset = uint64(len(header))
	return w, err
}

// close removes the temporary file unless install renamed it.
func (w *packWriter) close() {
	w.tmp.Close()
	os.Remove(w.tmp.Name())
}

// install finishes the pack and puts it and its index in place.
func (l *layer) install(w *packWriter) (plumbing.Hash, *packIndex, error) {
	checksum, err := w.finish()
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	idx, err := l.place(w.tmp.Name(), checksum, w.entries)
	return checksum, idx, err
}

// finish writes the pack's checksum and closes its file.
func (w *packWriter) finish() (plumbing.Hash, error) {
	if err := w.out.Flush(); err != nil {
		return plumbing.ZeroHash, err
	}
	var checksum plumbing.Hash
	copy(checksum[:], w.sum.Sum(nil))
	if _, err := w.tmp.Write(checksum[:]); err != nil {
		return plumbing.ZeroHash, err
	}
	return checksum, w.tmp.Close()
}

// place puts a pack's temporary file and its index in place, the pack
// first: an index names a complete pack. It returns the index, for the
// store to index the pack (addPack); go-git reads the indexes of the
// packs already in place first (loadIndexes).
func (l *layer) place(tmp string, checksum plumbing.Hash, entries []idxfile.Entry) (*packIndex, error) {
	if err := l.src.store.loadIndexes(); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, l.packPath(checksum, "pack")); err != nil {
		return nil, err
	}
	if err := writeFileAtomic(l.packPath(checksum, "idx"), encodeIndex(entries, checksum)); err != nil {
		return nil, err
	}
	return newPackIndex(entries), nil
}

// mergePacks writes the packs as one, removes them and returns the new
// pack's hash and index.
func (l *layer) mergePacks(packs []plumbing.Hash) (plumbing.Hash, *packIndex, error) {
	var total uint32
	for _, h := range packs {
		n, err := packCount(l.packPath(h, "pack"))
		if err != nil {
			return plumbing.ZeroHash, nil, err
		}
		total += n
	}
	w, err := l.newPackWriter(total)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	defer w.close()
	w.entries = make([]idxfile.Entry, 0, total)
	for _, h := range packs {
		if err := l.appendEntries(w, h); err != nil {
			return plumbing.ZeroHash, nil, fmt.Errorf("merging pack %s: %w", h, err)
		}
	}
	if len(w.entries) != int(total) {
		return plumbing.ZeroHash, nil, fmt.Errorf("the packs' indexes list %d objects, their headers %d", len(w.entries), total)
	}
	merged, idx, err := l.install(w)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	for _, h := range packs {
		if h == merged {
			continue
		}
		if err := l.deletePack(h); err != nil {
			return plumbing.ZeroHash, nil, err
		}
	}
	return merged, idx, nil
}

// mergeAll merges every pack of the cache, pushed or fetched, into one,
// and has go-git read the one index. Fetched packs are whole too: go-git
// asks for no thin pack.
func (l *layer) mergeAll() error {
	hashes, err := l.src.store.ObjectPacks()
	if err != nil {
		return err
	}
	if len(hashes) > 1 {
		_, _, err = l.mergePacks(hashes)
	}
	l.src.store.Reindex()
	if err != nil {
		return l.src.wrap("maintain", fmt.Errorf("merging packs: %w", err))
	}
	return nil
}

// appendEntries copies the entries of pack h (without its header and
// checksum) to w and adds their index entries, shifted to where they land.
func (l *layer) appendEntries(w *packWriter, h plumbing.Hash) error {
	entries, err := readIndex(l.packPath(h, "idx"))
	if err != nil {
		return err
	}
	start := w.offset
	body, err := l.appendBody(w, h)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Offset < 12 || int64(e.Offset) >= 12+body {
			return fmt.Errorf("object %s at offset %d is outside the pack", e.Hash, e.Offset)
		}
		w.entries = append(w.entries, idxfile.Entry{Hash: e.Hash, CRC32: e.CRC32, Offset: e.Offset - 12 + start})
	}
	return nil
}

// appendBody copies the entries of pack h (without its header and
// checksum) to w and returns their size.
func (l *layer) appendBody(w *packWriter, h plumbing.Hash) (int64, error) {
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
	if _, err := io.CopyN(w.out, f, body); err != nil {
		return 0, err
	}
	w.offset += uint64(body)
	return body, nil
}

// deletePack deletes pack h, its index and its reverse index.
func (l *layer) deletePack(h plumbing.Hash) error {
	if err := l.src.store.DeleteOldObjectPackAndIndex(h, time.Time{}); err != nil {
		return err
	}
	if err := os.Remove(l.packPath(h, "rev")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (l *layer) packDir() string { return filepath.Join(l.src.cfg.CacheDir, "objects", "pack") }

// packPath is where the cache keeps pack h's file of the given extension.
func (l *layer) packPath(h plumbing.Hash, ext string) string {
	return filepath.Join(l.packDir(), "pack-"+h.String()+"."+ext)
}

// encodeIndex is the version 2 pack index of a pack with the given
// entries (which it sorts by hash) and checksum: a fanout table of counts by the hashes' first
// byte, the hashes in order, their CRC-32s, their offsets (those past 2 GiB
// in a table of 64-bit ones), the pack's checksum and the index's own.
// go-git's index writer lists an object only once, an index git refuses
// for a pack that holds it twice.
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
	return indexEntries(idx)
}

// indexEntries lists the entries of an index.
func indexEntries(idx idxfile.Index) ([]idxfile.Entry, error) {
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
