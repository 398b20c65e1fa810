package gitops

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"k8s.io/apimachinery/pkg/api/meta"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/gitsource/forge"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
	"github.com/gitfleet/gitfleet/reconciler/rollback"
	"github.com/gitfleet/gitfleet/render"
	"github.com/gitfleet/gitfleet/status/metrics"
)

// Outcomes of a rollback proposal, as ForgeConfig.OnRollback hears them
// (the metric's label values).
const (
	RollbackOpened   = metrics.RollbackOpened   // a pull request was opened
	RollbackNoTarget = metrics.RollbackNoTarget // nothing to roll back to: none opened
)

// ProposeRollback opens, once, the pull request that rolls the run key
// back: branch gitfleet/rollback/<run> adds <path>/rollbacks/<run>.yaml, a
// run of the run's placement and strategy at the resource snapshot index
// that last succeeded on the clusters it changed (rollback.Find), with the
// plan of merging it in its body. why says what failed (a metric gate);
// "" is the run's own failure. It is called for every run that ends
// Failed, and may be called for a run a gate failed. Found again, not
// duplicated: a branch an earlier serve pushed keeps its open pull
// request as it is, and gets none once that was closed (declined) or
// merged; once the rollback run or its file is on the tracked branch
// nothing more is done, nor for a run a later run of its placement
// superseded. With nothing to roll back to, no pull request is opened: the
// log and the run's gitfleet.io/rollback annotation say why. Without a
// forge (or with ForgeConfig.NoRollbacks) it does nothing.
func (d *Daemon) ProposeRollback(key hub.Key, why string) {
	if d.forge == nil || !d.forge.rollbacks {
		return
	}
	d.forge.mu.Lock()
	done := d.forge.proposed[key]
	d.forge.mu.Unlock()
	if done {
		return
	}
	var pushed bool // by this call: a retry finds its own branch
	d.forge.calls.Do("rollback/"+key.String(), ForgeOpRollback, func(ctx context.Context, f forge.Forge) error {
		outcome, err := d.proposeRollback(ctx, f, key, why, &pushed)
		if err != nil {
			return err
		}
		d.forge.mu.Lock()
		d.forge.proposed[key] = true
		d.forge.mu.Unlock()
		if outcome != "" && d.forge.onRollback != nil {
			d.forge.onRollback(outcome)
		}
		return nil
	})
}

// proposeRollback is one try of ProposeRollback; it reports what it did
// ("" when there was nothing to do). pushed says the branch was pushed by
// an earlier try of this call.
func (d *Daemon) proposeRollback(ctx context.Context, f forge.Forge, key hub.Key, why string, pushed *bool) (string, error) {
	// Runs are read without their clusters (husks, on a Kubernetes hub
	// from its cache): only the target search reads whole the runs whose
	// clusters it needs.
	h := d.forge.hub
	run, err := h.GetUpdateRunWithoutClusters(ctx, key)
	if hub.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	name := rollback.Name(run.Name)
	if _, err := h.GetUpdateRunWithoutClusters(ctx, hub.Key{Namespace: key.Namespace, Name: name}); err == nil {
		return "", nil // merged: the rollback runs
	} else if !hub.IsNotFound(err) {
		return "", err
	}
	if later, err := d.supersededBy(ctx, run); err != nil {
		return "", err
	} else if later != "" {
		d.log.Info("no rollback pull request: a later run of the placement superseded the failed one", "run", run.Name, "later_run", later)
		return "", nil
	}
	// The tracked branch as the remote has it now, not as the loop last
	// fetched it: a rollback merged meanwhile must not be proposed again.
	head, err := d.src.Head(ctx)
	if err != nil {
		return "", err
	}
	if head.Commit, err = d.src.FetchBranch(ctx, d.src.Branch()); err != nil {
		return "", err
	}
	if sb := d.src.StatusBranch(); sb == "" || sb == d.src.Branch() {
		head.Status = head.Commit
	}
	file := path.Join(d.cfg.Path, rollback.File(run))
	if _, err := d.src.ReadFile(ctx, head.Commit, file); err == nil {
		return "", nil // merged, not applied yet
	}
	t, err := d.rollbackTarget(ctx, run)
	var none *rollback.NoTarget
	if errors.As(err, &none) {
		d.rollbackRefused(run, none.Reason)
		return RollbackNoTarget, nil
	}
	if hub.IsNotFound(err) {
		return "", nil // the run was deleted meanwhile
	}
	if err != nil {
		return "", err
	}
	if kustomized(ctx, d, head.Commit) {
		d.rollbackRefused(run, fmt.Sprintf("%s is built with kustomize, whose resources gitfleet does not edit: "+
			"write the rollback with gitfleet rollback %s and list it in the kustomization", d.cfg.Path, run.Name))
		return RollbackNoTarget, nil
	}
	branch := rollback.Branch(run)
	msg := fmt.Sprintf("roll back %s to resource snapshot %s\n\nMerging this change starts run %s, which rolls placement %s back to resource snapshot %s.",
		run.Name, t.Index, name, run.Spec.PlacementName, t.Index)
	res, err := d.src.PushRollbackBranch(ctx, branch, path.Join(d.cfg.Path, "rollbacks"),
		gitsource.Change{Message: msg, Writes: map[string][]byte{file: rollback.Manifest(run, t, why)}})
	if err != nil {
		return "", err
	}
	prBranch := gitsource.RollbackBranchPrefix + branch
	if !res.Created && !*pushed {
		// An earlier serve pushed the branch: its pull request is open,
		// and left as it is (it may be merged any moment), or it was
		// closed, which declines the rollback, or merged.
		if _, open, err := forge.FindPR(ctx, f, prBranch, d.src.Branch()); err != nil || open {
			return "", err
		}
		d.log.Info("no rollback pull request: the branch's was closed or merged (delete the branch to have it proposed again)", "run", run.Name, "branch", prBranch)
		return "", nil
	}
	*pushed = true
	preview := ""
	if d.forge.plan != nil {
		if preview, err = d.forge.plan(ctx, head, res.Commit); err != nil {
			preview = fmt.Sprintf("gitfleet could not compute the plan: %s\n", err)
		}
	}
	title := fmt.Sprintf("Roll back %s: placement %s to resource snapshot %s", run.Name, run.Spec.PlacementName, t.Index)
	body := rollbackBody(run, t, why, file, preview)
	pr, created, err := forge.EnsurePR(ctx, f, prBranch, d.src.Branch(), title, body)
	if err != nil {
		return "", err
	}
	if !created {
		return "", nil
	}
	d.log.Info("rollback pull request opened; merging it rolls back", "run", run.Name, "resource_snapshot_index", t.Index, "pull_request", pr.URL)
	d.noteRollback(key, fmt.Sprintf("pull request %s rolls back to resource snapshot %s", pr.URL, t.Index))
	return RollbackOpened, nil
}

// supersededBy names a run of run's placement initialized after it (""
// when none), from the hub's runs without their clusters.
func (d *Daemon) supersededBy(ctx context.Context, run *fleet.UpdateRun) (string, error) {
	runs, err := d.forge.hub.ListUpdateRunsWithoutClusters(ctx)
	if err != nil {
		return "", err
	}
	return rollback.SupersededBy(run, runs), nil
}

// rollbackTarget finds what run rolls back to from the hub's runs, its
// placement's rejections and the snapshots still recorded. It reads whole
// run (what it changed) and the runs rollback.FindReading checks, no
// other: a finished run of 1,000 clusters is 400 KB from a Kubernetes
// hub's API server.
func (d *Daemon) rollbackTarget(ctx context.Context, run *fleet.UpdateRun) (rollback.Target, error) {
	h := d.forge.hub
	key := hub.Key{Namespace: run.Namespace, Name: run.Name}
	run, err := h.GetUpdateRun(ctx, key)
	if err != nil {
		return rollback.Target{}, err
	}
	runs, err := h.ListUpdateRunsWithoutClusters(ctx)
	if err != nil {
		return rollback.Target{}, err
	}
	pk := hub.Key{Namespace: run.Namespace, Name: run.Spec.PlacementName}
	var rejected map[string]string
	if p, err := h.GetPlacement(ctx, pk); err == nil {
		rejected = fleet.RejectedSnapshots(p.Annotations)
	} else if !hub.IsNotFound(err) {
		return rollback.Target{}, err
	}
	snaps, err := h.ListResourceSnapshots(ctx, pk)
	if err != nil {
		return rollback.Target{}, err
	}
	groups := resourcesnapshot.Of(snaps)
	whole := func(r *fleet.UpdateRun) (*fleet.UpdateRun, error) {
		w, err := h.GetUpdateRun(ctx, hub.Key{Namespace: r.Namespace, Name: r.Name})
		if hub.IsNotFound(err) {
			return nil, nil // deleted since it was listed
		}
		return w, err
	}
	return rollback.FindReading(run, runs, whole, rejected, func(i string) bool { _, ok := groups.Find(i); return ok })
}

// rollbackRefused records why run gets no rollback pull request: a log
// line and the run's gitfleet.io/rollback annotation.
func (d *Daemon) rollbackRefused(run *fleet.UpdateRun, reason string) {
	d.log.Warn("no rollback pull request: nothing to roll back to", "run", run.Name, "reason", reason)
	d.noteRollback(hub.Key{Namespace: run.Namespace, Name: run.Name}, "none: "+reason)
}

// noteRollback has the next sync set the run's gitfleet.io/rollback
// annotation: the hub is written in passes (a sync is one), never from
// the forge's goroutine.
func (d *Daemon) noteRollback(key hub.Key, note string) {
	d.forge.mu.Lock()
	d.forge.notes[key] = note
	d.forge.mu.Unlock()
}

// applyRollbackNotes annotates the runs noteRollback noted; it reports
// whether it wrote the hub (the sync then commits a pass).
func (d *Daemon) applyRollbackNotes(ctx context.Context) bool {
	if d.forge == nil {
		return false
	}
	d.forge.mu.Lock()
	notes := d.forge.notes
	d.forge.notes = map[hub.Key]string{}
	d.forge.mu.Unlock()
	wrote := false
	for key, note := range notes {
		err := d.Hub.Annotate(ctx, fleet.UpdateRunKind(key.Namespace), key, fleet.RollbackAnnotation, note)
		switch {
		case err == nil:
			wrote = true
		case !hub.IsNotFound(err):
			d.log.Warn("noting the rollback on the run failed", "run", key.Name, "err", err.Error())
		}
	}
	return wrote
}

// kustomized reports whether the hub content folder is a kustomize build
// at commit.
func kustomized(ctx context.Context, d *Daemon, commit plumbing.Hash) bool {
	for _, n := range render.KustomizationNames {
		if _, err := d.src.ReadFile(ctx, commit, path.Join(d.cfg.Path, n)); err == nil {
			return true
		}
	}
	return false
}

// rollbackBody is the rollback pull request's description, in Markdown.
func rollbackBody(run *fleet.UpdateRun, t rollback.Target, why, file, preview string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	if why == "" {
		why = "it failed"
		if c := meta.FindStatusCondition(run.Status.Conditions, fleet.StagedUpdateRunConditionSucceeded); c != nil && c.Message != "" {
			why = "it failed: " + c.Message
		}
	}
	w("Run `%s` rolled out resource snapshot %s of placement `%s`, and %s\n\n", run.Name, run.Status.ResourceSnapshotIndexUsed, run.Spec.PlacementName, why)
	w("Merging this pull request adds `%s`: run `%s` rolls the placement back to resource snapshot **%s**", file, rollback.Name(run.Name), t.Index)
	w(", the last that succeeded on %s (run `%s`), through strategy `%s`: the same stages, approvals and gates as any run.\n\n",
		strings.Join(t.Clusters, ", "), t.From, run.Spec.StagedUpdateStrategyName)
	w("gitfleet opens it once for this run, and not again once it is closed. To decline, close it; to keep snapshot %s from ever being "+
		"rolled out again, reject it on the placement (`%s: <reason>`).\n", run.Status.ResourceSnapshotIndexUsed,
		fleet.RejectedSnapshotAnnotation(run.Status.ResourceSnapshotIndexUsed))
	if preview != "" {
		w("\n%s", preview)
	}
	return b.String()
}
