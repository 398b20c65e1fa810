package gitops

import (
	"bytes"
	"context"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/hub"
	"github.com/gitfleet/gitfleet/status"
)

// ownCommitsWalk bounds the walk past gitfleet's own commits to the newest
// commit a person made.
const ownCommitsWalk = 100

// recordSource keeps status/sources/<branch>.yaml (`gitfleet get sources`)
// after each fetch and sync: err is theirs, head what was fetched (zero
// when the fetch failed). The file changes only when what a person acts on
// does: the newest commit of theirs, the commit applied, a failure
// beginning or ending. A failure that goes on keeps the error it began
// with, and a fetch that brings only gitfleet's own commits changes
// nothing, so following the branch never makes status commits by itself.
func (d *Daemon) recordSource(ctx context.Context, head plumbing.Hash, err error) {
	branch := d.src.Branch()
	name := strings.ReplaceAll(branch, "/", ".")
	old := d.sources[name]
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
	applied := d.lastGood
	d.mu.Unlock()
	if c := d.contentCommit(ctx, applied); c != "" {
		src.Status.LastAppliedCommit = c
	}

	now := metav1.NewTime(d.clock.Now().UTC().Truncate(time.Second))
	ready := metav1.Condition{Type: fleet.GitSourceConditionReady, Status: metav1.ConditionTrue, Reason: fleet.GitSourceSucceededReason,
		Message: "fetch and sync succeeded", LastTransitionTime: now}
	prev := meta.FindStatusCondition(src.Status.Conditions, fleet.GitSourceConditionReady)
	if err != nil {
		if prev != nil && prev.Status == metav1.ConditionFalse {
			ready = *prev // the failure goes on: keep its first error and start
		} else {
			ready = metav1.Condition{Type: fleet.GitSourceConditionReady, Status: metav1.ConditionFalse, Reason: fleet.GitSourceFailedReason,
				Message: err.Error(), LastTransitionTime: now}
			src.Status.LastError, src.Status.LastErrorTime = err.Error(), &now
		}
	}
	// SetStatusCondition keeps lastTransitionTime while the status holds.
	meta.SetStatusCondition(&src.Status.Conditions, ready)

	if old != nil {
		a, aerr := status.Encode(old)
		b, berr := status.Encode(src)
		if aerr == nil && berr == nil && bytes.Equal(a, b) {
			return
		}
	}
	d.sources[name] = src
	d.Store.Put(hub.ObjectRef{Kind: fleet.KindGitSource, Key: hub.Key{Name: name}}, src)
	if ferr := d.Store.Flush(ctx, false); ferr != nil && err == nil {
		d.log.Warn("recording the source status failed; it is retried with the next status commit", "err", ferr.Error())
	}
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
	d.personWalk.head, d.personWalk.person = head, person
	return person.String()
}

func (d *Daemon) walkToPerson(ctx context.Context, head plumbing.Hash) (plumbing.Hash, bool) {
	h := head
	for range ownCommitsWalk {
		if h == d.personWalk.head && !h.IsZero() {
			return d.personWalk.person, true
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
	if applied == d.appliedFrom {
		return d.appliedContent
	}
	h, found := applied, ""
	for range ownCommitsWalk {
		c, err := d.src.Commit(ctx, h)
		if err != nil {
			return ""
		}
		if c.NumParents() == 0 || d.needsRender(ctx, c) {
			found = c.Hash.String()
			break
		}
		h = c.ParentHashes[0]
	}
	d.appliedFrom, d.appliedContent = applied, found
	return found
}
