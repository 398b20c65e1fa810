package gitsource

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// statusBlob is the blob of a status file applyStatus writes.
func statusBlob(i int) []byte {
	return []byte(fmt.Sprintf("pass: %d\n", i) + strings.Repeat("cluster: ready\n", 2000)) // larger than go-git reads whole
}

// applyStatus pushes status commit i and returns it.
func applyStatus(t *testing.T, s *Source, i int) plumbing.Hash {
	t.Helper()
	res, err := s.Apply(ctxT(t), Change{Message: "status", Writes: map[string][]byte{"status/runs/r.yaml": statusBlob(i)}})
	if err != nil || !res.Created {
		t.Fatalf("Apply %d: %+v, %v", i, res, err)
	}
	return res.Commit
}

// readsStatus fails t unless the commits read back (through s, and
// through the repository the cache is) the status files applyStatus wrote.
func readsStatus(t *testing.T, s *Source, commits []plumbing.Hash) {
	t.Helper()
	for i, c := range commits {
		if data, err := s.ReadFile(ctxT(t), c, "status/runs/r.yaml"); err != nil || !bytes.Equal(data, statusBlob(i)) {
			t.Fatalf("commit %d: status/runs/r.yaml = %.20q, %v", i, data, err)
		}
		h := plumbing.ComputeHash(plumbing.BlobObject, statusBlob(i))
		blob, err := s.repo.BlobObject(h)
		if err != nil {
			t.Fatalf("commit %d: the repository's blob %s: %v", i, h, err)
		}
		if size, err := s.store.EncodedObjectSize(h); err != nil || size != blob.Size || size != int64(len(statusBlob(i))) {
			t.Fatalf("commit %d: size of blob %s = %d, %v; the repository says %d", i, h, size, err, blob.Size)
		}
	}
}

// goGitKnows says whether go-git's own pack indexes (read at its first
// look-up or after a Reindex) list the status blob of commit i.
func goGitKnows(s *Source, i int) bool {
	return s.store.Storage.HasEncodedObject(plumbing.ComputeHash(plumbing.BlobObject, statusBlob(i))) == nil
}

// The packs of pushed commits are indexed by the store, so placing one
// costs its own index, not go-git reading every index of the cache again:
// what a pushed pack holds reads through the Source and the repository
// while go-git's indexes do not list it; after eight packs are merged into
// one (and the eight deleted) it still reads, from the merged pack; a
// Source opened afresh on the cache (empty memory) reads it all through
// go-git from disk; Maintain hands the packs to go-git, and a pack pushed
// after it is indexed by the store again.
func TestPushedPacksReadWithoutGoGitReadingTheCachesIndexesAgain(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	cfg := f.config(t)
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var commits []plumbing.Hash
	commits = append(commits, applyStatus(t, s, 0))
	if len(s.store.own) != 1 || s.store.own[0].level != 0 {
		t.Fatalf("after one pushed commit the store indexes %+v; want its pack", s.store.own)
	}
	readsStatus(t, s, commits)
	if goGitKnows(s, 0) {
		t.Fatal("go-git's indexes list the pushed pack: it read the cache's indexes again")
	}

	for i := 1; i < packFanIn; i++ {
		commits = append(commits, applyStatus(t, s, i))
	}
	if len(s.store.own) != 1 || s.store.own[0].level != 1 {
		t.Fatalf("after %d pushed commits the store indexes %+v; want one merged pack", packFanIn, s.store.own)
	}
	if _, ok := s.store.own[0].index.(*diskIndex); !ok {
		t.Fatalf("the merged pack is indexed by a %T; want its index files on disk", s.store.own[0].index)
	}
	sameAsGitsOwnReverseIndex(t, cfg.CacheDir)
	if st := stats(t, s); st.LooseObjects != 0 {
		t.Fatalf("cache %+v; want no loose object", st)
	}
	for i := range commits {
		h := plumbing.ComputeHash(plumbing.BlobObject, statusBlob(i))
		if p, _ := s.store.find(h); p == nil || p.hash != s.store.own[0].hash {
			t.Fatalf("blob of commit %d is not in the merged pack", i)
		}
	}
	readsStatus(t, s, commits)
	if goGitKnows(s, 0) {
		t.Fatal("go-git's indexes list a pushed pack after the merge")
	}
	fsck(t, cfg.CacheDir)

	fresh, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	readsStatus(t, fresh, commits)
	if len(fresh.store.own) != 0 || !goGitKnows(fresh, 0) {
		t.Fatalf("a Source opened afresh indexes %+v itself; want go-git to read the packs from disk", fresh.store.own)
	}

	for _, repack := range []bool{true, false} { // a Source's first Maintain repacks, the next merges
		r, err := s.Maintain(ctx)
		if err != nil || r.Repacked != repack {
			t.Fatalf("Maintain: %+v, %v; want repacked %v", r, err, repack)
		}
		if len(s.store.own) != 0 {
			t.Fatalf("after Maintain the store indexes %+v; want go-git to index every pack", s.store.own)
		}
		// Pushed before any read: go-git reads the indexes before its pack
		// is in place, not after.
		commits = append(commits, applyStatus(t, s, len(commits)))
		if len(s.store.own) != 1 || goGitKnows(s, len(commits)-1) || !goGitKnows(s, 0) {
			t.Fatalf("after Maintain and a pushed commit the store indexes %+v; want its pack, unknown to go-git, and go-git to index the others", s.store.own)
		}
		readsStatus(t, s, commits)
		fsck(t, cfg.CacheDir)
		if revs, _ := filepath.Glob(filepath.Join(cfg.CacheDir, "objects", "pack", "*.rev")); len(revs) != 0 {
			t.Fatalf("after Maintain the cache keeps reverse indexes %v of packs that are gone", revs)
		}
	}
}

// sameAsGitsOwnReverseIndex fails t unless git, which reads a pack's .rev
// to know where each object ends, says the same of every object with the
// cache's .rev files as with the reverse indexes it computes itself.
func sameAsGitsOwnReverseIndex(t *testing.T, cache string) {
	t.Helper()
	revs, err := filepath.Glob(filepath.Join(cache, "objects", "pack", "*.rev"))
	if err != nil || len(revs) == 0 {
		t.Fatalf("no reverse index in the cache: %v", err)
	}
	list := []string{"cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype) %(objectsize:disk) %(deltabase)"}
	withRevs, err := gitErr(cache, list...)
	if err != nil {
		t.Fatal(err)
	}
	bare := t.TempDir()
	if out, err := gitErr(cache, "clone", "-q", "--bare", "--no-local", cache, bare); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	copyDir(t, filepath.Join(cache, "objects"), filepath.Join(bare, "objects"), func(name string) bool { return filepath.Ext(name) != ".rev" })
	without, err := gitErr(bare, list...)
	if err != nil {
		t.Fatal(err)
	}
	if withRevs != without || strings.Count(withRevs, "\n") < 10 {
		t.Fatalf("git reads the cache's objects differently with its reverse indexes:\n%s\nthan without:\n%s", withRevs, without)
	}
}

// copyDir replaces dst with a copy of src's files that keep says to.
func copyDir(t *testing.T, src, dst string, keep func(string) bool) {
	t.Helper()
	if err := os.RemoveAll(dst); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !keep(d.Name()) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A merge of pushed packs that fails leaves the packs in place and hands
// them to go-git, which reads the cache's indexes again: nothing is lost,
// and later pushed packs are indexed by the store again.
func TestAFailedMergeHandsThePacksToGoGit(t *testing.T) {
	f := newFixture(t)
	s := f.open(t)
	var commits []plumbing.Hash
	for i := range packFanIn - 1 {
		commits = append(commits, applyStatus(t, s, i))
	}
	c := createTemp
	t.Cleanup(func() { createTemp = c })
	calls := 0
	createTemp = func(dir, pattern string) (*os.File, error) {
		if calls++; calls > 1 { // the merge's, after the pushed pack's
			return nil, errors.New("disk full")
		}
		return c(dir, pattern)
	}
	before := stats(t, s)
	commits = append(commits, applyStatus(t, s, len(commits)))
	createTemp = c
	if after := stats(t, s); after.Packs != before.Packs+1 || len(s.store.own) != 0 || !goGitKnows(s, 0) || !goGitKnows(s, packFanIn-1) {
		t.Fatalf("cache before %+v, after a failed merge %+v, the store indexing %+v; want the pushed pack added and every pack indexed by go-git",
			before, after, s.store.own)
	}
	readsStatus(t, s, commits)
	commits = append(commits, applyStatus(t, s, len(commits)))
	if len(s.store.own) != 1 || goGitKnows(s, len(commits)-1) {
		t.Fatalf("the store indexes %+v; want the pack pushed after the failed merge", s.store.own)
	}
	readsStatus(t, s, commits)
	fsck(t, s.GitDir())
}

// The repository's iterators read every pack of the cache with go-git's
// indexes; the store hands its packs over first.
func TestIteratingTheCacheListsThePushedPacks(t *testing.T) {
	f := newFixture(t)
	s := f.open(t)
	commit := applyStatus(t, s, 0)
	iter, err := s.repo.CommitObjects()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	if err := iter.ForEach(func(c *object.Commit) error {
		found = found || c.Hash == commit
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !found || len(s.store.own) != 0 {
		t.Fatalf("iterating the cache's commits found the pushed one: %v; the store indexes %+v, want none", found, s.store.own)
	}
}

// Readers of status files the pushed packs hold run while packs are
// placed and merged (run with -race): each reads a whole status file.
func TestReadsWhilePushedPacksArePlacedAndMerged(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	s := f.open(t)
	applyStatus(t, s, 0)
	done := make(chan struct{})
	errs := make(chan error, 4)
	var readers sync.WaitGroup
	for range 3 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				h, err := s.Head(ctx)
				if err != nil {
					errs <- err
					return
				}
				data, err := s.ReadFile(ctx, h.Commit, "status/runs/r.yaml")
				var n int
				if err == nil {
					_, err = fmt.Sscanf(string(data), "pass: %d\n", &n)
				}
				if err != nil || !bytes.Equal(data, statusBlob(n)) {
					errs <- fmt.Errorf("ReadFile of %s: %.20q, %w", h.Commit, data, err)
					return
				}
			}
		}()
	}
	for i := 1; i < 2*packFanIn+1; i++ {
		applyStatus(t, s, i)
	}
	close(done)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// An own pack's index, in memory or read from its files on disk, answers
// as go-git's index of the same index file does: for an object in it twice
// too (two merged packs both held it), for offsets past 2 GiB (the index's
// table of large offsets), and for what it does not hold.
func TestPackIndexAnswersAsGoGitsIndex(t *testing.T) {
	for _, kind := range []string{"memory", "disk"} {
		t.Run(kind, func(t *testing.T) {
			const n = 1000
			var entries []idxfile.Entry
			offset := uint64(12)
			for i := range n {
				h := plumbing.ComputeHash(plumbing.BlobObject, fmt.Appendf(nil, "%d", i%997)) // three twice
				entries = append(entries, idxfile.Entry{Hash: h, CRC32: uint32(i), Offset: offset})
				offset += uint64(10 + i%50)
				if i == n-100 {
					offset += 3 << 30
				}
			}
			pack := plumbing.NewHash("0123456789abcdef0123456789abcdef01234567")
			data := encodeIndex(entries, pack) // sorts entries by hash
			want := idxfile.NewMemoryIndex()
			if err := idxfile.NewDecoder(bytes.NewReader(data)).Decode(want); err != nil {
				t.Fatal(err)
			}
			var got idxfile.Index = newPackIndex(entries)
			if kind == "disk" {
				dir := t.TempDir()
				idxPath, revPath := filepath.Join(dir, "pack.idx"), filepath.Join(dir, "pack.rev")
				if err := os.WriteFile(idxPath, data, 0o644); err != nil {
					t.Fatal(err)
				}
				mem := got.(*packIndex)
				d, err := writeDiskIndex(idxPath, revPath, pack, mem.byHash, mem.byOffset)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(d.close)
				if len(d.names)+len(d.offsets) > 2*(n/diskSample+1) {
					t.Fatalf("%d samples in memory for %d objects", len(d.names)+len(d.offsets), n)
				}
				got = d
			}
			if c, _ := got.Count(); c != n {
				t.Fatalf("Count = %d, want %d", c, n)
			}
			for _, e := range entries {
				h, err := got.FindHash(int64(e.Offset))
				if wh, _ := want.FindHash(int64(e.Offset)); err != nil || h != wh || h != e.Hash {
					t.Fatalf("FindHash(%d) = %s, %v; go-git says %s, want %s", e.Offset, h, err, wh, e.Hash)
				}
				if ok, _ := got.Contains(e.Hash); !ok {
					t.Fatalf("Contains(%s) = false", e.Hash)
				}
				o, err := got.FindOffset(e.Hash)
				wo, _ := want.FindOffset(e.Hash)
				crc, _ := got.FindCRC32(e.Hash)
				wcrc, _ := want.FindCRC32(e.Hash)
				if slices.ContainsFunc(entries, func(x idxfile.Entry) bool { return x.Hash == e.Hash && x.Offset != e.Offset }) { // twice
					if h, _ := got.FindHash(o); err != nil || h != e.Hash {
						t.Fatalf("FindOffset(%s) = %d, %v: not an offset of it", e.Hash, o, err)
					}
					continue
				}
				if err != nil || o != wo || crc != wcrc {
					t.Fatalf("FindOffset, FindCRC32 (%s) = %d, %d, %v; go-git says %d, %d", e.Hash, o, crc, err, wo, wcrc)
				}
			}
			for _, o := range []int64{0, 13, int64(offset) + 1} {
				if _, err := got.FindHash(o); err != plumbing.ErrObjectNotFound {
					t.Fatalf("FindHash of offset %d, where no entry starts: %v, want not found", o, err)
				}
			}
			for i := range 200 {
				h := plumbing.ComputeHash(plumbing.BlobObject, fmt.Appendf(nil, "absent %d", i))
				if ok, err := got.Contains(h); ok || err != nil {
					t.Fatalf("Contains(%s) of an absent object = %v, %v", h, ok, err)
				}
				if _, err := got.FindOffset(h); err != plumbing.ErrObjectNotFound {
					t.Fatalf("FindOffset(%s) of an absent object: %v, want not found", h, err)
				}
			}
			for name, list := range map[string]func(idxfile.Index) (idxfile.EntryIter, error){
				"Entries":         idxfile.Index.Entries,
				"EntriesByOffset": idxfile.Index.EntriesByOffset,
			} {
				g, w := listEntries(t, got, list), listEntries(t, want, list)
				if name == "Entries" { // go-git lists an object's offsets in no set order
					for _, l := range [][]idxfile.Entry{g, w} {
						slices.SortFunc(l, func(a, b idxfile.Entry) int { return cmp.Compare(a.Offset, b.Offset) })
					}
				}
				if !slices.Equal(g, w) || len(g) != n {
					t.Fatalf("%s lists %d entries, go-git %d, or not the same", name, len(g), len(w))
				}
			}
		})
	}
}

func listEntries(t *testing.T, idx idxfile.Index, list func(idxfile.Index) (idxfile.EntryIter, error)) []idxfile.Entry {
	t.Helper()
	iter, err := list(idx)
	if err != nil {
		t.Fatal(err)
	}
	defer iter.Close()
	var out []idxfile.Entry
	for {
		e, err := iter.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, *e)
	}
}
