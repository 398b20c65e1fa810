package gitsource

import (
	"bytes"
	"cmp"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
)

// writeDiskIndex writes, as git would, the reverse index of pack, whose index lists
// entries (sorted by hash, as encodeIndex leaves them) and whose objects
// are at byOffset (positions in entries, by offset), and opens both index
// files.
func writeDiskIndex(idxPath, revPath string, pack plumbing.Hash, entries []idxfile.Entry, byOffset []uint32) (*diskIndex, error) {
	if err := writeFileAtomic(revPath, encodeRev(byOffset, pack)); err != nil {
		return nil, err
	}
	d := &diskIndex{n: len(entries)}
	for i := 0; i < len(entries); i += diskSample {
		d.names = append(d.names, entries[i].Hash)
	}
	for i := 0; i < len(byOffset); i += diskSample {
		d.offsets = append(d.offsets, entries[byOffset[i]].Offset)
	}
	var err error
	if d.idx, err = os.Open(idxPath); err != nil {
		return nil, err
	}
	if d.rev, err = os.Open(revPath); err != nil {
		d.idx.Close()
		return nil, err
	}
	return d, nil
}

// encodeRev is git's reverse index of a pack: its magic, version 1, hash
// function 1 (SHA-1), the index positions of its objects by offset, the
// pack's checksum and its own.
func encodeRev(byOffset []uint32, pack plumbing.Hash) []byte {
	b := make([]byte, 0, 12+4*len(byOffset)+40)
	b = append(b, "RIDX"...)
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint32(b, 1)
	for _, p := range byOffset {
		b = binary.BigEndian.AppendUint32(b, p)
	}
	b = append(b, pack[:]...)
	own := sha1.Sum(b)
	return append(b, own[:]...)
}

// Eight packs of merged packs are merged as their indexes are read, one
// name, CRC and offset at a time: the merged pack's .idx and .rev are, byte
// for byte, what indexing its entries all at once writes (encodeIndex,
// encodeRev), for objects that are in it twice too (a file back to an
// earlier content is pushed again), git fsck finds the pack whole, git
// reads every object the same with the .rev as without, and every commit
// reads back.
func TestMergedPacksOfMergedPacksIndexAsIfIndexedAtOnce(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	cfg := f.config(t)
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var commits []plumbing.Hash
	for i := range packFanIn * packFanIn {
		res, err := s.Apply(ctx, Change{Message: "status", Writes: map[string][]byte{
			"status/runs/r.yaml": statusBlob(i),
			"status/flip.yaml":   fmt.Appendf(nil, "side: %d\n", i%2),
		}})
		if err != nil || !res.Created {
			t.Fatalf("Apply %d: %+v, %v", i, res, err)
		}
		commits = append(commits, res.Commit)
	}
	if len(s.store.own) != 1 || s.store.own[0].level != 2 {
		t.Fatalf("after %d pushed commits the store indexes %+v; want one pack of level 2", len(commits), s.store.own)
	}
	p := s.store.own[0]
	if _, ok := p.index.(*diskIndex); !ok {
		t.Fatalf("the merged pack is indexed by a %T; want its files on disk", p.index)
	}
	entries, err := readIndex(s.built.packPath(p.hash, "idx"))
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := p.index.Count(); int(n) != len(entries) || len(entries) < 3*len(commits) {
		t.Fatalf("the merged pack holds %d objects, its index %d; want 3 or more a commit", n, len(entries))
	}
	twice := 0
	for i := 1; i < len(entries); i++ {
		if entries[i].Hash == entries[i-1].Hash {
			twice++
		}
	}
	if twice < len(commits)/2 {
		t.Fatalf("%d objects are in the merged pack twice; want the flipped file's at every push", twice)
	}
	idx, _ := os.ReadFile(s.built.packPath(p.hash, "idx"))
	rev, _ := os.ReadFile(s.built.packPath(p.hash, "rev"))
	// At once, as mergePacks does: the entries in the order of the pack,
	// sorted by hash, stably.
	slices.SortFunc(entries, func(a, b idxfile.Entry) int { return cmp.Compare(a.Offset, b.Offset) })
	if want := encodeIndex(entries, p.hash); !bytes.Equal(idx, want) {
		t.Fatalf("the merged index (%d bytes) is not what indexing its entries at once writes (%d bytes)", len(idx), len(want))
	}
	if want := encodeRev(newPackIndex(entries).byOffset, p.hash); !bytes.Equal(rev, want) {
		t.Fatalf("the merged reverse index (%d bytes) is not what indexing its entries at once writes (%d bytes)", len(rev), len(want))
	}
	fsck(t, cfg.CacheDir)
	sameAsGitsOwnReverseIndex(t, cfg.CacheDir)
	readsStatus(t, s, commits)
	if goGitKnows(s, 0) {
		t.Fatal("go-git's indexes list a pushed pack after the merges")
	}
}

// A store that is replaced (the cache opened again, or cloned afresh)
// closes the index files of its merged packs rather than leaving them to
// the garbage collector.
func TestAReplacedStoreClosesItsPacksIndexFiles(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	s, err := Open(ctx, f.config(t))
	if err != nil {
		t.Fatal(err)
	}
	for i := range packFanIn {
		applyStatus(t, s, i)
	}
	d, ok := s.store.own[0].index.(*diskIndex)
	if !ok {
		t.Fatalf("the merged pack is indexed by a %T; want its files on disk", s.store.own[0].index)
	}
	if reason := s.useCache(); reason != "" {
		t.Fatal(reason)
	}
	for _, file := range []*os.File{d.idx, d.rev} {
		if _, err := file.Stat(); !errors.Is(err, os.ErrClosed) {
			t.Errorf("%s after the store was replaced: %v; want it closed", file.Name(), err)
		}
	}
}
