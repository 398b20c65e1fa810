package gitsource

import (
	"errors"
	"slices"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// historyFixture builds, on main:
//
//	c0 ─ c1 ─ c2 ─────── m ─ c4
//	       \            /
//	        f1 ─── f2 ─
//
// and returns the hashes by name.
func historyFixture(t *testing.T) (*fixture, map[string]plumbing.Hash) {
	f := newFixture(t)
	h := map[string]plumbing.Hash{"c0": f.remoteTip(t, "main")}
	h["c1"] = f.commit(t, "c1", map[string]string{"workloads/a.yaml": "a: 1\n"})
	runGit(t, f.work, "checkout", "-q", "-b", "feature")
	h["f1"] = f.commit(t, "f1", map[string]string{"workloads/f.yaml": "f: 1\n"})
	h["f2"] = f.commit(t, "f2", map[string]string{"status/runs/r.yaml": "f: 2\n"})
	runGit(t, f.work, "checkout", "-q", "main")
	h["c2"] = f.commit(t, "c2", map[string]string{"approvals/x.yaml": "x\n"})
	runGit(t, f.work, "merge", "-q", "--no-ff", "-m", "merge feature", "feature")
	h["m"] = plumbing.NewHash(runGit(t, f.work, "rev-parse", "HEAD"))
	h["c4"] = f.commit(t, "c4", map[string]string{"status/runs/r.yaml": "c: 4\n"})
	runGit(t, f.work, "push", "-q", "origin", "main")
	return f, h
}

func TestFirstParentHistory(t *testing.T) {
	ctx := ctxT(t)
	f, h := historyFixture(t)
	s := f.open(t)

	names := func(from, to plumbing.Hash) ([]string, error) {
		commits, err := s.FirstParentHistory(ctx, from, to)
		if err != nil {
			return nil, err
		}
		byHash := map[plumbing.Hash]string{}
		for n, x := range h {
			byHash[x] = n
		}
		var out []string
		for _, c := range commits {
			out = append(out, byHash[c.Hash])
		}
		return out, nil
	}

	got, err := names(plumbing.ZeroHash, h["c4"])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"c0", "c1", "c2", "m", "c4"}; !slices.Equal(got, want) {
		t.Fatalf("from root = %v, want %v (merged side branch must not appear)", got, want)
	}
	if got, _ = names(h["c1"], h["c4"]); !slices.Equal(got, []string{"c2", "m", "c4"}) {
		t.Fatalf("after c1 = %v", got)
	}
	if got, _ = names(h["c4"], h["c4"]); len(got) != 0 {
		t.Fatalf("from == to = %v, want empty", got)
	}
	if _, err := names(h["f1"], h["c4"]); !errors.Is(err, ErrNotAncestor) {
		t.Fatalf("from a side-branch commit: %v, want ErrNotAncestor", err)
	}

	// Returned commits are usable, including lazily loaded trees.
	commits, _ := s.FirstParentHistory(ctx, h["m"], h["c4"])
	tree, err := commits[0].Tree()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tree.File("status/runs/r.yaml"); err != nil {
		t.Fatal(err)
	}
}

func TestChangedPaths(t *testing.T) {
	ctx := ctxT(t)
	f, h := historyFixture(t)
	s := f.open(t)

	for _, tc := range []struct {
		parent, commit string
		want           []string
		statusOnly     bool
	}{
		{"", "c0", []string{"README.md", "fleet/placement.yaml", "workloads/app/cm.yaml"}, false},
		{"c0", "c1", []string{"workloads/a.yaml"}, false},
		{"c1", "c2", []string{"approvals/x.yaml"}, true},
		// A merge against its first parent shows everything the merged
		// branch brought in.
		{"c2", "m", []string{"status/runs/r.yaml", "workloads/f.yaml"}, false},
		{"m", "c4", []string{"status/runs/r.yaml"}, true},
	} {
		parent := h[tc.parent] // zero for ""
		got, err := s.ChangedPaths(ctx, parent, h[tc.commit])
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("ChangedPaths(%s, %s) = %v, want %v", tc.parent, tc.commit, got, tc.want)
		}
		if only := OnlyUnder(got, DefaultAllowedPrefixes...); only != tc.statusOnly {
			t.Errorf("OnlyUnder(%v) = %v, want %v", got, only, tc.statusOnly)
		}
	}

	// A file replaced by a directory of the same name lists both sides.
	before := f.remoteTip(t, "main")
	runGit(t, f.work, "rm", "-q", "README.md")
	after := f.push(t, "dir", map[string]string{"README.md/inner.txt": "x\n"})
	if _, err := s.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := s.ChangedPaths(ctx, before, after)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"README.md", "README.md/inner.txt"}; !slices.Equal(got, want) {
		t.Fatalf("file→dir = %v, want %v", got, want)
	}
}

func TestOnlyUnder(t *testing.T) {
	for _, tc := range []struct {
		paths []string
		want  bool
	}{
		{nil, false},
		{[]string{"status/a"}, true},
		{[]string{"status/a", "approvals/b"}, true},
		{[]string{"status/a", "workloads/b"}, false},
		{[]string{"statusx/a"}, false},
		{[]string{"status"}, false},
	} {
		if got := OnlyUnder(tc.paths, "status/", "approvals"); got != tc.want {
			t.Errorf("OnlyUnder(%v) = %v, want %v", tc.paths, got, tc.want)
		}
	}
}
