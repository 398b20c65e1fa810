package gitops

import (
	"context"
	"errors"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/render"
)

// sync brings the hub in line with head, the tracked branch as fetched, in
// named steps under mu:
//
//  1. newCommits: the first-parent commits since the last processed one;
//  2. ingestCommits: each that changed hub content rendered and its
//     resource snapshots recorded, in order (a slow render goes on beside
//     the loop, render_job.go);
//  3. applyDesired: the tip's fleet objects admitted into the hub;
//  4. takeApprovals: the approvals people merged (approvals.go);
//  5. advance: the commit processed up to;
//  6. commitPass: the hub's pass committed and the status tree flushed
//     (pushed by statusPush, push.go).
//
// A sync is a pass of the hub like the engine's (groupcommit.go): it
// writes the hub while no group commits, and its commit joins the passes'
// group.
func (d *Daemon) sync(ctx context.Context, head gitsource.Head) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.group.begin()
	pass, err := d.syncSteps(ctx, head)
	if err == nil && d.applyRollbackNotes(ctx) {
		pass = true
	}
	if cerr := d.group.end(ctx, pass); err == nil {
		err = cerr
	}
	if err != nil || !pass {
		return err
	}
	return d.commitPass(ctx)
}

// syncSteps are the steps of a sync up to its commit, which pass says
// is due.
func (d *Daemon) syncSteps(ctx context.Context, head gitsource.Head) (pass bool, err error) {
	commits, news, err := d.newCommits(ctx, head.Commit)
	if err != nil || news == noNews {
		return false, err
	}
	if news == ownCommits {
		// They hold what the hub wrote: nothing to read.
		d.advance(ctx, head.Commit, ingested{})
		return false, nil
	}
	in, err := d.ingestCommits(ctx, commits)
	if err != nil {
		return false, err
	}
	if err := d.applyDesired(ctx, head.Commit, in.content); err != nil {
		return false, err
	}
	if err := d.takeApprovals(ctx, head.Commit); err != nil {
		return false, err
	}
	d.advance(ctx, head.Commit, in)
	return true, nil
}

// news is what newCommits found.
type news int

const (
	// noNews: the tip is the commit processed last.
	noNews news = iota
	// ownCommits: the branch moved by gitfleet's own status commits alone
	// (the fetch after its own push).
	ownCommits
	// commitsToRead: the branch moved by other commits.
	commitsToRead
)

// newCommits is the first step of a sync: the first-parent commits of the
// tracked branch after the one processed last, up to tip, oldest first.
// After a rewrite of the branch they are its whole history (known
// snapshots are reused where the content matches).
func (d *Daemon) newCommits(ctx context.Context, tip plumbing.Hash) ([]*object.Commit, news, error) {
	if tip == d.git.processed && !d.git.processed.IsZero() {
		return nil, noNews, nil
	}
	if own, err := d.src.PushedItself(ctx, d.git.processed, tip); err != nil {
		return nil, noNews, err
	} else if own {
		return nil, ownCommits, nil
	}
	commits, err := d.src.FirstParentHistory(ctx, d.git.processed, tip)
	if err != nil {
		if errors.Is(err, gitsource.ErrNotAncestor) {
			d.log.Warn("tracked branch was rewritten; replaying its history", "previous", d.git.processed.String())
			commits, err = d.src.FirstParentHistory(ctx, plumbing.ZeroHash, tip)
		}
		if err != nil {
			return nil, noNews, err
		}
	}
	return commits, commitsToRead, nil
}

// ingested is what ingestCommits did.
type ingested struct {
	// content is the hub content of the newest commit rendered (nil: none
	// was), which is also the tip's: later commits touched none of it.
	content *render.Content
	// upTo is the newest commit whose render was applied; rendering says
	// a render still runs beside the loop, which stopped the walk there.
	upTo      plumbing.Hash
	rendering bool
}

// ingestCommits renders every commit that touched hub content, in order,
// and records the resource snapshots of each (each may be a new snapshot
// index). A commit that does not render is recorded (recordUnrendered) and
// skipped. A render still running beside the loop stops the walk; the rest
// of the sync (approvals, run state) goes on without it.
func (d *Daemon) ingestCommits(ctx context.Context, commits []*object.Commit) (ingested, error) {
	in := ingested{upTo: d.git.processed}
	for _, c := range commits {
		if !d.needsRender(ctx, c) {
			in.upTo = c.Hash
			continue
		}
		if rec, known := d.git.unrendered[c.Hash.String()]; known {
			d.git.tipRefused = rec
			in.upTo = c.Hash
			continue // recorded before a restart: it did not render then either
		}
		content, took, running, err := d.renderBeside(ctx, c)
		if running {
			in.rendering = true
			break
		}
		in.upTo = c.Hash
		if err != nil {
			if ctx.Err() != nil {
				return in, err
			}
			d.git.tipRefused = d.recordUnrendered(c, err)
			continue
		}
		d.git.tipRefused = nil
		if d.cfg.Observer != nil {
			d.cfg.Observer.Rendered(took)
		}
		n, err := d.ingest.Record(ctx, content, c.Hash)
		if err != nil {
			return in, err
		}
		if n > 0 {
			d.log.Info("recorded resource snapshots", "commit", short(c.Hash), "snapshots", n)
		}
		if d.cfg.Observer != nil {
			d.cfg.Observer.Processed(c, n)
		}
		in.content, d.git.lastGood = content, c.Hash
	}
	return in, nil
}

// applyDesired admits content, the tip's fleet objects, into the hub. At
// the first sync with nothing new to render (a start or restart) the hub
// has not seen the fleet objects yet: they are the tip's, or, if the tip
// does not render, those of the last commit that did (firstContent).
func (d *Daemon) applyDesired(ctx context.Context, tip plumbing.Hash, content *render.Content) error {
	if content == nil && !d.git.admitted {
		var err error
		if content, err = d.firstContent(ctx, tip); err != nil {
			return err
		}
	}
	if content == nil {
		return nil
	}
	for _, e := range content.Errors {
		d.log.Warn("manifest error", "error", e.Error())
	}
	rejected, err := d.ingest.Admit(ctx, content)
	if err != nil {
		return err
	}
	d.git.admitted = true
	for _, r := range rejected {
		d.log.Warn("change rejected", "reason", r)
	}
	return nil
}

// advance moves the commit processed up to: tip, or, while a render runs
// beside the loop, the newest commit applied (the next sync goes on from
// there).
func (d *Daemon) advance(ctx context.Context, tip plumbing.Hash, in ingested) {
	if in.rendering {
		d.git.processed = in.upTo
		return
	}
	d.git.processed = tip
	d.observeProcessed(ctx, tip)
}

// commitPass ends the sync once its hub pass is committed (the hub's
// side effects performed): the status tree is flushed.
func (d *Daemon) commitPass(ctx context.Context) error {
	return d.Store.Flush(ctx, false)
}

// observeProcessed tells the observer that the tip was processed.
func (d *Daemon) observeProcessed(ctx context.Context, tip plumbing.Hash) {
	if d.cfg.Observer != nil {
		if c, err := d.src.Commit(ctx, tip); err == nil {
			d.cfg.Observer.Processed(c, 0)
		}
	}
}

// needsRender reports whether a commit may change the hub content: it
// touched a file below --path (kustomize may load nothing outside it) other
// than gitfleet's own status/ and approvals/ trees, and — in a plain,
// non-kustomize layout — one of the manifest files render reads. Neither
// the author nor the Gitfleet-Commit trailer is trusted for this: anyone
// can write a trailer.
func (d *Daemon) needsRender(ctx context.Context, c *object.Commit) bool {
	parent := plumbing.ZeroHash
	if c.NumParents() > 0 {
		parent = c.ParentHashes[0]
	}
	paths, err := d.src.ChangedPaths(ctx, parent, c.Hash)
	if err != nil {
		return true
	}
	content := contentPaths(paths, d.cfg.Path)
	if len(content) == 0 {
		return false
	}
	return touchesManifests(content) || d.kustomized(ctx, c.Hash)
}

// contentPaths are the paths below root (--path) that are not gitfleet's
// own status/ and approvals/ trees.
func contentPaths(paths []string, root string) []string {
	root = strings.Trim(path.Clean(root), "/")
	var content []string
	for _, p := range paths {
		if gitsource.OnlyUnder([]string{p}, render.StatusDir+"/", render.ApprovalsDir+"/") {
			continue
		}
		if root == "." || strings.HasPrefix(p, root+"/") {
			content = append(content, p)
		}
	}
	return content
}

// touchesManifests reports whether any path is one a plain layout reads (a
// .yaml, .yml or .json file) or a kustomization file (adding one switches
// the layout to kustomize).
func touchesManifests(paths []string) bool {
	for _, p := range paths {
		if render.IsKustomizationName(path.Base(p)) || render.IsManifestFile(p) {
			return true
		}
	}
	return false
}

// kustomized reports whether the commit builds Path with kustomize, which
// may read any file below it (generators, patches): then every change there
// renders.
func (d *Daemon) kustomized(ctx context.Context, commit plumbing.Hash) bool {
	for _, n := range render.KustomizationNames {
		if _, err := d.src.ReadFile(ctx, commit, path.Join(d.cfg.Path, n)); err == nil || !errors.Is(err, gitsource.ErrNotFound) {
			return true
		}
	}
	return false
}

// firstContent is the hub content for a daemon's first sync: the tip's, or
// if the tip does not render, the last good commit's. With neither, the
// hub is given nothing (rather than an empty fleet, which would delete
// every run).
func (d *Daemon) firstContent(ctx context.Context, tip plumbing.Hash) (*render.Content, error) {
	var tipErr error
	if _, known := d.git.unrendered[tip.String()]; !known && tip != d.git.badTip {
		content, err := d.ingest.Render(ctx, d.src, tip)
		if err == nil {
			d.git.lastGood = tip
			return content, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		// Not recorded as a commit that did not render: the tip may only
		// have touched approvals/; the commit that broke the tree was
		// recorded when it was processed.
		tipErr, d.git.badTip = err, tip
		if d.git.tipRefused == nil {
			// It rendered when it was processed and no longer does (a
			// stricter gitfleet): the source still says the tip is refused.
			d.git.tipRefused = d.refusal(ctx, tip, err)
		}
	}
	if d.git.lastGood.IsZero() || d.git.lastGood == tip {
		d.log.Warn("no commit of the tracked branch renders yet; the hub gets no fleet objects until one does", "tip", short(tip), "err", errString(tipErr))
		return nil, nil
	}
	content, err := d.ingest.Render(ctx, d.src, d.git.lastGood)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		d.log.Warn("the last good commit no longer renders either; the hub gets no fleet objects until a commit does", "commit", short(d.git.lastGood), "err", err.Error())
		return nil, nil
	}
	d.log.Info("the tip does not render; serving the fleet objects of the last commit that did", "tip", short(tip), "commit", short(d.git.lastGood))
	return content, nil
}
