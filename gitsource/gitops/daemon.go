// Package gitops is the GitOps loop of `gitfleet serve`: it follows the
// fleet repository, records a resource snapshot for every commit that
// changes what a placement selects, feeds the fleet objects at the tip into
// the embedded hub (with the API server's admission rules), takes merged
// approvals, and persists the hub's state — progress, approval requests —
// back into the repository through the status tree.
package gitops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/internal/crdschema"
	"github.com/gitfleet/gitfleet/reconciler"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/reconciler/member"
	"github.com/gitfleet/gitfleet/reconciler/updaterun"
	"github.com/gitfleet/gitfleet/render"
	"github.com/gitfleet/gitfleet/render/renderproc"
	"github.com/gitfleet/gitfleet/status"
)

// Config configures a Daemon.
type Config struct {
	// Source is the opened fleet repository.
	Source *gitsource.Source
	// Path is the hub content folder inside the repository (default ".").
	Path string
	// Clock defaults to the wall clock.
	Clock clock.Clock
	// StatusInterval batches status commits that guard nothing (default 2s;
	// negative: every change is committed at once, which tests on a fake
	// clock use so that no commit waits for virtual time).
	StatusInterval time.Duration
	// CacheMaintenance is how often the cache is packed (default 1h;
	// negative: never), so a long-running daemon's cache stays bounded.
	CacheMaintenance time.Duration
	// RenderTimeout bounds the render of one commit (default 1m). A commit
	// that takes longer is recorded as not rendered and skipped.
	RenderTimeout time.Duration
	// RenderMemoryLimit bounds the resident memory of the process a commit
	// renders in (bytes, default 1 GiB, renderproc.DefaultMemory); a commit
	// whose render needs more is recorded as not rendered and skipped.
	RenderMemoryLimit int64
	// MaxFileSize and MaxTotalSize are render's size limits (default
	// render's: 8 MiB and 256 MiB); serve gives the source's.
	MaxFileSize, MaxTotalSize int64
	// RetryMax caps the wait between failed fetches (default 5m). serve
	// sets it to the poll interval: a poll would retry that often anyway.
	RetryMax time.Duration
	// RetryClock is what that wait runs on (default Clock). Tests that
	// step a fake Clock through a rollout keep it on the wall clock, so a
	// fetch that fails by chance is retried without waiting for a step.
	RetryClock clock.Clock
	// StuckThreshold is the engine's stuck threshold (default 5m).
	StuckThreshold time.Duration
	// PushApprovalBranches pushes gitfleet/approve/<name> for every new
	// approval request (default true through the CLI).
	PushApprovalBranches bool
	// Metrics receives the engine's metrics (optional).
	Metrics updaterun.Recorder
	// Observer hears about every Git-side step (optional; metrics).
	Observer Observer
	// OnReconcileError hears about failed reconciles (optional; metrics).
	OnReconcileError func(controller string, err error)
	// OnBindings hears the bindings of a placement after each placement
	// status update (optional; metrics of version skew); read only, they
	// may be the hub's own.
	OnBindings func(placement hub.Key, bindings []*fleet.Binding)
	// Clusters delivers to kubeconfig:<context> members (optional; without
	// it their bindings say no kubeconfig was given).
	Clusters member.Clusters
	// Forge opens approval pull requests and sets commit statuses
	// (optional; forge.go).
	Forge *ForgeConfig
	// NewHub builds the hub the loop runs the engine on, writing what it
	// holds through to store, the status tree (default: the embedded hub,
	// NewEmbeddedHub).
	NewHub func(ctx context.Context, store hub.Store, clk clock.Clock, clusters member.Clusters) (hub.Loop, error)
	Log    *slog.Logger
}

// NewEmbeddedHub is the default Config.NewHub: the hub in gitfleet's
// memory, restored from and persisted to store, selecting resources as
// render does.
func NewEmbeddedHub(_ context.Context, store hub.Store, clk clock.Clock, clusters member.Clusters) (hub.Loop, error) {
	h := embedded.New(clk, store)
	h.SetSelector(render.Select)
	if clusters != nil {
		h.Members().UseClusters(clusters)
	}
	return h, nil
}

// Observer is told what the Git side did, for metrics.
type Observer interface {
	Fetched(d time.Duration, err error)
	Rendered(d time.Duration)
	// RenderFailed is told about a commit that did not render (reason is
	// the Rendered condition's reason).
	RenderFailed(commit *object.Commit, reason string)
	Processed(commit *object.Commit, snapshots int)
	// Pushed is told about every status commit: attempts counts the
	// pushes it took (more than one: the branch had moved and the change
	// was re-applied on the new tip).
	Pushed(changes status.Changeset, lag time.Duration, attempts int, err error)
	// SourceReady is told, after every fetch and sync, whether the source
	// name (status/sources/<name>.yaml) is Ready.
	SourceReady(name string, ready bool)
}

// Daemon is a running GitOps loop.
type Daemon struct {
	cfg   Config
	src   *gitsource.Source
	clock clock.Clock
	log   *slog.Logger

	Hub        hub.Loop
	Store      *status.TreeStore
	Controller *reconciler.Controller

	admit *Admitter
	forge *forgeSync // nil without a forge

	// pushAttempts is the number of pushes the last status commit took;
	// commits are serialized by the status tree.
	pushAttempts atomic.Int64

	// state guards lastSync and syncSince, which the health endpoints read
	// while a sync holds mu.
	state sync.Mutex

	mu        sync.Mutex
	processed plumbing.Hash // last first-parent commit of the tracked branch fully processed
	approved  map[string]bool
	// branchGone are approval files whose branch was deleted.
	branchGone map[string]bool
	admitted   bool // the hub has seen the fleet objects of some tip
	lastErr    error
	// lastSync is when a fetch and sync last succeeded; syncSince is when
	// the one in progress began (zero between them). Both on the clock.
	lastSync, syncSince time.Time
	// lastGood is the newest processed commit that rendered; its fleet
	// objects are what the hub holds while later commits do not render.
	lastGood plumbing.Hash
	// badTip is a tip that did not render at the first sync, not tried again.
	badTip plumbing.Hash
	// unrendered are the commits recorded in status/commits/, by hash.
	unrendered map[string]*fleet.Commit
	// tipRefused is the record of the newest commit that changed hub
	// content when it did not render (nil once a later one rendered): the
	// tip's content is refused, and the source says so (source_status.go).
	// Commits that touch only approvals/ or status/ do not change it.
	tipRefused *fleet.Commit
	// sources are status/sources/, by name (source_status.go).
	sources map[string]*fleet.GitSource
	// personWalk is lastPersonCommit's last answer, for the head it was
	// asked about: a walk from a newer head stops there.
	personWalk struct{ head, person plumbing.Hash }
	// appliedFrom and appliedContent memoize contentCommit.
	appliedFrom    plumbing.Hash
	appliedContent string
	// job is the render running beside the loop (render_job.go), nil
	// when none; waitRenders makes sync render in line (Open).
	job         *renderJob
	waitRenders bool
	// wake is signalled when a job ends, for the loop to apply it.
	wake chan struct{}
	// renderMu guards shown, the job as /readyz and the source status
	// show it (they do not wait for mu, which a sync holds).
	renderMu sync.Mutex
	shown    *renderJob
	// refused are the inputs of renders that failed, not rendered again.
	refused refusedInputs
	// accepted are the fleet objects the CRD schemas accepted in the last
	// render, which the next one does not validate again
	// (render.Options.Accepted): an unchanged object is no request to an
	// API server either.
	accepted atomic.Pointer[crdschema.Accepted]
}

// Open restores the hub from the status tree of the remote, catches up on
// the commits made since gitfleet last looked, and prepares the controller.
// Nothing moves until Run.
func Open(ctx context.Context, cfg Config) (*Daemon, error) {
	if cfg.Source == nil {
		return nil, errors.New("gitops: no source")
	}
	if cfg.Path == "" {
		cfg.Path = "."
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.RetryClock == nil {
		cfg.RetryClock = cfg.Clock
	}
	if cfg.StatusInterval == 0 {
		cfg.StatusInterval = status.DefaultInterval
	}
	if cfg.RenderTimeout <= 0 {
		cfg.RenderTimeout = DefaultRenderTimeout
	}
	if cfg.CacheMaintenance == 0 {
		cfg.CacheMaintenance = time.Hour
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.NewHub == nil {
		cfg.NewHub = NewEmbeddedHub
	}
	d := &Daemon{cfg: cfg, src: cfg.Source, clock: cfg.Clock, log: cfg.Log, approved: map[string]bool{}, branchGone: map[string]bool{},
		unrendered: map[string]*fleet.Commit{}, sources: map[string]*fleet.GitSource{}, wake: make(chan struct{}, 1)}

	start := d.clock.Now()
	head, err := d.src.Fetch(ctx)
	d.observeFetch(start, err)
	if err != nil {
		return nil, err
	}
	statusTip := head.Status
	if statusTip.IsZero() {
		statusTip = head.Commit
	}
	files, err := newTreeFiles(ctx, d.src, map[string]plumbing.Hash{
		render.StatusDir:    statusTip,
		render.ApprovalsDir: head.Commit,
	})
	if err != nil {
		return nil, fmt.Errorf("reading the status tree: %w", err)
	}
	d.Store = status.NewTreeStore(files, status.CommitterFunc(d.commit), d.clock)
	d.Store.Interval = cfg.StatusInterval
	d.Store.OnCommit = func(ch status.Changeset, lag time.Duration, err error) {
		if cfg.Observer != nil {
			cfg.Observer.Pushed(ch, lag, int(d.pushAttempts.Swap(0)), err)
		}
	}
	d.Store.OnError = func(err error) { d.log.Error("pushing status failed", "err", err) }

	if d.Hub, err = cfg.NewHub(ctx, hubStore{d.Store, d.unrendered, d.sources}, d.clock, cfg.Clusters); err != nil {
		return nil, err
	}
	n, err := d.Hub.Start(ctx)
	if err != nil {
		return nil, err
	}
	if cfg.Forge != nil && cfg.Forge.Forge != nil {
		d.forge = newForgeSync(d, cfg.Forge)
	}
	d.log.Info("hub started: its state restored from the status tree (embedded) or read from the API server (kube)", "objects", n, "status_commit", statusTip.String())

	d.admit = NewAdmitter(d.Hub)
	d.Controller = reconciler.NewEngine(d.Hub, d.clock, reconciler.EngineOptions{
		StuckThreshold: cfg.StuckThreshold, Metrics: cfg.Metrics, Committer: d.Hub,
		OnError: cfg.OnReconcileError, OnBindings: cfg.OnBindings, RefusedStrategy: d.admit.RefusedStrategy, Log: d.log,
	})

	d.processed, err = d.resumePoint(ctx, head.Commit)
	if err != nil {
		return nil, err
	}
	d.lastGood = d.processed
	if err := d.approvalsChangedWhileDown(ctx, head.Commit); err != nil {
		return nil, err
	}
	// The start renders in line: the hub is to hold the tip's fleet
	// objects before anything runs. From then on renders run beside the
	// loop.
	d.waitRenders = true
	err = d.sync(ctx, head)
	d.waitRenders = false
	if err != nil {
		return nil, err
	}
	d.lastSync = d.clock.Now()
	d.recordSource(ctx, head.Commit, nil)
	d.forgeResume(ctx)
	d.Controller.EnqueueAll()
	return d, nil
}

// resumePoint finds the newest first-parent commit of the tracked branch
// that a persisted resource snapshot was recorded from. Commits after it
// are processed again; that is safe because recording a commit whose
// resources did not change creates nothing.
func (d *Daemon) resumePoint(ctx context.Context, tip plumbing.Hash) (plumbing.Hash, error) {
	recorded := map[string]bool{}
	placements, err := d.Hub.ListPlacements(ctx)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	for _, p := range placements {
		snaps, err := d.Hub.ListResourceSnapshots(ctx, hub.Key{Namespace: p.Namespace, Name: p.Name})
		if err != nil {
			return plumbing.ZeroHash, err
		}
		for _, s := range snaps {
			if c := s.Annotations[fleet.CommitAnnotation]; c != "" {
				recorded[c] = true
			}
		}
	}
	if len(recorded) == 0 {
		return plumbing.ZeroHash, nil
	}
	history, err := d.src.FirstParentHistory(ctx, plumbing.ZeroHash, tip)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	for i := len(history) - 1; i >= 0; i-- {
		if recorded[history[i].Hash.String()] {
			return history[i].Hash, nil
		}
	}
	return plumbing.ZeroHash, nil
}

// Run follows the repository (on every signal of triggers, plus the
// retries of failed fetches) and runs the controller until ctx is done.
// On the way out it pushes the status that is still pending.
func (d *Daemon) Run(ctx context.Context, triggers <-chan struct{}) error {
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		d.Controller.Run(ctx)
	}()
	go func() {
		defer wg.Done()
		d.collectProperties(ctx)
	}()
	go func() {
		defer wg.Done()
		d.maintainCache(ctx)
	}()
	if d.forge != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.forge.calls.run(ctx)
		}()
	}
	err := d.follow(ctx, triggers)
	d.stopRender()
	wg.Wait()
	d.shutdown()
	if d.forge != nil {
		d.forge.calls.flush()
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}

// follow fetches on every trigger and syncs what moved. A failed fetch or
// sync is retried with backoff (1s doubling to Config.RetryMax) without
// waiting for another trigger, so an outage of the remote heals on its own
// and nothing pushed meanwhile is lost: the next fetch brings every commit,
// and each is processed in order. Triggers that arrive during the wait do
// not cut it short (the retry answers them): the wait the log announces is
// the wait, one line per failed attempt.
func (d *Daemon) follow(ctx context.Context, triggers <-chan struct{}) error {
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: d.cfg.RetryMax}
	if backoff.Cap <= 0 {
		backoff.Cap = 5 * time.Minute
	}
	retry, failures := backoff, 0
	for {
		select {
		case <-triggers: // this fetch answers a pending trigger too
		default:
		}
		start := d.clock.Now()
		d.state.Lock()
		d.syncSince = start
		d.state.Unlock()
		head, err := d.src.Fetch(ctx)
		d.observeFetch(start, err)
		if err == nil {
			err = d.sync(ctx, head)
		}
		d.mu.Lock()
		d.lastErr = err
		d.mu.Unlock()
		d.state.Lock()
		d.syncSince = time.Time{}
		if err == nil {
			d.lastSync = d.clock.Now()
		}
		d.state.Unlock()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		d.recordSource(ctx, head.Commit, err)
		if err != nil {
			failures++
			delay := retry.Step()
			d.log.Warn("fetch or sync failed; retrying", "err", err.Error(), "attempt", failures,
				"retry_in", delay.String(), "next_step", NextStep(err))
			if err := d.sleep(ctx, delay); err != nil {
				return err
			}
			continue
		}
		if failures > 0 {
			d.log.Info("fetch and sync succeed again", "failed_attempts", failures)
		}
		retry, failures = backoff, 0
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-triggers:
		case <-d.wake: // a render ended: apply it (the fetch is cheap)
		}
	}
}

// sleep waits on Config.RetryClock, or until ctx is done.
func (d *Daemon) sleep(ctx context.Context, wait time.Duration) error {
	done := make(chan struct{})
	t := d.cfg.RetryClock.AfterFunc(wait, func() { close(done) })
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-done:
		return nil
	}
}

// Ready reports, for /readyz, whether the fleet repository was fetched and
// synced successfully within maxAge; the error says when it last was and
// why it fails since. A daemon that only learns of commits by webhook
// fetches rarely: give it maxAge 0, which only asks for one success.
func (d *Daemon) Ready(maxAge time.Duration) error {
	d.state.Lock()
	last := d.lastSync
	d.state.Unlock()
	age := d.clock.Now().Sub(last)
	if maxAge <= 0 || age <= maxAge {
		return nil
	}
	cause := "no fetch was attempted"
	if err := d.LastError(); err != nil {
		cause = err.Error()
	}
	return fmt.Errorf("the last successful sync of %s was %s ago, more than %s: %s",
		d.src.URL(), age.Round(time.Second), maxAge, cause)
}

// Healthy reports, for /healthz, whether the loop is alive: a fetch and
// sync that has run longer than maxDuration is wedged (every network step
// has its own timeout, so a working loop never takes that long), and a
// restart is the fix.
func (d *Daemon) Healthy(maxDuration time.Duration) error {
	d.state.Lock()
	since := d.syncSince
	d.state.Unlock()
	if since.IsZero() || maxDuration <= 0 {
		return nil
	}
	if took := d.clock.Now().Sub(since); took > maxDuration {
		return fmt.Errorf("one fetch and sync of %s has been running for %s, more than %s: the loop is wedged",
			d.src.URL(), took.Round(time.Second), maxDuration)
	}
	return nil
}

// maintainCache packs the cache every Config.CacheMaintenance until ctx
// is done.
func (d *Daemon) maintainCache(ctx context.Context) {
	if d.cfg.CacheMaintenance < 0 {
		return
	}
	t := time.NewTicker(d.cfg.CacheMaintenance)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r, err := d.src.Maintain(ctx)
		if err != nil {
			d.log.Warn("cache maintenance failed; trying again at the next interval", "err", err.Error())
			continue
		}
		d.log.Info("cache packed", "repacked", r.Repacked, "disk_bytes_before", r.Before.DiskBytes, "disk_bytes_after", r.After.DiskBytes,
			"packs_before", r.Before.Packs, "loose_objects_before", r.Before.LooseObjects)
	}
}

// LastError is the error of the last fetch and sync, nil when it succeeded.
func (d *Daemon) LastError() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lastErr
}

// shutdown brings placement statuses up to date (the controller debounces
// them, so one may still be pending) and finishes the status push.
func (d *Daemon) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if placements, err := d.Hub.ListPlacements(ctx); err != nil {
		d.log.Error("listing placements for their final status failed", "err", err)
	} else {
		for _, p := range placements {
			if err := d.Controller.Status(ctx, hub.Key{Namespace: p.Namespace, Name: p.Name}); err != nil {
				d.log.Error("final placement status failed", "placement", p.Name, "err", err)
			}
		}
	}
	if err := d.Hub.Commit(ctx); err != nil {
		d.log.Error("final hub commit failed", "err", err)
	}
	if err := d.Store.Flush(ctx, true); err != nil {
		d.log.Error("final status push failed", "err", err)
	}
	d.Store.Stop()
}

// sync processes the commits between the last processed one and head, then
// brings the hub in line with head's fleet objects and approvals.
func (d *Daemon) sync(ctx context.Context, head gitsource.Head) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if head.Commit == d.processed && !d.processed.IsZero() {
		return nil
	}
	// The branch moved by gitfleet's own status commits alone (the fetch
	// after its own push): they hold what the hub wrote, nothing to read.
	if own, err := d.src.PushedItself(ctx, d.processed, head.Commit); err != nil {
		return err
	} else if own {
		d.processed = head.Commit
		d.observeProcessed(ctx, head.Commit)
		return nil
	}
	commits, err := d.src.FirstParentHistory(ctx, d.processed, head.Commit)
	if err != nil {
		if errors.Is(err, gitsource.ErrNotAncestor) {
			// The branch was rewritten: start over from its root; known
			// snapshots are reused where the content matches.
			d.log.Warn("tracked branch was rewritten; replaying its history", "previous", d.processed.String())
			commits, err = d.src.FirstParentHistory(ctx, plumbing.ZeroHash, head.Commit)
		}
		if err != nil {
			return err
		}
	}
	// Render every commit that touched hub content, in order: each may be
	// a new snapshot index. The last one rendered is also the tip's hub
	// content, since later commits touched none of it.
	var content *render.Content
	// upTo is the newest commit whose render was applied; a render still
	// running stops the walk there, and the rest of the sync (approvals,
	// run state) goes on without it.
	upTo := d.processed
	rendering := false
	for _, c := range commits {
		if !d.needsRender(ctx, c) {
			upTo = c.Hash
			continue
		}
		if rec, known := d.unrendered[c.Hash.String()]; known {
			d.tipRefused = rec
			upTo = c.Hash
			continue // recorded before a restart: it did not render then either
		}
		cc, took, running, err := d.renderBeside(ctx, c)
		if running {
			rendering = true
			break
		}
		upTo = c.Hash
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			d.tipRefused = d.recordUnrendered(c, err)
			continue
		}
		d.tipRefused = nil
		if d.cfg.Observer != nil {
			d.cfg.Observer.Rendered(took)
		}
		n, err := RecordSnapshots(ctx, d.Hub, cc, c.Hash.String())
		if err != nil {
			return err
		}
		if n > 0 {
			d.log.Info("recorded resource snapshots", "commit", short(c.Hash), "snapshots", n)
		}
		if d.cfg.Observer != nil {
			d.cfg.Observer.Processed(c, n)
		}
		content, d.lastGood = cc, c.Hash
	}
	if content == nil && !d.admitted {
		// First sync (a start or restart with nothing new): the hub has
		// not seen the fleet objects yet. They are the tip's, or, if the
		// tip does not render, those of the last commit that did.
		if content, err = d.firstContent(ctx, head.Commit); err != nil {
			return err
		}
	}
	if content != nil {
		for _, e := range content.Errors {
			d.log.Warn("manifest error", "error", e.Error())
		}
		rejected, err := d.admit.Admit(ctx, content)
		if err != nil {
			return err
		}
		d.admitted = true
		for _, r := range rejected {
			d.log.Warn("change rejected", "reason", r)
		}
	}
	if err := d.syncApprovals(ctx, head.Commit); err != nil {
		return err
	}
	if rendering {
		d.processed = upTo
	} else {
		d.processed = head.Commit
		d.observeProcessed(ctx, head.Commit)
	}
	if err := d.Hub.Commit(ctx); err != nil {
		return err
	}
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
	root := strings.Trim(path.Clean(d.cfg.Path), "/")
	var content []string
	for _, p := range paths {
		if gitsource.OnlyUnder([]string{p}, render.StatusDir+"/", render.ApprovalsDir+"/") {
			continue
		}
		if root == "." || strings.HasPrefix(p, root+"/") {
			content = append(content, p)
		}
	}
	if len(content) == 0 {
		return false
	}
	return touchesManifests(content) || d.kustomized(ctx, c.Hash)
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

// DefaultRenderTimeout bounds the render of one commit.
const DefaultRenderTimeout = renderproc.DefaultTimeout

// errRenderTimeout is a commit that took longer than Config.RenderTimeout
// to read (a render that does is a renderproc.ErrTimeout).
var errRenderTimeout = errors.New("render timed out")

// slowRender is how long a render runs before the log says it is running.
const slowRender = time.Second

// render renders one commit within Config.RenderTimeout and
// Config.RenderMemoryLimit, in a process of its own (renderproc) that is
// killed at either limit: the CPU and memory are back at once, and the
// commit is recorded as not rendered and never tried again. A commit whose
// input is that of a commit that did not render (the same files under
// --path, and for kustomize the same repository) gets that commit's error
// without rendering.
func (d *Daemon) render(ctx context.Context, commit plumbing.Hash) (*render.Content, error) {
	readCtx, cancel := context.WithTimeout(ctx, d.cfg.RenderTimeout)
	defer cancel()
	fsys, err := CommitFS(readCtx, d.src, commit)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, fmt.Errorf("%w after %s reading the commit", errRenderTimeout, d.cfg.RenderTimeout)
		}
		return nil, err
	}
	opts := render.Options{Path: d.cfg.Path, MaxFileSize: d.cfg.MaxFileSize, MaxTotalSize: d.cfg.MaxTotalSize}
	digest, err := renderproc.Digest(fsys, opts)
	if err != nil {
		return nil, err
	}
	if prev, ok := d.refused.get(digest); ok {
		d.log.Info("commit has the hub content of a commit that did not render; not rendered again",
			"commit", short(commit), "as", short(prev.commit), "err", prev.err.Error())
		return nil, prev.err
	}
	if known := d.accepted.Load(); known != nil {
		opts.Accepted = *known
	}
	lim := renderproc.Limits{Timeout: d.cfg.RenderTimeout, Memory: d.cfg.RenderMemoryLimit}
	d.log.Debug("render started", "commit", short(commit))
	slow := time.AfterFunc(slowRender, func() {
		d.log.Info("render still running", "commit", short(commit), "render_timeout", d.cfg.RenderTimeout.String())
	})
	c, err := renderFunc(ctx, fsys, opts, lim)
	slow.Stop()
	var limit *renderproc.LimitError
	if errors.As(err, &limit) {
		d.log.Warn("render stopped at a limit; its process is gone", "commit", short(commit), "limit", limitFlag(limit),
			"elapsed", limit.Elapsed.Round(time.Millisecond).String(), "pid", limit.PID)
	}
	if err != nil && ctx.Err() == nil {
		d.refused.put(digest, commit, err)
	}
	if err == nil && c.Accepted != nil {
		d.accepted.Store(&c.Accepted)
	}
	return c, err
}

func limitFlag(e *renderproc.LimitError) string {
	if errors.Is(e, renderproc.ErrMemory) {
		return "--render-memory-limit " + renderproc.Bytes(e.Limits.Memory)
	}
	return "--render-timeout " + e.Limits.Timeout.String()
}

// renderFunc is renderproc.Render; tests replace it to watch a render.
var renderFunc = renderproc.Render

// firstContent is the hub content for a daemon's first sync: the tip's, or
// if the tip does not render, the last good commit's. With neither, the
// hub is given nothing (rather than an empty fleet, which would delete
// every run).
func (d *Daemon) firstContent(ctx context.Context, tip plumbing.Hash) (*render.Content, error) {
	var tipErr error
	if _, known := d.unrendered[tip.String()]; !known && tip != d.badTip {
		content, err := d.render(ctx, tip)
		if err == nil {
			d.lastGood = tip
			return content, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		// Not recorded as a commit that did not render: the tip may only
		// have touched approvals/; the commit that broke the tree was
		// recorded when it was processed.
		tipErr, d.badTip = err, tip
		if d.tipRefused == nil {
			// It rendered when it was processed and no longer does (a
			// stricter gitfleet): the source still says the tip is refused.
			d.tipRefused = d.refusal(ctx, tip, err)
		}
	}
	if d.lastGood.IsZero() || d.lastGood == tip {
		d.log.Warn("no commit of the tracked branch renders yet; the hub gets no fleet objects until one does", "tip", short(tip), "err", errString(tipErr))
		return nil, nil
	}
	content, err := d.render(ctx, d.lastGood)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		d.log.Warn("the last good commit no longer renders either; the hub gets no fleet objects until a commit does", "commit", short(d.lastGood), "err", err.Error())
		return nil, nil
	}
	d.log.Info("the tip does not render; serving the fleet objects of the last commit that did", "tip", short(tip), "commit", short(d.lastGood))
	return content, nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// recordUnrendered records a commit that did not render: a status file
// (status/commits/<sha>.yaml) with the error, a metric, one log line and,
// with a forge, a failed commit status. The commit is skipped: no
// snapshot, and the hub keeps the fleet objects of the last commit that
// rendered. It returns the record.
func (d *Daemon) recordUnrendered(c *object.Commit, err error) *fleet.Commit {
	rec := unrenderedRecord(c, err, d.clock.Now())
	reason := rec.Status.Conditions[0].Reason
	d.unrendered[rec.Name] = rec
	d.Store.Put(hub.ObjectRef{Kind: fleet.KindCommit, Key: hub.Key{Name: rec.Name}}, rec)
	d.log.Error("commit does not render; skipped, the hub keeps the last good fleet objects",
		"commit", short(c.Hash), "reason", reason, "err", err.Error(), "record", "status/commits/"+rec.Name+".yaml")
	if d.cfg.Observer != nil {
		d.cfg.Observer.RenderFailed(c, reason)
	}
	d.forgeRefused(rec)
	return rec
}

// refusal is the record of the content commit of tip (the newest
// first-parent commit from tip that changed hub content), which failed to
// render with err, for the source status only: nothing is written to
// status/commits/.
func (d *Daemon) refusal(ctx context.Context, tip plumbing.Hash, err error) *fleet.Commit {
	h := tip
	if c := d.walkToContent(ctx, tip); c != "" {
		h = plumbing.NewHash(c)
	}
	c, cerr := d.src.Commit(ctx, h)
	if cerr != nil {
		c = &object.Commit{Hash: h}
	}
	return unrenderedRecord(c, err, d.clock.Now())
}

// unrenderedRecord is the status/commits/ record of commit c, which did
// not render with err.
func unrenderedRecord(c *object.Commit, err error, now time.Time) *fleet.Commit {
	reason := fleet.RenderFailedReason
	switch {
	case errors.Is(err, errRenderTimeout), errors.Is(err, renderproc.ErrTimeout):
		reason = fleet.RenderTimedOutReason
	case errors.Is(err, renderproc.ErrMemory):
		reason = fleet.RenderMemoryExceededReason
	}
	return &fleet.Commit{
		ObjectMeta: metav1.ObjectMeta{Name: c.Hash.String()},
		Spec: fleet.CommitSpec{
			Subject: firstLine(c.Message),
			Author:  fmt.Sprintf("%s <%s>", c.Author.Name, c.Author.Email),
		},
		Status: fleet.CommitStatus{Conditions: []metav1.Condition{{
			Type: fleet.CommitConditionRendered, Status: metav1.ConditionFalse, Reason: reason,
			Message: err.Error(), LastTransitionTime: metav1.NewTime(now.UTC().Truncate(time.Second)),
		}}},
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// hubStore is the status tree as the embedded hub sees it: every object but
// the daemon's own records (commits that did not render, the source
// status), which Load hands to the daemon instead.
type hubStore struct {
	*status.TreeStore
	unrendered map[string]*fleet.Commit
	sources    map[string]*fleet.GitSource
}

func (s hubStore) Load(ctx context.Context) ([]runtime.Object, error) {
	objs, err := s.TreeStore.Load(ctx)
	hubObjs := objs[:0]
	for _, o := range objs {
		if c, ok := o.(*fleet.Commit); ok {
			s.unrendered[c.Name] = c
			continue
		}
		if src, ok := o.(*fleet.GitSource); ok {
			s.sources[src.Name] = src
			continue
		}
		hubObjs = append(hubObjs, o)
	}
	return hubObjs, err
}

// syncApprovals reads approvals/ of the tracked tip and hands the Approved
// conditions people merged to the hub.
func (d *Daemon) syncApprovals(ctx context.Context, commit plumbing.Hash) error {
	fsys, err := DirFS(ctx, d.src, commit, render.ApprovalsDir)
	if err != nil {
		return err
	}
	ars, errs := render.ReadApprovals(fsys, render.ApprovalsDir)
	for _, e := range errs {
		d.repairApproval(ctx, e, commit)
	}
	// Only files people changed count: one holding what gitfleet last
	// wrote there (or read at start) says nothing new, while the hub may
	// have moved on — an approval given with `kubectl patch` on a kube hub
	// that the status tree has not caught up with yet must not be undone.
	ars = slices.DeleteFunc(ars, func(a *fleet.ApprovalRequest) bool {
		p, err := status.PathFor(a)
		if err != nil {
			return false
		}
		data, err := fs.ReadFile(fsys, p)
		stored, known := d.Store.Stored(p)
		return err == nil && known && bytes.Equal(data, stored)
	})
	changed, err := syncApprovals(ctx, d.Hub, ars)
	for _, ar := range changed {
		attrs := []any{"approval_request", ar.Name}
		if ar.Namespace != "" {
			attrs = append(attrs, "namespace", ar.Namespace)
		}
		if p, perr := status.PathFor(ar); perr == nil {
			if c := d.lastChange(ctx, commit, p); c != nil {
				attrs = append(attrs, "commit", short(c.Hash), "author", fmt.Sprintf("%s <%s>", c.Author.Name, c.Author.Email))
				d.forgeApprovalTaken(p, c)
			}
		}
		d.log.Info("approval taken from Git", attrs...)
	}
	return err
}

// lastChangeDepth bounds how far back lastChange looks.
const lastChangeDepth = 100

// lastChange is the newest first-parent commit up to tip that changed the
// file at p (a merge counts as the change: its author merged it), or nil
// when none of the last lastChangeDepth commits did. It names who approved
// in the log.
func (d *Daemon) lastChange(ctx context.Context, tip plumbing.Hash, p string) *object.Commit {
	return d.lastChanges(ctx, tip, []string{p}, lastChangeDepth)[p]
}

// lastChanges is lastChange of several files in one walk of at most depth
// commits; a file none of them changed has no entry.
func (d *Daemon) lastChanges(ctx context.Context, tip plumbing.Hash, paths []string, depth int) map[string]*object.Commit {
	found := make(map[string]*object.Commit, len(paths))
	h := tip
	for range depth {
		c, err := d.src.Commit(ctx, h)
		if err != nil {
			return found
		}
		parent := plumbing.ZeroHash
		if c.NumParents() > 0 {
			parent = c.ParentHashes[0]
		}
		changed, err := d.src.ChangedPaths(ctx, parent, c.Hash)
		if err != nil {
			return found
		}
		for _, p := range paths {
			if _, done := found[p]; done {
				continue
			}
			if _, ok := slices.BinarySearch(changed, p); ok {
				found[p] = c
			}
		}
		if len(found) == len(paths) || parent.IsZero() {
			return found
		}
		h = parent
	}
	return found
}

// repairApproval handles an approval request file that does not read: if
// gitfleet holds the request, a person's commit broke the file, which then
// approves nothing; gitfleet writes its own record of the request back
// (with any approval it had already taken), so the file a person edits to
// approve is a valid one again. The record carries a note saying so, which
// the run reports on its approval task until the request is approved.
func (d *Daemon) repairApproval(ctx context.Context, e render.ManifestError, commit plumbing.Hash) {
	ref, err := status.RefFor(e.File)
	if err != nil || ref.Name == "" {
		d.log.Warn("approval request file error", "error", e.Error())
		return
	}
	key := hub.Key{Namespace: ref.Namespace, Name: ref.Name}
	if _, err := d.Hub.GetApprovalRequest(ctx, key); err != nil {
		d.log.Warn("approval request file error; gitfleet has no such request to restore", "error", e.Error())
		return
	}
	// The commit that broke it, not the tip: gitfleet's own commits may
	// have come after it by the time this sync sees it.
	if c := d.lastChange(ctx, commit, e.File); c != nil {
		commit = c.Hash
	}
	d.log.Warn("approval request file broken by a commit; gitfleet writes its record back (it approves nothing as it is)",
		"file", e.File, "commit", commit.String(), "error", e.Error())
	if err := d.Hub.Annotate(ctx, ref.Kind, key, fleet.RejectedChangeAnnotation, fmt.Sprintf(
		"%s (commit %.7s): the file approved nothing, so gitfleet wrote its record of the request back; approve it again", e.Error(), commit.String())); err != nil {
		d.log.Warn("noting the broken approval request file on the request failed", "file", e.File, "err", err.Error())
		return
	}
	cur, err := d.Hub.GetApprovalRequest(ctx, key)
	if err != nil {
		return
	}
	d.Store.Forget(e.File)
	d.Store.Put(hub.ObjectRef{Kind: ref.Kind, Key: key}, cur)
}

// commit is the status tree's Committer: status/ goes to the status branch,
// approvals/ to the tracked branch (people approve by merging into it).
// After a new approval request landed, the branch that approves it is
// pushed, ready for a pull request.
func (d *Daemon) commit(ctx context.Context, ch status.Changeset, message string, urgent bool) error {
	statusPart, approvalPart := split(ch, render.ApprovalsDir+"/")
	sameBranch := d.src.StatusBranch() == "" || d.src.StatusBranch() == d.src.Branch()
	apply := func(c gitsource.Change) error {
		res, err := d.src.Apply(ctx, c)
		if int64(res.Attempts) > d.pushAttempts.Load() {
			d.pushAttempts.Store(int64(res.Attempts))
		}
		return err
	}
	if sameBranch {
		if err := apply(gitsource.Change{Message: message, Writes: ch.Writes, Deletes: ch.Deletes}); err != nil {
			return err
		}
	} else {
		if !statusPart.Empty() {
			if err := apply(gitsource.Change{Branch: d.src.StatusBranch(), Message: message,
				Writes: statusPart.Writes, Deletes: statusPart.Deletes}); err != nil {
				return err
			}
		}
		if !approvalPart.Empty() {
			if err := apply(gitsource.Change{Message: message,
				Writes: approvalPart.Writes, Deletes: approvalPart.Deletes}); err != nil {
				return err
			}
		}
	}
	if d.cfg.PushApprovalBranches {
		d.pushApprovalBranches(ctx, approvalPart)
		d.deleteSettledBranches(ctx, approvalPart)
	}
	d.forgeStatusesChanged(ch)
	return nil
}

// deleteSettledBranches deletes gitfleet/approve/<name> once its request is
// settled: accepted (by merging the branch, by a commit, by any means), or
// gone with its run. A branch left behind invites a merge that conflicts.
func (d *Daemon) deleteSettledBranches(ctx context.Context, ch status.Changeset) {
	var settled []string
	for _, p := range ch.WritePaths() {
		obj, err := status.Decode(ch.Writes[p])
		if err != nil {
			continue
		}
		if ar, ok := obj.(*fleet.ApprovalRequest); ok && meta.IsStatusConditionTrue(ar.Status.Conditions, fleet.ApprovalRequestConditionApprovalAccepted) {
			settled = append(settled, p)
		}
	}
	settled = append(settled, ch.Deletes...)
	for _, p := range settled {
		if d.branchGone[p] {
			continue
		}
		name := approvalBranchName(p)
		if name == "" {
			continue
		}
		if d.forgeApprovalSettled(p, slices.Contains(ch.Deletes, p)) {
			d.branchGone[p] = true // the forge call deletes it, after closing its pull request
			continue
		}
		if err := d.src.DeleteBranch(ctx, name); err != nil {
			d.log.Warn("deleting the approval branch failed; it can be deleted by hand", "branch", gitsource.ApproveBranchPrefix+name, "err", err)
			continue
		}
		d.branchGone[p] = true
	}
}

// approvalBranchName is the branch name of the approval request file at p:
// approvals/<name>.yaml → <name>, approvals/<ns>/<name>.yaml → <ns>.<name>.
func approvalBranchName(p string) string {
	rest, ok := strings.CutPrefix(p, render.ApprovalsDir+"/")
	if !ok || !strings.HasSuffix(rest, ".yaml") {
		return ""
	}
	return strings.ReplaceAll(strings.TrimSuffix(rest, ".yaml"), "/", ".")
}

// pushApprovalBranches pushes gitfleet/approve/<name> for every approval
// request written without an Approved condition: its single commit adds the
// condition with the right observedGeneration, so merging it approves.
func (d *Daemon) pushApprovalBranches(ctx context.Context, ch status.Changeset) {
	for _, p := range ch.WritePaths() {
		obj, err := status.Decode(ch.Writes[p])
		if err != nil {
			continue
		}
		ar, ok := obj.(*fleet.ApprovalRequest)
		if !ok || meta.FindStatusCondition(ar.Status.Conditions, fleet.ApprovalRequestConditionApproved) != nil || d.approved[p] {
			continue
		}
		data, err := status.Encode(status.ApprovedCopy(ar, d.clock.Now()))
		if err != nil {
			continue
		}
		name := ar.Name
		if ar.Namespace != "" {
			name = ar.Namespace + "." + ar.Name
		}
		msg := fmt.Sprintf("approve %s\n\nMerging this change approves stage %s of %s.", ar.Name, ar.Spec.TargetStage, ar.Spec.TargetUpdateRun)
		if _, err := d.src.PushBranch(ctx, name, gitsource.Change{Message: msg, Writes: map[string][]byte{p: data}}); err != nil {
			d.log.Warn("pushing the approval branch failed", "approval_request", ar.Name, "err", err)
			continue
		}
		d.approved[p] = true
		d.log.Info("approval requested; merge the branch to approve", "approval_request", ar.Name,
			"branch", gitsource.ApproveBranchPrefix+name)
		d.forgeApprovalBranchPushed(hub.Key{Namespace: ar.Namespace, Name: ar.Name}, gitsource.ApproveBranchPrefix+name)
	}
}

func split(ch status.Changeset, prefix string) (rest, matched status.Changeset) {
	rest.Writes, matched.Writes = map[string][]byte{}, map[string][]byte{}
	for p, data := range ch.Writes {
		if strings.HasPrefix(p, prefix) {
			matched.Writes[p] = data
		} else {
			rest.Writes[p] = data
		}
	}
	for _, p := range ch.Deletes {
		if strings.HasPrefix(p, prefix) {
			matched.Deletes = append(matched.Deletes, p)
		} else {
			rest.Deletes = append(rest.Deletes, p)
		}
	}
	return rest, matched
}

func (d *Daemon) observeFetch(start time.Time, err error) {
	if d.cfg.Observer != nil {
		d.cfg.Observer.Fetched(d.clock.Now().Sub(start), err)
	}
}

func short(h plumbing.Hash) string { return h.String()[:12] }

// Idle reports whether nothing can progress without a person: every run is
// finished or waits on an approval, a state change or a new commit; no
// member delay is running; nothing is queued, undelivered or unpushed; and
// the remote has no commit gitfleet has not processed. Commits it finds
// unprocessed it processes (it fetched them anyway), answering false.
func (d *Daemon) Idle(ctx context.Context) (bool, error) {
	if !d.Controller.Idle() || !d.Controller.Blocked(ctx) || d.Hub.Pending() > 0 || d.Store.Pending() {
		return false, nil
	}
	head, err := d.src.Fetch(ctx)
	if err != nil {
		return false, err
	}
	d.mu.Lock()
	processed := d.processed
	d.mu.Unlock()
	if head.Commit == processed {
		return true, nil
	}
	// Commits arrived that no trigger announced — without polling
	// (webhooks only), gitfleet's own status pushes are such commits.
	// Process them now, rather than trusting their trailer, and look again
	// on the next check.
	err = d.sync(ctx, head)
	d.mu.Lock()
	d.lastErr = err
	d.mu.Unlock()
	return false, err
}

// NextStep says what a person can do about a failed fetch, sync or start.
func NextStep(err error) string {
	var api apierrors.APIStatus
	switch {
	case errors.As(err, &api):
		return "the hub's API server answered this (--hub kube): fix what it names (the CRDs of config/crd, RBAC, a namespace); gitfleet retries on its own"
	case errors.Is(err, gitsource.ErrAuth):
		return "check the credentials (--token-file, --password-file, --ssh-key-file) and that they may read the repository"
	case errors.Is(err, gitsource.ErrNotFound):
		return "check that the repository and the branch exist at the --repo URL (moved or deleted?); gitfleet retries on its own"
	default:
		return "check that the remote is reachable from here (network, DNS, TLS: --ca-file); gitfleet retries on its own"
	}
}
