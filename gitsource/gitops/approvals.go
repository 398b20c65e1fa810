package gitops

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/gitsource/ingest"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/render"
	"github.com/gitfleet/gitfleet/status"
)

// takeApprovals is the step of a sync that reads approvals/ of the tracked
// tip and hands the Approved conditions people merged to the hub
// (ingest.TakeApprovals); a file a commit broke is repaired.
func (d *Daemon) takeApprovals(ctx context.Context, commit plumbing.Hash) error {
	fsys, ars, errs, err := ingest.ReadApprovals(ctx, d.src, commit)
	if err != nil {
		return err
	}
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
	changed, err := d.ingest.TakeApprovals(ctx, ars)
	for _, ar := range changed {
		attrs := []any{"approval_request", ar.Name}
		if ar.Namespace != "" {
			attrs = append(attrs, "namespace", ar.Namespace)
		}
		var by string
		if p, perr := status.PathFor(ar); perr == nil {
			if c := d.lastChange(ctx, commit, p); c != nil {
				attrs = append(attrs, "commit", short(c.Hash), "author", fmt.Sprintf("%s <%s>", c.Author.Name, c.Author.Email))
				d.forgeApprovalTaken(p, c)
				if meta.IsStatusConditionTrue(ar.Status.Conditions, fleet.ApprovalRequestConditionApproved) {
					by = approvedBy(c)
				}
			}
		}
		d.log.Info("approval taken from Git", attrs...)
		// Who approved, on the request itself (an annotation both hubs
		// carry with Annotate): a withdrawn approval names nobody.
		key := hub.Key{Namespace: ar.Namespace, Name: ar.Name}
		if aerr := d.Hub.Annotate(ctx, fleet.ApprovalRequestKind(ar.Namespace), key, fleet.ApprovedByAnnotation, by); aerr != nil && !hub.IsNotFound(aerr) {
			d.log.Warn("recording who approved on the request failed", "approval_request", ar.Name, "err", aerr.Error())
		}
	}
	return err
}

// approvedBy is the ApprovedByAnnotation of an approval c made.
func approvedBy(c *object.Commit) string {
	return status.ApprovedBy(c.Author.Name, c.Author.Email, short(c.Hash), c.NumParents() > 1)
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

// downDepth bounds how far back approvalsChangedWhileDown looks for the
// commit that last changed a request file: further than lastChangeDepth,
// since people may have pushed a while before gitfleet came back.
const downDepth = 1000

// approvalsChangedWhileDown finds the approval request files a person
// changed in Git after gitfleet last wrote them, while no gitfleet was
// running to take the change (an approval merged during a restart), and
// makes the first sync take them as a running gitfleet would have.
//
// At a start the status tree believes every file holds what gitfleet
// wrote, since it read them from Git, so the first sync takes none of them.
// With the embedded hub that is right: the hub was restored from those very
// files. A kube hub keeps its own record; where its Approved condition
// differs from the file's (the only part people write), one side changed
// while gitfleet was down, and the file's history says which. If the newest
// first-parent commit that changed it is a gitfleet status commit, Git
// holds what gitfleet last wrote and the hub moved on (an approval given
// with kubectl): the hub's record is written back. Otherwise a person
// changed the file since (a merge, a commit, gitfleet's approval branch
// merged by fast-forward): it is taken. A file no commit of the last
// downDepth changed counts as gitfleet's. Anyone can write gitfleet's
// commit trailer, but a forged one only makes the file lose to the hub's
// record, never approve anything.
func (d *Daemon) approvalsChangedWhileDown(ctx context.Context, tip plumbing.Hash) error {
	_, ars, _, err := ingest.ReadApprovals(ctx, d.src, tip) // the sync reports and repairs broken files
	if err != nil {
		return err
	}
	var differ []string
	for _, a := range ars {
		cur, err := d.Hub.GetApprovalRequest(ctx, hub.Key{Namespace: a.Namespace, Name: a.Name})
		if hub.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		want := meta.FindStatusCondition(a.Status.Conditions, fleet.ApprovalRequestConditionApproved)
		have := meta.FindStatusCondition(cur.Status.Conditions, fleet.ApprovalRequestConditionApproved)
		if equality.Semantic.DeepEqual(want, have) {
			continue
		}
		if p, err := status.PathFor(a); err == nil {
			differ = append(differ, p)
		}
	}
	if len(differ) == 0 {
		return nil
	}
	changes := d.lastChanges(ctx, tip, differ, downDepth)
	for _, p := range differ {
		c := changes[p]
		if c == nil || isStatusCommit(c) {
			d.log.Info("approval request changed on the hub while gitfleet was down; its record is written to Git", "file", p)
			continue
		}
		d.log.Info("approval request changed in Git while gitfleet was down; taking it", "file", p,
			"commit", short(c.Hash), "author", fmt.Sprintf("%s <%s>", c.Author.Name, c.Author.Email))
		d.Store.Forget(p)
	}
	return nil
}

// isStatusCommit reports whether c is one of gitfleet's writes of the
// status tree (not one of its approval branch commits, which a person's
// merge makes an approval).
func isStatusCommit(c *object.Commit) bool {
	return gitsource.IsOwnCommit(c) && strings.HasPrefix(c.Message, status.MessagePrefix)
}
