package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/internal/crdschema"
	"github.com/gitfleet/gitfleet/render"
	"github.com/gitfleet/gitfleet/render/renderproc"
)

// ErrReadTimeout is a commit that took longer than the render timeout to
// read (a render that does is a renderproc.ErrTimeout).
var ErrReadTimeout = errors.New("render timed out")

// slowRender is how long a render runs before the log says it is running.
const slowRender = time.Second

// Renderer renders the hub content of commits within limits, each in a
// process of its own (renderproc) that is killed at either limit: the CPU
// and memory are back at once. A commit whose input is that of a commit
// that did not render (the same files under Path, and for kustomize the
// same repository) gets that commit's error without rendering, and the
// fleet objects the CRD schemas accepted in the last render are not
// validated again (render.Options.Accepted). Safe for concurrent use.
type Renderer struct {
	// Path is the hub content folder inside the repository (default ".").
	Path string
	// MaxFileSize and MaxTotalSize are render's size limits (default
	// render's).
	MaxFileSize, MaxTotalSize int64
	// Limits bound each render (default renderproc's); Limits.Timeout
	// bounds the read of the commit too.
	Limits renderproc.Limits
	// Func renders (default renderproc.Render); tests replace it to watch
	// a render.
	Func func(context.Context, fs.FS, render.Options, renderproc.Limits) (*render.Content, error)
	Log  *slog.Logger

	refused  refusedInputs
	accepted atomic.Pointer[crdschema.Accepted]
}

// Render renders commit of src.
func (r *Renderer) Render(ctx context.Context, src *gitsource.Source, commit plumbing.Hash) (*render.Content, error) {
	log := r.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	timeout := r.Limits.Timeout
	if timeout <= 0 {
		timeout = renderproc.DefaultTimeout
	}
	readCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	fsys, err := CommitFS(readCtx, src, commit)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, fmt.Errorf("%w after %s reading the commit", ErrReadTimeout, timeout)
		}
		return nil, err
	}
	path := r.Path
	if path == "" {
		path = "."
	}
	opts := render.Options{Path: path, MaxFileSize: r.MaxFileSize, MaxTotalSize: r.MaxTotalSize}
	digest, err := renderproc.Digest(fsys, opts)
	if err != nil {
		return nil, err
	}
	if prev, ok := r.refused.get(digest); ok {
		log.Info("commit has the hub content of a commit that did not render; not rendered again",
			"commit", Short(commit), "as", Short(prev.commit), "err", prev.err.Error())
		return nil, prev.err
	}
	if known := r.accepted.Load(); known != nil {
		opts.Accepted = *known
	}
	log.Debug("render started", "commit", Short(commit))
	slow := time.AfterFunc(slowRender, func() {
		log.Info("render still running", "commit", Short(commit), "render_timeout", timeout.String())
	})
	renderFunc := r.Func
	if renderFunc == nil {
		renderFunc = renderproc.Render
	}
	c, err := renderFunc(ctx, fsys, opts, r.Limits)
	slow.Stop()
	var limit *renderproc.LimitError
	if errors.As(err, &limit) {
		log.Warn("render stopped at a limit; its process is gone", "commit", Short(commit), "limit", limitFlag(limit),
			"elapsed", limit.Elapsed.Round(time.Millisecond).String(), "pid", limit.PID)
	}
	if err != nil && ctx.Err() == nil {
		r.refused.put(digest, commit, err)
	}
	if err == nil && c.Accepted != nil {
		// A pointer to the map, not to c's field: &c.Accepted would keep
		// the whole content (every rendered object) alive until the next
		// render, for the Renderer's life in simulate (17 MB of 10,000
		// clusters' objects at the simulation's peak).
		accepted := c.Accepted
		r.accepted.Store(&accepted)
	}
	return c, err
}

// Short is the short form of a commit hash in logs.
func Short(h plumbing.Hash) string { return h.String()[:12] }

func limitFlag(e *renderproc.LimitError) string {
	if errors.Is(e, renderproc.ErrMemory) {
		return "--render-memory-limit " + renderproc.Bytes(e.Limits.Memory)
	}
	return "--render-timeout " + e.Limits.Timeout.String()
}

// maxRefusedInputs bounds refusedInputs; past it the oldest are forgotten
// (and so rendered again if they come back).
const maxRefusedInputs = 1000

// refusedInputs remembers the renders that failed by their input
// (renderproc.Digest): a commit with the same input would fail the same
// way, and a slow one would hold a render for the render timeout again.
type refusedInputs struct {
	mu    sync.Mutex
	byKey map[string]refusal
	order []string
}

// refusal is the first commit whose render failed with an input, and how.
type refusal struct {
	commit plumbing.Hash
	err    error
}

func (r *refusedInputs) get(digest string) (refusal, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, ok := r.byKey[digest]
	return f, ok
}

func (r *refusedInputs) put(digest string, commit plumbing.Hash, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byKey == nil {
		r.byKey = map[string]refusal{}
	}
	if _, ok := r.byKey[digest]; ok {
		return
	}
	r.byKey[digest] = refusal{commit, err}
	r.order = append(r.order, digest)
	if len(r.order) > maxRefusedInputs {
		delete(r.byKey, r.order[0])
		r.order = r.order[1:]
	}
}
