package gitops

import (
	"context"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitfleet/gitfleet/render"
)

// renders is the render running beside the loop: job and inLine are the
// sync's (under Daemon.mu); shown is the job as /readyz and the source
// status show it, under its own lock (they do not wait for a sync).
type renders struct {
	// job is the render running beside the loop, nil when none.
	job *renderJob
	// inLine makes a sync render in line (Open).
	inLine bool
	// wake is signalled when a job ends, for the loop to apply it.
	wake chan struct{}

	mu    sync.Mutex
	shown *renderJob
}

// renderJob is the render of one commit, running beside the Git loop so
// that a slow one holds nothing else: approvals, stops and run progress
// from later commits are taken meanwhile, and the render's result is
// applied, in commit order, when it comes. One runs at a time: commits
// are applied in order, so the next one waits for this one anyway.
type renderJob struct {
	commit  plumbing.Hash
	started time.Time
	cancel  context.CancelFunc
	done    chan struct{}
	// Set before done is closed.
	content *render.Content
	took    time.Duration
	err     error
}

// renderBeside renders commit c: in line when Open waits for renders,
// else by a job beside the loop. running says the job has not ended yet;
// the loop is woken (renders.wake) when it does, and the next sync takes its
// result. Called with d.mu held.
func (d *Daemon) renderBeside(ctx context.Context, c *object.Commit) (content *render.Content, took time.Duration, running bool, err error) {
	if j := d.renders.job; j != nil {
		if j.commit != c.Hash {
			// The branch was rewritten under the render: its commit is
			// no longer next.
			d.log.Info("render stopped: its commit is no longer on the tracked branch", "commit", short(j.commit))
			j.cancel()
			d.renders.set(nil)
		} else {
			select {
			case <-j.done:
				d.renders.set(nil)
				return j.content, j.took, false, j.err
			default:
				return nil, 0, true, nil
			}
		}
	}
	if d.renders.inLine {
		start := d.clock.Now()
		content, err := d.ingest.Render(ctx, d.src, c.Hash)
		return content, d.clock.Now().Sub(start), false, err
	}
	jobCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	j := &renderJob{commit: c.Hash, started: d.clock.Now(), cancel: cancel, done: make(chan struct{})}
	d.renders.set(j)
	d.log.Debug("render started", "commit", short(c.Hash))
	go func() {
		defer cancel()
		j.content, j.err = d.ingest.Render(jobCtx, d.src, c.Hash)
		j.took = d.clock.Now().Sub(j.started)
		if j.took >= time.Second {
			d.log.Info("render ended", "commit", short(c.Hash), "took", j.took.Round(time.Millisecond).String(), "rendered", j.err == nil)
		}
		close(j.done)
		select {
		case d.renders.wake <- struct{}{}:
		default:
		}
	}()
	// A render that is quick is applied in this sync: the loop only moves
	// on without it when it takes longer than a moment.
	select {
	case <-j.done:
		d.renders.set(nil)
		return j.content, j.took, false, j.err
	case <-time.After(d.cfg.RenderPatience):
	case <-ctx.Done():
		return nil, 0, false, ctx.Err()
	}
	d.log.Info("rendering a commit beside the loop; approvals, stops and run progress go on meanwhile", "commit", short(c.Hash))
	return nil, 0, true, nil
}

// DefaultRenderPatience is how long a sync waits for a render before it
// goes on without it (Config.RenderPatience). Most renders take
// milliseconds: they are applied in the sync that started them, so the
// rollout of a commit does not wait for another fetch.
const DefaultRenderPatience = 500 * time.Millisecond

// Rendering says which commit is being rendered beside the loop and since
// when, for /readyz and the source status; ok is false when none is.
func (d *Daemon) Rendering() (commit plumbing.Hash, since time.Time, ok bool) {
	d.renders.mu.Lock()
	defer d.renders.mu.Unlock()
	if d.renders.shown == nil {
		return plumbing.ZeroHash, time.Time{}, false
	}
	return d.renders.shown.commit, d.renders.shown.started, true
}

// stopRender stops the render running beside the loop, for shutdown.
func (d *Daemon) stopRender() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.renders.job != nil {
		d.renders.job.cancel()
		d.renders.set(nil)
	}
}

// set sets the running job, under Daemon.mu, and what Rendering shows.
func (r *renders) set(j *renderJob) {
	r.job = j
	r.mu.Lock()
	r.shown = j
	r.mu.Unlock()
}
