package ingest_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"weak"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/gitsource/ingest"
	"github.com/gitfleet/gitfleet/internal/crdschema"
	"github.com/gitfleet/gitfleet/internal/testing/gittest"
	"github.com/gitfleet/gitfleet/render"
	"github.com/gitfleet/gitfleet/render/renderproc"
)

// A commit whose hub content is that of a commit that did not render gets
// that commit's error without rendering (a slow one would hold a render
// for the whole timeout again); a change of the content renders again, and
// a commit that changes nothing under the path renders as its parent did.
func TestRendererDoesNotRenderARefusedInputAgain(t *testing.T) {
	gittest.Require(t, "git")
	work := t.TempDir()
	commit := func(msg string, files map[string]string) plumbing.Hash {
		for name, data := range files {
			p := filepath.Join(work, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		gittest.Must(t, work, "add", "-A")
		gittest.Must(t, work, "commit", "-q", "-m", msg)
		return plumbing.NewHash(gittest.Must(t, work, "rev-parse", "HEAD"))
	}
	gittest.Must(t, work, "init", "-q", "-b", "main")
	broken := commit("broken", map[string]string{"fleet/a.yaml": "kind: [\n"})
	readme := commit("readme", map[string]string{"README.md": "# fleet\n"})
	fixed := commit("fixed", map[string]string{"fleet/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: n\n"})
	src, err := gitsource.Open(context.Background(), gitsource.Config{URL: work, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Fetch(context.Background()); err != nil {
		t.Fatal(err)
	}

	renders := 0
	refused := errors.New("a.yaml:1: refused")
	r := &ingest.Renderer{Path: "fleet", Func: func(ctx context.Context, fsys fs.FS, opts render.Options, lim renderproc.Limits) (*render.Content, error) {
		renders++
		if data, _ := fs.ReadFile(fsys, "fleet/a.yaml"); string(data) == "kind: [\n" {
			return nil, refused
		}
		return &render.Content{}, nil
	}}
	for _, step := range []struct {
		name    string
		commit  plumbing.Hash
		err     error
		renders int
	}{
		{name: "the broken commit renders and is refused", commit: broken, err: refused, renders: 1},
		{name: "a commit with its content is refused without a render", commit: readme, err: refused, renders: 1},
		{name: "the fix renders", commit: fixed, renders: 2},
	} {
		_, err := r.Render(context.Background(), src, step.commit)
		if !errors.Is(err, step.err) || renders != step.renders {
			t.Errorf("%s: err %v after %d renders; want %v after %d", step.name, err, renders, step.err, step.renders)
		}
	}
}

// The Renderer remembers the objects the last render's schemas accepted,
// and nothing else of it: the content itself (every rendered object, tens
// of MB for 10,000 clusters) is gone once its caller drops it.
func TestRendererKeepsOnlyTheAcceptedObjectsOfARender(t *testing.T) {
	gittest.Require(t, "git")
	work := t.TempDir()
	gittest.Must(t, work, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(work, "a.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Must(t, work, "add", "-A")
	gittest.Must(t, work, "commit", "-q", "-m", "a")
	head := plumbing.NewHash(gittest.Must(t, work, "rev-parse", "HEAD"))
	src, err := gitsource.Open(context.Background(), gitsource.Config{URL: work, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Fetch(context.Background()); err != nil {
		t.Fatal(err)
	}

	var given []crdschema.Accepted
	r := &ingest.Renderer{Func: func(ctx context.Context, fsys fs.FS, opts render.Options, lim renderproc.Limits) (*render.Content, error) {
		given = append(given, opts.Accepted)
		return &render.Content{Accepted: crdschema.Accepted{"a": {}}}, nil
	}}
	// renderOnce returns only a weak pointer: nothing of the test holds the
	// content once it returns.
	renderOnce := func() weak.Pointer[render.Content] {
		c, err := r.Render(context.Background(), src, head)
		if err != nil {
			t.Fatal(err)
		}
		return weak.Make(c)
	}
	first := renderOnce()
	runtime.GC()
	if first.Value() != nil {
		t.Error("the content of the last render is still alive after its caller dropped it")
	}
	renderOnce()
	if len(given) != 2 || given[0] != nil || len(given[1]) != 1 {
		t.Errorf("renders were given the accepted objects %v; want none, then the first render's", given)
	}
}
