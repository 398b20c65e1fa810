package gitsource

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// spyUploadPack puts a git-upload-pack first on PATH that counts its runs
// in a file and then runs the real one; it returns the counter.
func spyUploadPack(t *testing.T) func() int {
	t.Helper()
	real, err := exec.LookPath("git-upload-pack")
	if err != nil {
		t.Skip("git-upload-pack not on PATH")
	}
	bin, log := t.TempDir(), filepath.Join(t.TempDir(), "runs")
	script := "#!/bin/sh\necho run >> '" + log + "'\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git-upload-pack"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() int {
		data, _ := os.ReadFile(log)
		return strings.Count(string(data), "run")
	}
}

// A fetch from a local remote whose branch is where the cache has it (the
// fetch after gitfleet's own push) reads the remote's refs instead of
// starting git-upload-pack; a person's push, in a loose or a packed ref,
// is still fetched.
func TestFetchReadsALocalRemotesRefs(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	runs := spyUploadPack(t)
	s := f.open(t)
	fetch := func(what string, wantRuns int) Head {
		t.Helper()
		before := runs()
		h, err := s.Fetch(ctx)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := runs() - before; got != wantRuns {
			t.Errorf("%s: %d runs of git-upload-pack, want %d", what, got, wantRuns)
		}
		if tip := f.remoteTip(t, "main"); h.Commit != tip {
			t.Errorf("%s: fetched %s, the remote is at %s", what, h.Commit, tip)
		}
		return h
	}

	res, err := s.Apply(ctx, Change{Writes: map[string][]byte{"status/a": []byte("a")}})
	if err != nil {
		t.Fatal(err)
	}
	if h := fetch("after its own push", 0); h.Commit != res.Commit {
		t.Errorf("after its own push: fetched %s, pushed %s", h.Commit, res.Commit)
	}
	if err := humanPush(f.work, 1); err != nil {
		t.Fatal(err)
	}
	fetch("after a person's push", 1)
	runGit(t, f.bare, "pack-refs", "--all")
	fetch("nothing new, packed refs", 0)
	if err := humanPush(f.work, 2); err != nil {
		t.Fatal(err)
	}
	runGit(t, f.bare, "pack-refs", "--all")
	fetch("a person's push in packed refs", 1)
}

// With a separate status branch, both branches must be where the cache
// has them; a status branch that exists on neither side counts as in place.
func TestFetchReadsALocalRemotesRefsWithAStatusBranch(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	runs := spyUploadPack(t)
	cfg := f.config(t)
	cfg.StatusBranch = "status"
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	before := runs()
	if _, err := s.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if got := runs() - before; got != 0 {
		t.Errorf("no status branch anywhere: %d runs of git-upload-pack, want 0", got)
	}
	runGit(t, f.bare, "branch", "status", "main")
	before = runs()
	h, err := s.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := runs() - before; got != 1 || h.Status != f.remoteTip(t, "status") {
		t.Errorf("a status branch created on the remote: %d runs of git-upload-pack, status tip %s; want 1 and %s", got, h.Status, f.remoteTip(t, "status"))
	}
}
