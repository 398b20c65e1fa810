package gitops

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"k8s.io/apimachinery/pkg/api/meta"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/gitsource/forge"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
	"github.com/gitfleet/gitfleet/reconciler/runview"
	"github.com/gitfleet/gitfleet/status"
)

// forgeSync shows the rollout on the forge: an approval pull request for
// every approval branch gitfleet pushes (withdrawn once the request is
// settled another way), and commit statuses on the commit each run rolls
// out. It only reads the hub, from ForgeCalls' goroutine.
type forgeSync struct {
	calls           *ForgeCalls
	hub             hub.Hub
	src             *gitsource.Source
	clusterStatuses bool

	mu sync.Mutex
	// approvedBy says which commit approved a request, by approval file
	// path, for the comment that withdraws its pull request.
	approvedBy map[string]string
	// sent is the last status set per commit and context: a status commit
	// that changes nothing a status shows costs no API call.
	sent map[string]forge.Status

	// Rollback pull requests (forge_rollback.go): on unless
	// ForgeConfig.NoRollbacks; proposed are the runs done with in this
	// process.
	rollbacks  bool
	plan       func(ctx context.Context, base gitsource.Head, head plumbing.Hash) (string, error)
	onRollback func(outcome string)
	proposed   map[hub.Key]bool
	// notes are the gitfleet.io/rollback annotations the next sync sets.
	notes map[hub.Key]string
}

func newForgeSync(d *Daemon, cfg *ForgeConfig) *forgeSync {
	return &forgeSync{calls: newForgeCalls(cfg, d.log.With("component", "forge")), hub: d.Hub, src: d.src,
		clusterStatuses: cfg.ClusterStatuses, approvedBy: map[string]string{}, sent: map[string]forge.Status{},
		rollbacks: !cfg.NoRollbacks, plan: cfg.Plan, onRollback: cfg.OnRollback, proposed: map[hub.Key]bool{}, notes: map[hub.Key]string{}}
}

// ForgeCalls is how the daemon calls the forge, for other posters (the
// rollout preview comment); nil without a forge.
func (d *Daemon) ForgeCalls() *ForgeCalls {
	if d.forge == nil {
		return nil
	}
	return d.forge.calls
}

// forgeApprovalTaken remembers which commit approved the request in the
// file at p (a pull request's merge or a commit of its own).
func (d *Daemon) forgeApprovalTaken(p string, c *object.Commit) {
	if d.forge == nil || c == nil {
		return
	}
	d.forge.mu.Lock()
	d.forge.approvedBy[p] = fmt.Sprintf("commit %.7s by %s", c.Hash.String(), c.Author.Name)
	d.forge.mu.Unlock()
}

// forgeApprovalBranchPushed opens the pull request from the approval
// branch just pushed into the tracked branch (or brings its title and body
// up to date).
func (d *Daemon) forgeApprovalBranchPushed(key hub.Key, branch string) {
	d.openApprovalPR(key, branch, false)
}

// forgeResume opens the pull requests of the approval requests that wait
// at start (after a restart, or when --forge is turned on while a run
// waits): their branches were pushed by an earlier serve; and proposes
// the rollback of every failed run (ProposeRollback finds its pull
// request again).
func (d *Daemon) forgeResume(ctx context.Context) {
	if d.forge == nil {
		return
	}
	runs, err := d.Hub.ListUpdateRunsWithoutClusters(ctx) // phases and namespaces only
	if err != nil {
		return
	}
	for _, r := range runs {
		if r.Phase() == fleet.PhaseFailed {
			d.ProposeRollback(hub.Key{Namespace: r.Namespace, Name: r.Name}, "") // found again if an earlier serve opened it
		}
	}
	if !d.cfg.PushApprovalBranches {
		return
	}
	namespaces := map[string]bool{"": true}
	for _, r := range runs {
		namespaces[r.Namespace] = true
	}
	for ns := range namespaces {
		ars, err := d.Hub.ListApprovalRequests(ctx, ns, nil)
		if err != nil {
			continue
		}
		for _, ar := range ars {
			if meta.FindStatusCondition(ar.Status.Conditions, fleet.ApprovalRequestConditionApproved) != nil {
				continue
			}
			p, err := status.PathFor(ar)
			if err != nil {
				continue
			}
			d.openApprovalPR(hub.Key{Namespace: ar.Namespace, Name: ar.Name}, gitsource.ApproveBranchPrefix+approvalBranchName(p), true)
		}
	}
}

// openApprovalPR opens (or updates) the pull request from branch for the
// approval request key. resumed: the branch was pushed by an earlier serve
// and may be gone (deleted by hand, or never pushed with
// --no-approval-branches); a pull request the forge then refuses to open is
// given up, not retried.
func (d *Daemon) openApprovalPR(key hub.Key, branch string, resumed bool) {
	if d.forge == nil {
		return
	}
	base := d.src.Branch()
	d.forge.calls.Do("pull-request/"+branch, ForgeOpPullRequest, func(ctx context.Context, f forge.Forge) error {
		info, err := approvalInfoFor(ctx, d.forge.hub, key, d.clock.Now())
		if hub.IsNotFound(err) {
			return nil // settled and gone before its pull request was opened
		}
		if err != nil {
			return err
		}
		title, body := info.title(), info.body()
		pr, created, err := forge.EnsurePR(ctx, f, branch, base, title, body)
		if class := forge.Class(err); resumed && (class == forge.ClassNotFound || class == forge.ClassRejected) {
			d.log.Warn("approval pull request not opened: the forge refuses it (is the branch gone?); approve with gitfleet approve instead",
				"approval_request", key.Name, "branch", branch, "err", err.Error())
			return nil
		}
		if err != nil {
			return err
		}
		if !created && (pr.Title != title || pr.Body != body) {
			if err := f.EditPR(ctx, pr.Number, title, body); err != nil {
				return err
			}
		}
		if created {
			d.log.Info("approval pull request opened; merging it approves", "approval_request", key.Name, "pull_request", pr.URL)
		}
		return nil
	})
}

// forgeApprovalSettled withdraws the pull request of the approval request
// whose file is at p, now settled (approved some other way, or deleted
// with its run): it says why in a comment, closes the pull request and
// deletes the branch. A merged pull request is not open any more, and only
// its branch is deleted. It reports false without a forge: the caller
// deletes the branch itself.
func (d *Daemon) forgeApprovalSettled(p string, deleted bool) bool {
	if d.forge == nil {
		return false
	}
	name := approvalBranchName(p)
	branch := gitsource.ApproveBranchPrefix + name
	base := d.src.Branch()
	ref, _ := status.RefFor(p)
	// Each step is done once, even when a later one fails and the call is
	// retried: one comment, however often the forge fails.
	var commented, closed bool
	var why string
	d.forge.calls.Do("pull-request/"+branch, ForgeOpWithdraw, func(ctx context.Context, f forge.Forge) error {
		if !closed {
			if why == "" {
				why = d.withdrawReason(p, ref.Name, deleted)
			}
			pr, open, err := forge.FindPR(ctx, f, branch, base)
			if err != nil {
				return err
			}
			if open && !commented {
				if err := f.CreateComment(ctx, pr.Number, why); err != nil {
					return err
				}
				commented = true
			}
			if open {
				if err := f.ClosePR(ctx, pr.Number); err != nil {
					return err
				}
				d.log.Info("approval pull request closed: the request was settled without it", "branch", branch, "pull_request", pr.URL)
			}
			closed = true
		}
		return d.src.DeleteBranch(ctx, name)
	})
	return true
}

// withdrawReason is the comment that closes the pull request of the
// settled request name (file p).
func (d *Daemon) withdrawReason(p, name string, deleted bool) string {
	if deleted {
		return fmt.Sprintf("The run of approval request `%s` was deleted, and the request with it: there is nothing "+
			"left to approve. gitfleet closes this pull request and deletes its branch.", name)
	}
	// The sync that took the approval names its commit once it is done;
	// the engine may have accepted the approval (and settled the request)
	// before that, so wait for the sync to finish.
	d.mu.Lock()
	d.mu.Unlock()
	d.forge.mu.Lock()
	by := d.forge.approvedBy[p]
	delete(d.forge.approvedBy, p)
	d.forge.mu.Unlock()
	if by != "" {
		by = " (" + by + ")"
	}
	return fmt.Sprintf("Approval request `%s` was approved without this pull request%s, for example with `gitfleet approve "+
		"--commit`, and gitfleet took that approval. gitfleet closes this pull request and deletes its branch: merging it "+
		"now would conflict.", name, by)
}

// forgeStatusesChanged sets the commit statuses of the runs whose status
// files a status commit changed.
func (d *Daemon) forgeStatusesChanged(ch status.Changeset) {
	if d.forge == nil {
		return
	}
	runs := map[hub.Key]bool{}
	for _, p := range ch.WritePaths() {
		// A part file of a large run counts too.
		if ref, err := status.RefFor(p); err == nil && ref.Kind == fleet.UpdateRunKind(ref.Namespace) {
			runs[hub.Key{Namespace: ref.Namespace, Name: ref.Name}] = true
		}
	}
	for key := range runs {
		d.forge.calls.Do("commit-status/"+key.String(), ForgeOpStatus, func(ctx context.Context, f forge.Forge) error {
			run, err := d.forge.setStatuses(ctx, f, key)
			if run != nil && run.Phase() == fleet.PhaseFailed {
				d.ProposeRollback(key, "")
			}
			return err
		})
	}
}

// RenderStatusContext is the commit status context of a commit that does
// not render. Run contexts always have a slash (gitfleet/<run>), so no run
// can take it.
const RenderStatusContext = "gitfleet"

// forgeRefused marks the commit of rec, which did not render, with a failed
// commit status whose description is the error (file and line first).
func (d *Daemon) forgeRefused(rec *fleet.Commit) {
	if d.forge == nil {
		return
	}
	st := RefusedStatus(rec)
	sha := rec.Name
	d.forge.calls.Do("commit-status/"+sha+"/render", ForgeOpStatus, func(ctx context.Context, f forge.Forge) error {
		return f.SetStatus(ctx, sha, st)
	})
}

// RefusedStatus is the commit status of a commit that does not render:
// failure, "does not render: <file:line: error>" (render's "render: "
// prefix dropped, so that the file fits in the 140 characters).
func RefusedStatus(rec *fleet.Commit) forge.Status {
	msg := "does not render"
	if c := meta.FindStatusCondition(rec.Status.Conditions, fleet.CommitConditionRendered); c != nil {
		msg += ": " + strings.TrimPrefix(c.Message, "render: ")
	}
	return forge.Status{Context: RenderStatusContext, State: forge.Failure, Description: oneLine(msg)}
}

// setStatuses sets the run's statuses on the commit its snapshot came
// from, skipping the ones the forge already shows. It returns the run it
// read (nil when it is gone).
func (s *forgeSync) setStatuses(ctx context.Context, f forge.Forge, key hub.Key) (*fleet.UpdateRun, error) {
	run, err := s.hub.GetUpdateRun(ctx, key)
	if hub.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sha, err := snapshotCommit(ctx, s.hub, run)
	if err != nil || sha == "" {
		return run, err // a snapshot without a commit: nothing to put it on
	}
	statuses := []forge.Status{RunStatus(run)}
	if s.clusterStatuses {
		statuses = append(statuses, ClusterStatuses(run)...)
	}
	for _, st := range statuses {
		k := sha + " " + st.Context
		s.mu.Lock()
		same := s.sent[k] == st
		s.mu.Unlock()
		if same {
			continue
		}
		if err := f.SetStatus(ctx, sha, st); err != nil {
			return run, err
		}
		s.mu.Lock()
		s.sent[k] = st
		s.mu.Unlock()
	}
	return run, nil
}

// snapshotCommit is the commit the run's resource snapshot was recorded
// from ("" when it has none: not initialized yet, or made from the hub).
func snapshotCommit(ctx context.Context, h hub.Hub, run *fleet.UpdateRun) (string, error) {
	if run.Status.ResourceSnapshotIndexUsed == "" {
		return "", nil
	}
	snaps, err := h.ListResourceSnapshots(ctx, hub.Key{Namespace: run.Namespace, Name: run.Spec.PlacementName})
	if err != nil {
		return "", err
	}
	g, _ := resourcesnapshot.Of(snaps).Find(run.Status.ResourceSnapshotIndexUsed)
	return g.Commit(), nil
}

// statusContext is the status context of a run: gitfleet/<run>, or
// gitfleet/<namespace>/<run> for a namespaced one. Each run has its own,
// so runs never overwrite each other's status.
func statusContext(run *fleet.UpdateRun) string {
	if run.Namespace != "" {
		return "gitfleet/" + run.Namespace + "/" + run.Name
	}
	return "gitfleet/" + run.Name
}

// RunStatus is the commit status of a run: pending while it runs or
// waits, success once it succeeded, failure once it failed; the
// description says where it is (runview's reading), as "stage 2/3 canary:
// 1 of 2 clusters" or "deletion stage: 0 of 1 clusters".
func RunStatus(run *fleet.UpdateRun) forge.Status {
	st := forge.Status{Context: statusContext(run), State: forge.Pending}
	v := runview.Of(run)
	where := ""
	if s := v.Stage(); s != nil {
		where = stageProgress(v, *s)
	} else if v.Updates > 0 {
		// Done: the last update stage says how many clusters.
		where = stageProgress(v, v.Stages[v.Updates-1])
	}
	switch phase := v.Phase; phase {
	case fleet.PhaseSucceeded:
		st.State = forge.Success
		st.Description = "succeeded: " + where
		if c := meta.FindStatusCondition(run.Status.Conditions, fleet.StagedUpdateRunConditionSucceeded); c != nil && c.Reason == fleet.UpdateRunPartiallySucceededReason {
			st.Description = "partially succeeded: " + where // clusters failed within the failure budget
		}
	case fleet.PhaseFailed, fleet.PhaseInitFailed:
		st.State = forge.Failure
		st.Description = "failed"
		if where != "" {
			st.Description += " in " + where
		}
	case fleet.PhaseWaiting:
		st.Description = "waiting"
		if where != "" {
			st.Description = where + ", " + waitingFor(v.Waiting)
		}
	case fleet.PhaseInitializing, fleet.PhaseInitialized:
		st.Description = strings.ToLower(phase)
	default:
		st.Description = where
		if phase != fleet.PhaseProgressing {
			st.Description += ", " + strings.ToLower(phase)
		}
	}
	st.Description = oneLine(st.Description)
	return st
}

// stageProgress is "stage 2/3 canary: 1 of 2 clusters", or for the
// deletion stage "deletion stage: 0 of 1 clusters".
func stageProgress(v runview.View, s runview.Stage) string {
	if s.Deletion {
		return fmt.Sprintf("deletion stage: %d of %d clusters", s.Done, s.Total)
	}
	return fmt.Sprintf("stage %d/%d %s: %d of %d clusters", s.Number, v.Updates, s.Name, s.Done, s.Total)
}

// waitingFor names what a waiting run waits on: the approval requests a
// person must approve first, else "waiting" (a timed wait).
func waitingFor(w runview.Waiting) string {
	if w.For == runview.WaitApproval {
		return "waiting for approval " + strings.Join(w.Approvals, ", ")
	}
	return "waiting"
}

// ClusterStatuses are the per-cluster commit statuses of a run
// (gitfleet/<run>/<cluster>), for --forge-cluster-statuses.
func ClusterStatuses(run *fleet.UpdateRun) []forge.Status {
	var out []forge.Status
	v := runview.Of(run)
	for _, s := range v.Stages[:v.Updates] {
		for _, c := range s.Clusters {
			st := forge.Status{Context: statusContext(run) + "/" + c.Name, State: forge.Pending,
				Description: "waiting for stage " + s.Name}
			switch c.State {
			case runview.ClusterSucceeded:
				st.State, st.Description = forge.Success, "updated in stage "+s.Name
			case runview.ClusterFailed:
				st.State, st.Description = forge.Failure, "failed in stage "+s.Name+": "+c.Message
			case runview.ClusterUpdating:
				st.Description = "updating in stage " + s.Name
			case runview.ClusterSkipped:
				st.State, st.Description = forge.Error, "skipped in stage "+s.Name+": "+c.Message
			}
			st.Description = oneLine(st.Description)
			out = append(out, st)
		}
	}
	return out
}

// oneLine fits a status description: one line, 140 characters at most
// (forges cut or refuse longer ones).
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 140 {
		s = string(r[:139]) + "…"
	}
	return s
}
