// Package simulate runs the real engine on a fleet repository in virtual
// time: it replays the branch's first-parent history into resource snapshot
// indexes (as `serve` records them), loads the fleet objects at HEAD into an
// embedded hub with simulated members, and lets the controller run while a
// fake clock jumps from timer to timer. Nothing is written to the repository.
package simulate

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/gitsource/ingest"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/render"
	"github.com/gitfleet/gitfleet/render/renderproc"
	"github.com/gitfleet/gitfleet/status"
)

// Options configure a simulation.
type Options struct {
	// Repo is the path of a local Git repository.
	Repo string
	// Branch to replay (default: the repository's current branch).
	Branch string
	// Path is the hub content folder inside the repository (default ".").
	Path string
	// Limits bound the render of each commit and MaxFileSize and
	// MaxTotalSize the files it reads, as serve's flags of the same names
	// do (defaults: serve's). Each commit renders in a process of its own
	// (renderproc), as in serve; one that does not render within them is
	// recorded and skipped, as serve skips it.
	Limits                    renderproc.Limits
	MaxFileSize, MaxTotalSize int64
	// Approve approves every approval request the instant it appears.
	Approve bool
	// KeepPending, with Approve, leaves to a person the approval requests
	// that already exist when the engine starts (restored ones) and every
	// gate of a run the change leaves as it was (its status observed its
	// spec's generation): `gitfleet plan` approves only the gates the
	// change itself opens, so a run already under way shows Waiting where
	// serve would wait.
	KeepPending bool
	// ApprovedBy is what the timeline says approved a request (default
	// "--approve").
	ApprovedBy string
	// Until bounds the virtual time (default 24h).
	Until time.Duration
	// Start is the virtual start time (default 2026-01-01T00:00:00Z).
	Start time.Time
	// StuckThreshold is the engine's stuck threshold (default 5m).
	StuckThreshold time.Duration
	// FromStatus is where the simulation starts (restore.go): FromTip
	// (default) restores the status/ tree of the branch's tip when it has
	// one, FromScratch replays the whole branch into an empty hub, and any
	// other value is a revision whose status/ tree is restored. From a
	// restored state only the commits gitfleet had not processed are
	// replayed, and the virtual clock starts at that revision's commit time
	// (unless Start is set).
	FromStatus string
	// Prepared, if set, is called once the hub holds the restored state,
	// the new snapshots and the fleet objects at the tip, before the engine
	// starts: `gitfleet plan` reads the state it starts from there.
	Prepared func(ctx context.Context, h *embedded.Hub) error
	// NoTimeline skips recording Result.Timeline (`-o yaml` prints none),
	// which saves two copies of every run on every pass.
	NoTimeline bool
	// Store is where the hub writes its objects through to (default:
	// nowhere, embedded.DiscardStore; Result.Hub holds the final objects).
	Store embedded.Store
	Log   *slog.Logger
}

// Result is what a simulation leaves behind.
type Result struct {
	Timeline []Event
	// Start is the virtual time the simulation started at, and Elapsed
	// the virtual time it covered.
	Start   time.Time
	Elapsed time.Duration
	// Hub holds the final objects.
	Hub *embedded.Hub
	// Commits is the number of first-parent commits replayed.
	Commits int
	// Rendered is how many of them were rendered: a commit that changed
	// only status/ and approvals/ renders as its parent did.
	Rendered int
	// ManifestErrors are problems found in the manifests at HEAD: those
	// it is refused for when it does not render.
	ManifestErrors []render.ManifestError
	// Unrendered are the replayed commits that do not render, which the
	// simulation skipped as serve skips them.
	Unrendered []Unrendered
	// TipRefused says the tip does not render: ManifestErrors are what it
	// is refused for, and the hub holds the last good commit's objects.
	TipRefused bool
	// Rejected are the changes at HEAD the API server would refuse, one
	// line each (the last accepted spec stays in use).
	Rejected []string
	// StatusCommit is the commit whose status/ tree the simulation started
	// from (zero: from scratch), and Restored the number of objects read.
	StatusCommit plumbing.Hash
	Restored     int
	// Recorded are the resource snapshots the replayed commits created.
	Recorded []*fleet.ResourceSnapshot
}

// Unrendered is a commit that does not render.
type Unrendered struct {
	Commit plumbing.Hash
	Err    error
}

// Run simulates the repository.
func Run(ctx context.Context, opts Options) (*Result, error) {
	if opts.Until == 0 {
		opts.Until = 24 * time.Hour
	}
	if opts.Path == "" {
		opts.Path = "."
	}
	if opts.ApprovedBy == "" {
		opts.ApprovedBy = "--approve"
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	history, src, cleanup, err := openHistory(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	if len(history) == 0 {
		return nil, fmt.Errorf("branch has no commits")
	}
	tip := history[len(history)-1]

	if opts.Store == nil {
		opts.Store = embedded.DiscardStore{}
	}
	rec, err := openRecorded(ctx, opts, tip)
	if err != nil {
		return nil, err
	}
	if opts.Start.IsZero() {
		opts.Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		if rec != nil {
			opts.Start = rec.at
		}
	}
	clk := clock.NewFake(opts.Start)
	res := &Result{}
	store := opts.Store
	if rec != nil {
		store = restoredStore{Store: opts.Store, objects: rec.objects}
	}
	h := embedded.New(clk, store)
	h.SetSelector(render.Select)
	res.Hub, res.Start = h, opts.Start
	if rec != nil {
		if res.Restored, err = h.Restore(ctx); err != nil {
			return nil, err
		}
		h.Resync()
		res.StatusCommit = rec.commit
		if history, err = unprocessed(ctx, h, src, history); err != nil {
			return nil, err
		}
	}
	res.Commits = len(history)
	before, err := snapshotNames(ctx, h)
	if err != nil {
		return nil, err
	}
	in := ingest.New(h, &ingest.Renderer{Path: opts.Path, MaxFileSize: opts.MaxFileSize, MaxTotalSize: opts.MaxTotalSize,
		Limits: opts.Limits, Log: opts.Log})
	var head *render.Content
	for i, c := range history {
		if i > 0 && i < len(history)-1 && onlyStatus(ctx, src, history[i-1], c) {
			// gitfleet's own status commits (and approvals, which the
			// simulation gives itself) render as their parent did.
			continue
		}
		res.Rendered++
		content, err := in.Render(ctx, src, c)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			// As serve: recorded, skipped, the hub keeps what it has.
			res.Unrendered = append(res.Unrendered, Unrendered{Commit: c, Err: err})
			res.Timeline = append(res.Timeline, Event{Message: fmt.Sprintf("commit %s does not render; skipped, as serve skips it: %v", c.String()[:7], err)})
			if i == len(history)-1 {
				res.ManifestErrors, res.TipRefused = render.RefusalProblems(err), true
			}
			continue
		}
		if _, err := in.Record(ctx, content, c); err != nil {
			return nil, fmt.Errorf("recording snapshots of commit %s: %w", c.String()[:12], err)
		}
		head = content
	}
	if head == nil && len(res.Unrendered) == 0 {
		// Nothing new since the recorded state: the fleet objects are the
		// tip's.
		if head, err = in.Render(ctx, src, tip); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			res.Unrendered = append(res.Unrendered, Unrendered{Commit: tip, Err: err})
			res.ManifestErrors, res.TipRefused = render.RefusalProblems(err), true
		}
	}
	if head != nil {
		// A tip that does not render leaves the last good commit's
		// objects (or the recorded ones) in place, as serve does.
		if len(res.ManifestErrors) == 0 {
			res.ManifestErrors = head.Errors
		}
		if res.Rejected, err = in.Admit(ctx, head); err != nil {
			return nil, err
		}
	}
	// After admission: a placement new at the tip lists its snapshots
	// only once the hub holds it.
	if res.Recorded, err = newSnapshots(ctx, h, before); err != nil {
		return nil, err
	}
	if opts.Prepared != nil {
		if err := opts.Prepared(ctx, h); err != nil {
			return nil, err
		}
	}

	ctrl := reconciler.NewEngine(h, clk, reconciler.EngineOptions{
		StuckThreshold: opts.StuckThreshold, Committer: h, RefusedStrategy: in.RefusedStrategy, Log: opts.Log,
	})
	if !opts.NoTimeline {
		ctrl.Observer = func(before, after *fleet.UpdateRun) {
			name := nameOf(before, after)
			for _, m := range diffRun(before, after) {
				res.Timeline = append(res.Timeline, Event{At: clk.Now().Sub(opts.Start), Run: name, Message: m})
			}
		}
	}
	var pending kept
	if opts.KeepPending {
		if pending, err = keepApprovals(ctx, h); err != nil {
			return nil, err
		}
	}
	ctrl.EnqueueAll()
	for ctx.Err() == nil {
		ctrl.Drain(ctx)
		if opts.Approve {
			names, err := approveAll(ctx, h, clk, pending)
			if err != nil {
				return nil, err
			}
			for _, a := range names {
				if opts.NoTimeline {
					break
				}
				res.Timeline = append(res.Timeline, Event{At: clk.Now().Sub(opts.Start), Run: a[0], Message: "approved " + a[1] + " (" + opts.ApprovedBy + ")"})
			}
			if len(names) > 0 {
				continue
			}
		}
		// Stop when every run waits on a person (or is done) and nothing but
		// the controller's own polls could change that.
		if ctrl.Blocked(ctx) && clk.Pending() == ctrl.PendingTimers() {
			break
		}
		next, ok := clk.Next()
		if !ok || next.Sub(opts.Start) > opts.Until {
			break
		}
		clk.Step()
	}
	// Bring placement statuses up to date with the final bindings.
	ps, _ := h.ListPlacements(ctx)
	for _, p := range ps {
		if err := ctrl.Status(ctx, hub.Key{Namespace: p.Namespace, Name: p.Name}); err != nil {
			return nil, err
		}
	}
	if err := h.Commit(ctx); err != nil {
		return nil, err
	}
	res.Elapsed = clk.Now().Sub(opts.Start)
	return res, ctx.Err()
}

func nameOf(before, after *fleet.UpdateRun) string {
	r := after
	if r == nil {
		r = before
	}
	if r == nil {
		return ""
	}
	if r.Namespace != "" {
		return r.Namespace + "/" + r.Name
	}
	return r.Name
}

// openHistory clones the repository into a temporary cache (so nothing is
// written to it) and lists the branch's first-parent commits, oldest first.
func openHistory(ctx context.Context, opts Options) ([]plumbing.Hash, *gitsource.Source, func(), error) {
	branch := opts.Branch
	if branch == "" {
		repo, err := git.PlainOpenWithOptions(opts.Repo, &git.PlainOpenOptions{DetectDotGit: true})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("opening repository %s: %w", opts.Repo, err)
		}
		ref, err := repo.Head()
		if err != nil {
			return nil, nil, nil, fmt.Errorf("reading HEAD of %s: %w", opts.Repo, err)
		}
		if !ref.Name().IsBranch() {
			return nil, nil, nil, fmt.Errorf("HEAD of %s is detached; pass --branch", opts.Repo)
		}
		branch = ref.Name().Short()
	}
	dir, err := os.MkdirTemp("", "gitfleet-simulate-")
	if err != nil {
		return nil, nil, nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	src, err := gitsource.Open(ctx, gitsource.Config{URL: opts.Repo, Branch: branch, CacheDir: dir, Logger: opts.Log,
		MaxFileSize: opts.MaxFileSize, MaxTotalSize: opts.MaxTotalSize})
	if err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	head, err := src.Fetch(ctx)
	if err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	commits, err := src.FirstParentHistory(ctx, plumbing.ZeroHash, head.Commit)
	if err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	hashes := make([]plumbing.Hash, len(commits))
	for i, c := range commits {
		hashes[i] = c.Hash
	}
	return hashes, src, cleanup, nil
}

// onlyStatus reports whether commit changed nothing but files under status/
// and approvals/ since parent (its first parent in the replayed history).
func onlyStatus(ctx context.Context, src *gitsource.Source, parent, commit plumbing.Hash) bool {
	paths, err := src.ChangedPaths(ctx, parent, commit)
	return err == nil && gitsource.OnlyUnder(paths, render.StatusDir+"/", render.ApprovalsDir+"/")
}

// approveAll approves every approval request that is not approved yet, as
// `gitfleet approve` would, except those named in keep, and returns the
// [run, request] names approved.
func approveAll(ctx context.Context, h *embedded.Hub, clk clock.Clock, keep kept) ([][2]string, error) {
	var out [][2]string
	for _, ns := range namespacesOfRuns(ctx, h) {
		ars, err := h.ListApprovalRequests(ctx, ns, nil)
		if err != nil {
			return out, err
		}
		for _, a := range ars {
			if approved(a) || keep.requests[a.Namespace+"/"+a.Name] || keep.runs[a.Namespace+"/"+a.Spec.TargetUpdateRun] {
				continue
			}
			if err := h.ApplyApprovalRequestStatus(ctx, status.ApprovedCopy(a, clk.Now())); err != nil {
				return out, err
			}
			run := a.Spec.TargetUpdateRun
			if a.Namespace != "" {
				run = a.Namespace + "/" + run
			}
			out = append(out, [2]string{run, a.Name})
		}
	}
	return out, nil
}

// kept is what KeepPending leaves to a person, by namespace/name: approval
// requests, and every request of the runs.
type kept struct{ requests, runs map[string]bool }

// keepApprovals names the hub's approval requests, and the runs whose
// status observed their spec's generation (under way before the change,
// which left them as they were).
func keepApprovals(ctx context.Context, h *embedded.Hub) (kept, error) {
	k := kept{requests: map[string]bool{}, runs: map[string]bool{}}
	runs, err := h.ListUpdateRuns(ctx)
	if err != nil {
		return k, err
	}
	for _, r := range runs {
		for _, c := range r.Status.Conditions {
			if c.ObservedGeneration == r.Generation {
				k.runs[r.Namespace+"/"+r.Name] = true
			}
		}
	}
	for _, ns := range namespacesOfRuns(ctx, h) {
		ars, err := h.ListApprovalRequests(ctx, ns, nil)
		if err != nil {
			return k, err
		}
		for _, a := range ars {
			k.requests[a.Namespace+"/"+a.Name] = true
		}
	}
	return k, nil
}

func namespacesOfRuns(ctx context.Context, h *embedded.Hub) []string {
	runs, _ := h.ListUpdateRuns(ctx)
	seen := map[string]bool{}
	var out []string
	for _, r := range runs {
		if !seen[r.Namespace] {
			seen[r.Namespace] = true
			out = append(out, r.Namespace)
		}
	}
	return out
}

func approved(a *fleet.ApprovalRequest) bool {
	for _, c := range a.Status.Conditions {
		if c.Type == fleet.ApprovalRequestConditionApproved && c.Status == metav1.ConditionTrue && c.ObservedGeneration == a.Generation {
			return true
		}
	}
	return false
}
