package gitops

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/status"
)

// sourceRecord is the source status step's own state: the records of
// status/sources/, and what its walks found last. Only the loop's
// goroutine (follow, Open) records the source.
type sourceRecord struct {
	// sources are status/sources/, by name.
	sources map[string]*fleet.GitSource
	// personWalk is lastPersonCommit's last answer, for the head it was
	// asked about: a walk from a newer head stops there.
	personWalk struct{ head, person plumbing.Hash }
	// appliedFrom and appliedContent memoize contentCommit.
	appliedFrom    plumbing.Hash
	appliedContent string
}

// ownCommitsWalk bounds the walk past gitfleet's own commits to the newest
// commit a person made.
const ownCommitsWalk = 100

// recordSource keeps status/sources/<branch>.yaml (`gitfleet get sources`)
// after each fetch and sync: err is theirs, head what was fetched (zero
// when the fetch failed). Ready is False while the fetch or sync fails, or
// while the tip's hub content does not render (sourceReady). The file
// changes only when what a person acts on does: the newest commit of
// theirs, the commit applied, a failure beginning or ending, another
// commit refused. A failing fetch that goes on keeps the error it began
// with, and a fetch that brings only gitfleet's own commits changes
// nothing, so following the branch never makes status commits by itself.
func (d *Daemon) recordSource(ctx context.Context, head plumbing.Hash, err error) {
	branch := d.src.Branch()
	name := strings.ReplaceAll(branch, "/", ".")
	old := d.source.sources[name]
	src := &fleet.GitSource{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: fleet.GitSourceSpec{URL: d.src.URL(), Branch: branch, StatusBranch: d.src.StatusBranch(), Path: d.cfg.Path}}
	if old != nil {
		src.Status = *old.Status.DeepCopy()
	}
	if !head.IsZero() {
		if c := d.lastPersonCommit(ctx, head); c != "" {
			src.Status.LastFetchedCommit = c
		}
	}
	d.mu.Lock()
	applied, refused := d.git.lastGood, d.git.tipRefused
	d.mu.Unlock()
	if c := d.contentCommit(ctx, applied); c != "" {
		src.Status.LastAppliedCommit = c
	}

	now := metav1.NewTime(d.clock.Now().UTC().Truncate(time.Second))
	prev := meta.FindStatusCondition(src.Status.Conditions, fleet.GitSourceConditionReady)
	ready, began := sourceReady(prev, err, refused, now)
	if began {
		src.Status.LastError, src.Status.LastErrorTime = ready.Message, &now
	}
	// SetStatusCondition keeps lastTransitionTime while the status holds.
	meta.SetStatusCondition(&src.Status.Conditions, ready)
	// A render that runs beside the loop is Reconciling, in kstatus's
	// word: its transition time says since when.
	if commit, since, ok := d.Rendering(); ok {
		meta.SetStatusCondition(&src.Status.Conditions, metav1.Condition{Type: fleet.GitSourceConditionReconciling,
			Status: metav1.ConditionTrue, Reason: fleet.GitSourceRenderingReason,
			Message:            fmt.Sprintf("rendering commit %s", commit.String()[:7]),
			LastTransitionTime: metav1.NewTime(since.UTC().Truncate(time.Second))})
	} else {
		meta.RemoveStatusCondition(&src.Status.Conditions, fleet.GitSourceConditionReconciling)
	}
	if d.cfg.Observer != nil {
		d.cfg.Observer.SourceReady(name, ready.Status == metav1.ConditionTrue)
	}

	if old != nil {
		a, aerr := status.Encode(old)
		b, berr := status.Encode(src)
		if aerr == nil && berr == nil && bytes.Equal(a, b) {
			return
		}
	}
	d.source.sources[name] = src
	d.Store.Put(hub.ObjectRef{Kind: fleet.KindGitSource, Key: hub.Key{Name: name}}, src)
	if ferr := d.Store.Flush(ctx, false); ferr != nil && err == nil {
		d.log.Warn("recording the source status failed; it is retried with the next status commit", "err", ferr.Error())
	}
}

// sourceReady is the Ready condition of the source given the previous one:
// False with GitOperationFailed while the fetch or sync fails (err; a
// failure that goes on keeps its first error, which may change at every
// retry); else False with the refused commit's reason (RenderFailed,
// RenderTimedOut) while the newest commit that changed hub content did not
// render, naming it and its error; else True. began reports a new failure
// (or another refused commit): its message becomes the last error.
// lastTransitionTime is now; SetStatusCondition keeps the previous one
// while the status holds, so False stays "since the first failure".
func sourceReady(prev *metav1.Condition, err error, refused *fleet.Commit, now metav1.Time) (ready metav1.Condition, began bool) {
	ready = metav1.Condition{Type: fleet.GitSourceConditionReady, Status: metav1.ConditionFalse, LastTransitionTime: now}
	switch {
	case err != nil:
		if prev != nil && prev.Status == metav1.ConditionFalse && prev.Reason == fleet.GitSourceFailedReason {
			return *prev, false // the failure goes on: keep its first error and start
		}
		ready.Reason, ready.Message = fleet.GitSourceFailedReason, err.Error()
	case refused != nil:
		ready.Reason, ready.Message = fleet.RenderFailedReason, "does not render"
		if c := meta.FindStatusCondition(refused.Status.Conditions, fleet.CommitConditionRendered); c != nil {
			ready.Reason, ready.Message = c.Reason, c.Message
		}
		ready.Message = fmt.Sprintf("commit %.7s does not render: %s", refused.Name, ready.Message)
	default:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, fleet.GitSourceSucceededReason, "fetch and sync succeeded"
		return ready, false
	}
	began = prev == nil || prev.Status != metav1.ConditionFalse || prev.Reason != ready.Reason || prev.Message != ready.Message
	return ready, began
}

// lastPersonCommit is the newest first-parent commit from head that
// gitfleet did not make (the Gitfleet-Commit trailer: for display only,
// nothing is decided on it); "" when none is near. A walk that reaches the
// head of the previous call takes that call's answer, so following a branch
// that gains a status commit per pass reads only the new commits, not the
// last ownCommitsWalk of them after every fetch.
func (d *Daemon) lastPersonCommit(ctx context.Context, head plumbing.Hash) string {
	person, ok := d.walkToPerson(ctx, head)
	if !ok {
		return ""
	}
	d.source.personWalk.head, d.source.personWalk.person = head, person
	return person.String()
}

func (d *Daemon) walkToPerson(ctx context.Context, head plumbing.Hash) (plumbing.Hash, bool) {
	h := head
	for range ownCommitsWalk {
		if h == d.source.personWalk.head && !h.IsZero() {
			return d.source.personWalk.person, true
		}
		c, err := d.src.Commit(ctx, h)
		if err != nil {
			return plumbing.ZeroHash, false
		}
		if !gitsource.IsOwnCommit(c) {
			return c.Hash, true
		}
		if c.NumParents() == 0 {
			return plumbing.ZeroHash, false
		}
		h = c.ParentHashes[0]
	}
	return plumbing.ZeroHash, false
}

// contentCommit is the newest first-parent commit from applied (the commit
// whose hub content the hub holds) that changed that content: a restart
// renders the tip again — often gitfleet's own status commit, or an
// approval, with the same content — and must not change the source file.
// "" when none is near. The answer is kept for the next call with the same
// applied commit (one per fetch).
func (d *Daemon) contentCommit(ctx context.Context, applied plumbing.Hash) string {
	if applied.IsZero() {
		return ""
	}
	if applied == d.source.appliedFrom {
		return d.source.appliedContent
	}
	found := d.walkToContent(ctx, applied)
	d.source.appliedFrom, d.source.appliedContent = applied, found
	return found
}

// walkToContent is the newest first-parent commit from h that changed hub
// content (or the root), "" when none is within ownCommitsWalk.
func (d *Daemon) walkToContent(ctx context.Context, h plumbing.Hash) string {
	for range ownCommitsWalk {
		c, err := d.src.Commit(ctx, h)
		if err != nil {
			return ""
		}
		if c.NumParents() == 0 || d.needsRender(ctx, c) {
			return c.Hash.String()
		}
		h = c.ParentHashes[0]
	}
	return ""
}
