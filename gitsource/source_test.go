package gitsource

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

func TestOpenAndFetch(t *testing.T) {
	for _, tc := range []struct {
		name string
		url  func(f *fixture) string
	}{
		{"file URL", func(f *fixture) string { return "file://" + f.bare }},
		{"plain path", func(f *fixture) string { return f.bare }},
		{"relative path", func(f *fixture) string {
			wd, _ := os.Getwd()
			rel, err := filepath.Rel(wd, f.bare)
			if err != nil {
				t.Fatal(err)
			}
			return rel
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			f := newFixture(t)
			cfg := f.config(t)
			cfg.URL = tc.url(f)
			s, err := Open(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if p, ok := s.LocalPath(); !ok || p != f.bare {
				t.Errorf("LocalPath = %q, %v; want %q", p, ok, f.bare)
			}
			head, err := s.Head(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want := f.remoteTip(t, "main"); head.Commit != want || head.Status != want {
				t.Fatalf("after Open head = %+v, want %s for both", head, want)
			}

			// Nothing new: same head.
			again, err := s.Fetch(ctx)
			if err != nil || again != head {
				t.Fatalf("Fetch without change = %+v, %v; want %+v", again, err, head)
			}

			// New commits arrive.
			f.push(t, "second", map[string]string{"workloads/app/cm.yaml": "kind: ConfigMap\ndata: {}\n"})
			want := f.push(t, "third", map[string]string{"workloads/app/deploy.yaml": "kind: Deployment\n"})
			head, err = s.Fetch(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if head.Commit != want {
				t.Fatalf("Fetch = %s, want %s", head.Commit, want)
			}
			got, err := s.ReadFile(ctx, head.Commit, "workloads/app/deploy.yaml")
			if err != nil || string(got) != "kind: Deployment\n" {
				t.Fatalf("ReadFile = %q, %v", got, err)
			}
		})
	}
}

func TestOpenMissingBranch(t *testing.T) {
	f := newFixture(t)
	cfg := f.config(t)
	cfg.Branch = "nope"
	_, err := Open(ctxT(t), cfg)
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("Open on a missing branch: %v; want ErrNotFound naming the branch", err)
	}
}

func TestOpenRejectsBadConfig(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no URL":     {CacheDir: t.TempDir()},
		"no cache":   {URL: "/tmp/x"},
		"bad scheme": {URL: "ftp://host/repo", CacheDir: t.TempDir()},
		"bad branch": {URL: "/tmp/x", CacheDir: t.TempDir(), Branch: "a..b"},
		"bad prefix": {URL: "/tmp/x", CacheDir: t.TempDir(), AllowedPrefixes: []string{"../etc"}},
	} {
		if _, err := Open(ctxT(t), cfg); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}

func TestReopenCache(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	cfg := f.config(t)
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := s.Head(ctx)

	t.Run("healthy cache is reused without the remote", func(t *testing.T) {
		away := f.bare + ".away"
		if err := os.Rename(f.bare, away); err != nil {
			t.Fatal(err)
		}
		defer os.Rename(away, f.bare)
		s2, err := Open(ctx, cfg)
		if err != nil {
			t.Fatalf("reopen with unreachable remote: %v", err)
		}
		if h, _ := s2.Head(ctx); h != head {
			t.Fatalf("reopened head %+v, want %+v", h, head)
		}
		if _, err := s2.Fetch(ctx); err == nil {
			t.Fatal("Fetch from a vanished remote succeeded")
		}
	})

	t.Run("cache of another URL is re-cloned", func(t *testing.T) {
		other := newFixture(t)
		cfg2 := cfg
		cfg2.URL = other.bare
		s2, err := Open(ctx, cfg2)
		if err != nil {
			t.Fatal(err)
		}
		if h, _ := s2.Head(ctx); h.Commit != other.remoteTip(t, "main") {
			t.Fatalf("head %s is not the other remote's tip", h.Commit)
		}
	})

	t.Run("corrupt cache is re-cloned", func(t *testing.T) {
		cfg3 := cfg
		cfg3.CacheDir = filepath.Join(t.TempDir(), "cache")
		if _, err := Open(ctx, cfg3); err != nil {
			t.Fatal(err)
		}
		// Destroy every object.
		if err := os.RemoveAll(filepath.Join(cfg3.CacheDir, "objects")); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(cfg3.CacheDir, "objects"), 0o700); err != nil {
			t.Fatal(err)
		}
		s3, err := Open(ctx, cfg3)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := s3.Head(ctx)
		if _, err := s3.ReadFile(ctx, h.Commit, "README.md"); err != nil {
			t.Fatalf("re-cloned cache unreadable: %v", err)
		}
	})

	t.Run("foreign directory is refused, not wiped", func(t *testing.T) {
		dir := t.TempDir()
		precious := filepath.Join(dir, "precious.txt")
		if err := os.WriteFile(precious, []byte("keep"), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg4 := cfg
		cfg4.CacheDir = dir
		if _, err := Open(ctx, cfg4); !errors.Is(err, ErrInvalid) {
			t.Fatalf("Open on a foreign dir: %v, want ErrInvalid", err)
		}
		if _, err := os.Stat(precious); err != nil {
			t.Fatalf("foreign file was touched: %v", err)
		}
	})
}

func TestReadLimits(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	big := strings.Repeat("x", 2048)
	tip := f.push(t, "big", map[string]string{"workloads/big.yaml": big, "workloads/app/svc.yaml": "kind: Service\n"})
	runGit(t, f.work, "rm", "-q", "README.md")
	if err := os.Symlink("/etc/passwd", filepath.Join(f.work, "workloads", "link.yaml")); err != nil {
		t.Fatal(err)
	}
	tip = f.push(t, "symlink", nil)

	cfg := f.config(t)
	cfg.MaxFileSize = 1024
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}

	_, err = s.ReadFile(ctx, tip, "workloads/big.yaml")
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "workloads/big.yaml") {
		t.Fatalf("ReadFile of a big file: %v; want ErrTooLarge naming the path", err)
	}
	if _, err := s.ReadFile(ctx, tip, "README.md"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ReadFile of a deleted file: %v; want ErrNotFound", err)
	}
	if _, err := s.ReadFile(ctx, tip, "workloads/link.yaml"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ReadFile of a symlink: %v; want ErrNotFound", err)
	}
	if _, err := s.ReadTree(ctx, tip, "workloads"); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("ReadTree over a big file: %v; want ErrTooLarge", err)
	}
	files, err := s.ReadTree(ctx, tip, "workloads/app")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || string(files["workloads/app/svc.yaml"]) != "kind: Service\n" {
		t.Fatalf("ReadTree(workloads/app) = %v", keys(files))
	}
	if files, err := s.ReadTreeExcept(ctx, tip, "", "workloads"); err != nil || len(files) == 0 {
		t.Fatalf("ReadTreeExcept without the folder of the big file: %v, %v", keys(files), err)
	}

	// gitfleet's own files are never refused for their size: it writes
	// and reads back status files that follow the fleet, not the limit.
	own := strings.Repeat("x", 4096)
	res, err := s.Apply(ctx, Change{Message: "big status", Writes: map[string][]byte{"status/placements/p.yaml": []byte(own)}})
	if err != nil {
		t.Fatalf("Apply of a status file over MaxFileSize: %v", err)
	}
	if files, err := s.ReadOwnTree(ctx, res.Commit, "status"); err != nil || string(files["status/placements/p.yaml"]) != own {
		t.Fatalf("ReadOwnTree of a status file over MaxFileSize: %d bytes, %v", len(files["status/placements/p.yaml"]), err)
	}

	// The go-git tree handed out enforces the same bound.
	tree, err := s.Tree(ctx, tip)
	if err != nil {
		t.Fatal(err)
	}
	file, err := tree.File("workloads/app/cm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := file.Contents(); err != nil || c != "kind: ConfigMap\n" {
		t.Fatalf("Contents = %q, %v", c, err)
	}
	if _, err := tree.File("workloads/big.yaml"); err == nil {
		t.Fatal("tree.File of an oversize blob succeeded")
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestCommitNotFound(t *testing.T) {
	f := newFixture(t)
	s := f.open(t)
	if _, err := s.Commit(ctxT(t), plumbing.NewHash("0123456789012345678901234567890123456789")); err == nil {
		t.Fatal("Commit of an unknown hash succeeded")
	}
}

func TestContextCancelled(t *testing.T) {
	f := newFixture(t)
	s := f.open(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Fetch(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Fetch with a cancelled context: %v", err)
	}
}

// A server that accepts connections and never answers cannot hang Fetch.
func TestFetchTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // hold it open, say nothing
		}
	}()
	cfg := Config{
		URL:      "http://" + l.Addr().String() + "/fleet.git",
		CacheDir: filepath.Join(t.TempDir(), "cache"),
		Timeout:  200 * time.Millisecond,
		Logger:   testLogger(t),
	}
	// Without the timeout, Open would wait forever: the test binary's
	// -timeout, not a wall-clock bound here, catches that.
	_, err = Open(context.Background(), cfg)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Open against a silent server: %v, want DeadlineExceeded", err)
	}
}

// A gitfleet killed while go-git wrote a reference leaves an empty ref file
// in its cache; the next start must re-clone instead of failing every fetch.
func TestOpenReclonesACacheWithAnEmptyRefFile(t *testing.T) {
	f := newFixture(t)
	cfg := f.config(t)
	ctx := ctxT(t)
	if _, err := Open(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	ref := filepath.Join(cfg.CacheDir, "refs", "remotes", "origin", "half-written")
	if err := os.MkdirAll(filepath.Dir(ref), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ref, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("Open with a half-written ref: %v", err)
	}
	head, err := src.Fetch(ctx)
	if err != nil {
		t.Fatalf("Fetch after re-opening: %v", err)
	}
	if want := f.remoteTip(t, "main"); head.Commit != want {
		t.Errorf("tip %s after re-clone, want %s", head.Commit, want)
	}
}

// A cache deleted under a running gitfleet (a person, a tmp cleaner, a new
// volume) is cloned again by the next fetch, which then sees the remote as
// it is.
func TestFetchReclonesADeletedCache(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	cfg := f.config(t)
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(cfg.CacheDir); err != nil {
		t.Fatal(err)
	}
	want := f.push(t, "after the cache went", map[string]string{"workloads/new.yaml": "new\n"})
	head, err := s.Fetch(ctx)
	if err != nil {
		t.Fatalf("Fetch after the cache was deleted: %v", err)
	}
	if head.Commit != want {
		t.Fatalf("fetched %s, want %s", head.Commit, want)
	}
	if data, err := s.ReadFile(ctx, head.Commit, "workloads/new.yaml"); err != nil || string(data) != "new\n" {
		t.Fatalf("ReadFile after the re-clone: %q, %v", data, err)
	}
}
