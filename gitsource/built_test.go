package gitsource

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// A pushed commit reaches the cache as a pack, with no loose object, that
// git fsck finds whole, and a Source reopened from the cache alone (the
// remote gone) reads it: a restart after a status commit needs no fetch.
func TestPushedCommitsReachTheCacheAsOnePackEach(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	cfg := f.config(t)
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	before := stats(t, s)
	applyN(t, s, 2)
	large := bytes.Repeat([]byte("cluster: ready\n"), 20000) // a size of several header bytes
	if _, err := s.Apply(ctx, Change{Message: "large", Writes: map[string][]byte{"status/large.yaml": large}}); err != nil {
		t.Fatal(err)
	}
	after := stats(t, s)
	if after.LooseObjects != before.LooseObjects || after.Packs != before.Packs+3 {
		t.Fatalf("cache before %+v, after three commits %+v; want a pack per commit and no loose object", before, after)
	}
	fsck(t, cfg.CacheDir)

	tip := f.remoteTip(t, "main")
	if err := os.Rename(f.bare, f.bare+".away"); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("reopen without the remote: %v", err)
	}
	if h, _ := s2.Head(ctx); h.Commit != tip {
		t.Fatalf("reopened head %s, want the pushed %s", h.Commit, tip)
	}
	if data, err := s2.ReadFile(ctx, tip, "status/runs/r.yaml"); err != nil || string(data) != "pass: 1\n" {
		t.Fatalf("ReadFile from the reopened cache: %q, %v", data, err)
	}
	if data, err := s2.ReadFile(ctx, tip, "status/large.yaml"); err != nil || !bytes.Equal(data, large) {
		t.Fatalf("ReadFile of the large file from the reopened cache: %d bytes, %v", len(data), err)
	}
}

// A pushed commit whose pack is too large to keep in memory, or cannot be
// written to the cache, is written loose; nothing is lost.
func TestAPushedCommitIsWrittenLooseWithoutItsPack(t *testing.T) {
	for name, fail := range map[string]func(t *testing.T){
		"pack too large to keep": func(t *testing.T) {
			n := maxKeptPack
			t.Cleanup(func() { maxKeptPack = n })
			maxKeptPack = 16 // bytes: every pack is larger
		},
		"pack cannot be written": func(t *testing.T) {
			c := createTemp
			t.Cleanup(func() { createTemp = c })
			createTemp = func(string, string) (*os.File, error) { return nil, errors.New("disk full") }
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			f := newFixture(t)
			s := f.open(t)
			before := stats(t, s)
			fail(t)
			applyN(t, s, 2)
			after := stats(t, s)
			// Each commit adds a blob per file, trees on their paths and itself.
			if after.Packs != before.Packs || after.LooseObjects < before.LooseObjects+2*5 {
				t.Fatalf("cache before %+v, after %+v; want the objects loose and no new pack", before, after)
			}
			tip := f.remoteTip(t, "main")
			if h, _ := s.Head(ctx); h.Commit != tip {
				t.Fatalf("cached tip %s, want the pushed %s", h.Commit, tip)
			}
			if data, err := s.ReadFile(ctx, tip, "status/runs/r.yaml"); err != nil || string(data) != "pass: 1\n" {
				t.Fatalf("ReadFile: %q, %v", data, err)
			}
		})
	}
}

// Packs of pushed commits are merged eight into one as they come, so the
// cache holds a handful of packs however many commits were pushed, and
// what they hold stays whole: git fsck finds nothing wrong, and a Source
// reopened from the cache reads every commit.
func TestPacksOfPushedCommitsAreMerged(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	cfg := f.config(t)
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	before := stats(t, s)
	const commits = 2*packFanIn*packFanIn + 3 // two merges of merges, and some left
	applyN(t, s, commits)
	after := stats(t, s)
	// Left: two packs of 64 commits, 3 of one.
	if got, want := after.Packs-before.Packs, 2+3; got != want || after.LooseObjects != before.LooseObjects {
		t.Fatalf("cache before %+v, after %d commits %+v; want %d more packs and no loose object", before, commits, after, want)
	}
	fsck(t, cfg.CacheDir)

	s2, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	tip := f.remoteTip(t, "main")
	hist, err := s2.FirstParentHistory(ctx, plumbing.ZeroHash, tip)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) < commits {
		t.Fatalf("history of the reopened cache has %d commits, want at least %d", len(hist), commits)
	}
	for i, c := range hist[len(hist)-commits:] { // oldest first
		want := fmt.Sprintf("pass: %d\n", i)
		if data, err := s2.ReadFile(ctx, c.Hash, "status/runs/r.yaml"); err != nil || string(data) != want {
			t.Fatalf("commit %s: status/runs/r.yaml = %q, %v; want %q", c.Hash, data, err, want)
		}
	}
}

// stats is the Source's cache on disk.
func stats(t *testing.T, s *Source) CacheStats {
	t.Helper()
	st, err := s.Stats(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// tipTrees lists commit and every tree it holds, read from the cache.
func tipTrees(t *testing.T, s *Source, commit plumbing.Hash) map[plumbing.Hash]bool {
	t.Helper()
	c, err := object.GetCommit(s.store, commit)
	if err != nil {
		t.Fatal(err)
	}
	out := map[plumbing.Hash]bool{commit: true}
	var walk func(h plumbing.Hash)
	walk = func(h plumbing.Hash) {
		tree, err := object.GetTree(s.store, h)
		if err != nil {
			t.Fatal(err)
		}
		out[h] = true
		for _, e := range tree.Entries {
			if e.Mode == filemode.Dir {
				walk(e.Hash)
			}
		}
	}
	walk(c.TreeHash)
	return out
}

// treeAt is the hash of commit's tree at dir ("" for the root).
func treeAt(t *testing.T, s *Source, commit plumbing.Hash, dir string) plumbing.Hash {
	t.Helper()
	c, err := object.GetCommit(s.store, commit)
	if err != nil {
		t.Fatal(err)
	}
	if dir == "" {
		return c.TreeHash
	}
	root, err := c.Tree()
	if err != nil {
		t.Fatal(err)
	}
	e, err := root.FindEntry(dir)
	if err != nil {
		t.Fatal(err)
	}
	return e.Hash
}

// fsck fails t unless git fsck finds the repository at dir whole.
func fsck(t *testing.T, dir string) {
	t.Helper()
	if out, err := gitErr(dir, "fsck", "--full", "--strict"); err != nil {
		t.Fatalf("git fsck of %s: %v\n%s", dir, err, out)
	}
}

// The trees kept in memory from the commit pushed last (the bases of the
// next commit's trees) are that commit's trees, however many commits are
// pushed: a tree this Source wrote that no later commit changed stays, one
// the tip no longer has is dropped. Commits built on bases read back from
// the cache are whole: git fsck finds nothing wrong and every file reads.
func TestTreesKeptFromPushedCommitsAreTheTipsTrees(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	cfg := f.config(t)
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	const commits = 60
	for i := range commits {
		writes := map[string][]byte{
			"status/runs/r.yaml":                      fmt.Appendf(nil, "pass: %d\n", i),
			fmt.Sprintf("status/passes/%04d.yaml", i): []byte("done\n"),
		}
		if i == 0 {
			writes["status/quiet/deep/file.yaml"] = []byte("written once\n")
		}
		res, err := s.Apply(ctx, Change{Message: "status", Writes: writes})
		if err != nil || !res.Created {
			t.Fatalf("Apply %d: %+v, %v", i, res, err)
		}
		tip := tipTrees(t, s, res.Commit)
		for h := range s.built.recent {
			if !tip[h] {
				t.Fatalf("after commit %d: %s is kept, not an object of the tip", i+1, h)
			}
		}
		// The trees this Source wrote, however long ago, are kept: the
		// root, status/, and status/quiet/deep/ of the first commit.
		for _, dir := range []string{"", "status", "status/quiet", "status/quiet/deep"} {
			if h := treeAt(t, s, res.Commit, dir); s.built.recent[h] == nil {
				t.Fatalf("after commit %d: the tree of %q is not kept", i+1, dir)
			}
		}
	}
	fsck(t, cfg.CacheDir)
	tip := f.remoteTip(t, "main")
	for i := range commits {
		if data, err := s.ReadFile(ctx, tip, fmt.Sprintf("status/passes/%04d.yaml", i)); err != nil || string(data) != "done\n" {
			t.Fatalf("ReadFile of pass %d: %q, %v", i, data, err)
		}
	}
}
