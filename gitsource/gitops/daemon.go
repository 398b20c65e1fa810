// Package gitops is the GitOps loop of `gitfleet serve`: it follows the
// fleet repository and ingests what moved (gitsource/ingest: a resource
// snapshot for every commit that changes what a placement selects, the
// fleet objects at the tip admitted into the hub, the approvals people
// merged), runs the engine on the hub, and pushes the hub's state —
// progress, approval requests — back into the repository through the
// status tree.
//
// A sync is a sequence of named steps (sync.go), each a method with its
// own result, as Flux's source-controller folds reconcileStorage,
// reconcileSource and reconcileArtifact: fetch (follow.go), the commits
// to read, ingest them, apply the tip's fleet objects, take approvals,
// advance, commit the pass. Beside it run the engine (reconciler), the
// status push (push.go), the forge (forge.go), the render of a slow commit
// (render_job.go) and the source status (source_status.go); each owns
// its state.
package gitops

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/gitsource/ingest"
	"github.com/gitfleet/gitfleet/internal/clock"
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
	// EndedRunsKept is how many ended runs, the last to end, the status
	// tree keeps its record of in memory (default
	// status.DefaultEndedKept; negative: none); older ones are read back
	// from Git when they change (status.TreeStore.EndedKept).
	EndedRunsKept int
	// CacheMaintenance is how often the cache is packed (default 1h;
	// negative: never), so a long-running daemon's cache stays bounded.
	CacheMaintenance time.Duration
	// RenderTimeout bounds the render of one commit (default 1m). A commit
	// that takes longer is recorded as not rendered and skipped.
	RenderTimeout time.Duration
	// RenderPatience is how long a sync waits for a render before it goes
	// on without it, the render continuing beside the loop (default
	// 500ms): most renders take milliseconds and are applied in the sync
	// that started them.
	RenderPatience time.Duration
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
	// Gates evaluates the engine's metric gates (optional; serve's is
	// metricgate.Evaluator with --prometheus-url).
	Gates updaterun.MetricEvaluator
	// GroupCommit is how long a guarded write (a binding and run status
	// that must be in Git before its side effect) waits, at most, for the
	// writes of other passes to join its commit and push (groupcommit.go;
	// serve's default is DefaultGroupCommit). Zero or less: every pass
	// commits on its own, one at a time, as before.
	GroupCommit time.Duration
	// PushApprovalBranches pushes gitfleet/approve/<name> for every new
	// approval request (default true through the CLI).
	PushApprovalBranches bool
	// Metrics receives the engine's metrics (optional).
	Metrics updaterun.Recorder
	// Observer hears about every Git-side step (optional; metrics).
	Observer Observer
	// OnReconcileError hears about failed reconciles (optional; metrics).
	OnReconcileError func(controller string, err error)
	// OnWriteConflict hears about run passes retried after a hub write
	// lost to a Conflict, by reconciler.ConflictKind (optional; metrics).
	OnWriteConflict func(kind string)
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

// Daemon is a running GitOps loop. The state of the Git loop is grouped
// by the step that owns it: where the loop is in the branch (gitState,
// under mu, which a sync holds), what the health endpoints read (health),
// the render beside the loop (renders), the status push (statusPush) and
// the source status (sourceRecord).
type Daemon struct {
	cfg   Config
	src   *gitsource.Source
	clock clock.Clock
	log   *slog.Logger

	Hub        hub.Loop
	Store      *status.TreeStore
	Controller *reconciler.Controller

	ingest  *ingest.Ingest
	group   *groupCommit
	forge   *forgeSync // nil without a forge
	push    *statusPush
	health  health
	renders renders
	source  sourceRecord

	mu  sync.Mutex
	git gitState
}

// gitState is where the loop is in the tracked branch: what each sync
// reads and moves on, under Daemon.mu.
type gitState struct {
	// processed is the last first-parent commit of the tracked branch fully
	// processed.
	processed plumbing.Hash
	// admitted says the hub has seen the fleet objects of some tip.
	admitted bool
	// lastGood is the newest processed commit that rendered; its fleet
	// objects are what the hub holds while later commits do not render.
	lastGood plumbing.Hash
	// badTip is a tip that did not render at the first sync, not tried
	// again.
	badTip plumbing.Hash
	// unrendered are the commits recorded in status/commits/, by hash.
	unrendered map[string]*fleet.Commit
	// tipRefused is the record of the newest commit that changed hub
	// content when it did not render (nil once a later one rendered): the
	// tip's content is refused, and the source says so (source_status.go).
	// Commits that touch only approvals/ or status/ do not change it.
	tipRefused *fleet.Commit
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
	if cfg.RenderPatience <= 0 {
		cfg.RenderPatience = DefaultRenderPatience
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
	d := &Daemon{cfg: cfg, src: cfg.Source, clock: cfg.Clock, log: cfg.Log,
		git:     gitState{unrendered: map[string]*fleet.Commit{}},
		source:  sourceRecord{sources: map[string]*fleet.GitSource{}},
		renders: renders{wake: make(chan struct{}, 1)}}
	d.push = &statusPush{src: d.src, clock: d.clock, log: d.log, branches: cfg.PushApprovalBranches, forge: d,
		approved: map[string]bool{}, branchGone: map[string]bool{}}

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
	d.Store = status.NewTreeStore(files, d.push, d.clock)
	d.Store.Interval = cfg.StatusInterval
	if cfg.EndedRunsKept != 0 {
		d.Store.EndedKept = cfg.EndedRunsKept
	}
	d.Store.OnCommit = func(ch status.Changeset, lag time.Duration, err error) {
		if cfg.Observer != nil {
			cfg.Observer.Pushed(ch, lag, d.push.takeAttempts(), err)
		}
	}
	d.Store.OnError = func(err error) { d.log.Error("pushing status failed", "err", err) }

	if d.Hub, err = cfg.NewHub(ctx, hubStore{d.Store, d.git.unrendered, d.source.sources}, d.clock, cfg.Clusters); err != nil {
		return nil, err
	}
	n, err := d.Hub.Start(ctx)
	if err != nil {
		return nil, err
	}
	if cfg.Forge != nil && cfg.Forge.Forge != nil {
		d.forge = newForgeSync(d, cfg.Forge)
	}
	if _, ok := d.Hub.(*embedded.Hub); ok {
		d.log.Info("hub started: embedded, its state restored from the status tree", "hub", "embedded", "objects", n, "status_commit", statusTip.String())
	} else {
		d.log.Info("hub started: kube, its state read from the API server", "hub", "kube", "objects", n, "status_commit", statusTip.String())
	}

	d.ingest = ingest.New(d.Hub, &ingest.Renderer{Path: cfg.Path, MaxFileSize: cfg.MaxFileSize, MaxTotalSize: cfg.MaxTotalSize,
		Limits: renderproc.Limits{Timeout: cfg.RenderTimeout, Memory: cfg.RenderMemoryLimit}, Log: d.log,
		Func: func(ctx context.Context, fsys fs.FS, opts render.Options, lim renderproc.Limits) (*render.Content, error) {
			return renderFunc(ctx, fsys, opts, lim)
		}})
	// A hub that says how many passes it takes at once (the kube hub,
	// whose passes mostly wait on its API server) gets that many workers.
	workers := 1
	if w, ok := d.Hub.(interface{ EngineWorkers() int }); ok {
		workers = w.EngineWorkers()
	}
	d.Controller = reconciler.NewEngine(d.Hub, d.clock, reconciler.EngineOptions{
		StuckThreshold: cfg.StuckThreshold, Metrics: cfg.Metrics, Workers: workers, Gates: cfg.Gates,
		OnError: cfg.OnReconcileError, OnConflict: cfg.OnWriteConflict, OnBindings: cfg.OnBindings, RefusedStrategy: d.ingest.RefusedStrategy, Log: d.log,
	})

	window := cfg.GroupCommit
	if _, embeddedHub := d.Hub.(*embedded.Hub); !embeddedHub {
		// The Kubernetes hub's writes are durable in its API server: no
		// side effect waits for a push, nothing is worth waiting for.
		window = 0
	}
	d.group = newGroupCommit(d.Hub, d.clock, window)
	d.group.engineOf(d.Controller, cfg.OnReconcileError)

	d.git.processed, err = d.resumePoint(ctx, head.Commit)
	if err != nil {
		return nil, err
	}
	d.git.lastGood = d.git.processed
	if err := d.approvalsChangedWhileDown(ctx, head.Commit); err != nil {
		return nil, err
	}
	// The start renders in line: the hub is to hold the tip's fleet
	// objects before anything runs. From then on renders run beside the
	// loop.
	d.renders.inLine = true
	err = d.sync(ctx, head)
	d.renders.inLine = false
	if err != nil {
		return nil, err
	}
	d.health.synced(d.clock.Now(), nil)
	d.recordSource(ctx, head.Commit, nil)
	d.forgeResume(ctx)
	d.Controller.EnqueueAll()
	return d, nil
}

// renderFunc is renderproc.Render; tests replace it to watch a render.
var renderFunc = renderproc.Render

// DefaultRenderTimeout bounds the render of one commit.
const DefaultRenderTimeout = renderproc.DefaultTimeout

// resumePoint finds the newest first-parent commit of the tracked branch
// that a persisted resource snapshot was recorded from. Commits after it
// are processed again (ingest.ResumePoint).
func (d *Daemon) resumePoint(ctx context.Context, tip plumbing.Hash) (plumbing.Hash, error) {
	recorded, err := ingest.RecordedCommits(ctx, d.Hub)
	if err != nil || len(recorded) == 0 {
		return plumbing.ZeroHash, err
	}
	history, err := d.src.FirstParentHistory(ctx, plumbing.ZeroHash, tip)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	hashes := make([]plumbing.Hash, len(history))
	for i, c := range history {
		hashes[i] = c.Hash
	}
	if i := ingest.ResumePoint(hashes, recorded); i >= 0 {
		return hashes[i], nil
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
	if err := d.group.commit(ctx); err != nil {
		d.log.Error("final hub commit failed", "err", err)
	}
	if err := d.Store.Flush(ctx, true); err != nil {
		d.log.Error("final status push failed", "err", err)
	}
	d.Store.Stop()
}

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
	processed := d.git.processed
	d.mu.Unlock()
	if head.Commit == processed {
		return true, nil
	}
	// Commits arrived that no trigger announced — without polling
	// (webhooks only), gitfleet's own status pushes are such commits.
	// Process them now, rather than trusting their trailer, and look again
	// on the next check.
	err = d.sync(ctx, head)
	d.health.setErr(err)
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

func short(h plumbing.Hash) string { return ingest.Short(h) }
