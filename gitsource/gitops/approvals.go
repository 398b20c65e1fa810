package gitops

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/render"
	"github.com/gitfleet/gitfleet/status"
)

// syncApprovals takes the people's part of every approval request file in
// Git — the Approved condition, as merged — into the hub. Everything else in
// those files is gitfleet's (the spec is immutable, ApprovalAccepted is
// written by the engine), so only Approved is read back. It returns the
// names of the requests whose approval changed.
func syncApprovals(ctx context.Context, h admitHub, fromGit []*fleet.ApprovalRequest) ([]*fleet.ApprovalRequest, error) {
	var changed []*fleet.ApprovalRequest
	for _, g := range fromGit {
		key := hub.Key{Namespace: g.Namespace, Name: g.Name}
		cur, err := h.GetApprovalRequest(ctx, key)
		if err != nil {
			if hub.IsNotFound(err) {
				// A file gitfleet did not create (or whose run is gone)
				// approves nothing.
				continue
			}
			return changed, err
		}
		want := meta.FindStatusCondition(g.Status.Conditions, fleet.ApprovalRequestConditionApproved)
		have := meta.FindStatusCondition(cur.Status.Conditions, fleet.ApprovalRequestConditionApproved)
		if equality.Semantic.DeepEqual(want, have) {
			continue
		}
		next := cur.DeepCopy()
		if want == nil {
			meta.RemoveStatusCondition(&next.Status.Conditions, fleet.ApprovalRequestConditionApproved)
		} else {
			// Keep the person's condition verbatim (observedGeneration
			// included): a wrong generation must stay visible, so the
			// engine can explain why it is ignored.
			meta.RemoveStatusCondition(&next.Status.Conditions, fleet.ApprovalRequestConditionApproved)
			next.Status.Conditions = append([]metav1.Condition{*want}, next.Status.Conditions...)
		}
		if err := h.ApplyApprovalRequestStatus(ctx, next); err != nil {
			return changed, err
		}
		// A person's edit was taken: a note that an earlier one was not
		// is history now.
		if err := h.Annotate(ctx, fleet.ApprovalRequestKind(key.Namespace), key, fleet.RejectedChangeAnnotation, ""); err != nil {
			return changed, err
		}
		changed = append(changed, g)
	}
	return changed, nil
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
	fsys, err := DirFS(ctx, d.src, tip, render.ApprovalsDir)
	if err != nil {
		return err
	}
	ars, _ := render.ReadApprovals(fsys, render.ApprovalsDir) // the sync reports and repairs broken files
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
