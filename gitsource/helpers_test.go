package gitsource

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/internal/testing/gittest"
)

// runGit runs the git CLI in dir and returns its trimmed stdout.
func runGit(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	return gittest.Must(tb, dir, args...)
}

func gitErr(dir string, args ...string) (string, error) { return gittest.Run(dir, args...) }

// fixture is a bare "remote" repository plus a working clone of it that
// plays the human.
type fixture struct {
	root string // temp dir holding both
	bare string // the remote, a bare repository
	work string // a human's clone
}

// newFixture creates a remote whose main branch has one commit with a
// workload and a README.
func newFixture(tb testing.TB) *fixture {
	tb.Helper()
	gittest.Require(tb, "git")
	root := tb.TempDir()
	f := &fixture{root: root, bare: filepath.Join(root, "remote.git"), work: filepath.Join(root, "work")}
	gittest.AwaitGC(tb, f.bare, f.work)
	runGit(tb, root, "init", "-q", "--bare", f.bare)
	runGit(tb, root, "clone", "-q", f.bare, f.work)
	f.commit(tb, "initial", map[string]string{
		"README.md":             "fleet\n",
		"workloads/app/cm.yaml": "kind: ConfigMap\n",
		"fleet/placement.yaml":  "kind: ClusterResourcePlacement\n",
	})
	runGit(tb, f.work, "push", "-q", "origin", "HEAD:main")
	return f
}

// commit writes files in the working clone and commits them (no push).
func (f *fixture) commit(tb testing.TB, msg string, files map[string]string) plumbing.Hash {
	tb.Helper()
	for p, content := range files {
		full := filepath.Join(f.work, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	runGit(tb, f.work, "add", "-A")
	runGit(tb, f.work, "commit", "-q", "-m", msg)
	return plumbing.NewHash(runGit(tb, f.work, "rev-parse", "HEAD"))
}

// push commits files and pushes them to main.
func (f *fixture) push(tb testing.TB, msg string, files map[string]string) plumbing.Hash {
	tb.Helper()
	h := f.commit(tb, msg, files)
	runGit(tb, f.work, "push", "-q", "origin", "HEAD:main")
	return h
}

// remoteTip returns the remote's tip of branch.
func (f *fixture) remoteTip(tb testing.TB, branch string) plumbing.Hash {
	tb.Helper()
	return plumbing.NewHash(runGit(tb, f.bare, "rev-parse", "refs/heads/"+branch))
}

// show returns a file's content on the remote.
func (f *fixture) show(tb testing.TB, rev, path string) string {
	tb.Helper()
	return runGit(tb, f.bare, "show", rev+":"+path)
}

// config returns a Config for the fixture's remote with a fresh cache.
func (f *fixture) config(tb testing.TB) Config {
	return Config{
		URL:         "file://" + f.bare,
		CacheDir:    filepath.Join(tb.TempDir(), "cache"),
		Logger:      testLogger(tb),
		PushBackoff: wait.Backoff{Duration: time.Millisecond, Factor: 2, Steps: 10, Cap: 20 * time.Millisecond},
	}
}

func (f *fixture) open(tb testing.TB) *Source {
	tb.Helper()
	s, err := Open(context.Background(), f.config(tb))
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	return s
}

// testLogger discards logs unless GITSOURCE_TEST_LOG is set.
func testLogger(tb testing.TB) *slog.Logger {
	if os.Getenv("GITSOURCE_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// ctxT is the context of one test: it ends with the test, or shortly before
// the test binary's -timeout (see internal/testing/await).
func ctxT(tb testing.TB) context.Context { return await.Context(tb) }

// newTextLogger logs everything, debug included, to w.
func newTextLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func mustEndpoint(tb testing.TB, raw string) *transport.Endpoint {
	tb.Helper()
	ep, err := transport.NewEndpoint(raw)
	if err != nil {
		tb.Fatal(err)
	}
	return ep
}
