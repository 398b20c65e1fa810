package gitops

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/render"
	"github.com/gitfleet/gitfleet/status"
)

// statusPush is the push step: the status tree's Committer. Each
// changeset it is handed goes to Git — status/ to the status branch,
// approvals/ to the tracked branch (people approve by merging into it) —
// and then the approval branch of every new request is pushed, ready for a
// pull request, and those of settled requests are deleted; the forge is
// told (forge.go). The status tree serializes its commits, so the state
// here is the push's own.
type statusPush struct {
	src   *gitsource.Source
	clock clock.Clock
	log   *slog.Logger
	// branches pushes gitfleet/approve/<name> (Config.PushApprovalBranches).
	branches bool
	forge    pushForge

	// attempts is the number of pushes the last commit took.
	attempts atomic.Int64
	// approved are the approval files whose branch was pushed, and
	// branchGone those whose branch was deleted.
	approved, branchGone map[string]bool
}

// pushForge is what a push tells the forge (forge.go; nothing without a
// forge).
type pushForge interface {
	forgeStatusesChanged(ch status.Changeset)
	forgeApprovalBranchPushed(key hub.Key, branch string)
	forgeApprovalSettled(p string, deleted bool) bool
}

var _ status.Committer = (*statusPush)(nil)

// Commit implements status.Committer.
func (s *statusPush) Commit(ctx context.Context, ch status.Changeset, message string, _ bool) error {
	statusPart, approvalPart := split(ch, render.ApprovalsDir+"/")
	sameBranch := s.src.StatusBranch() == "" || s.src.StatusBranch() == s.src.Branch()
	apply := func(c gitsource.Change) error {
		res, err := s.src.Apply(ctx, c)
		if int64(res.Attempts) > s.attempts.Load() {
			s.attempts.Store(int64(res.Attempts))
		}
		return err
	}
	if sameBranch {
		if err := apply(gitsource.Change{Message: message, Writes: ch.Writes, Deletes: ch.Deletes}); err != nil {
			return err
		}
	} else {
		if !statusPart.Empty() {
			if err := apply(gitsource.Change{Branch: s.src.StatusBranch(), Message: message,
				Writes: statusPart.Writes, Deletes: statusPart.Deletes}); err != nil {
				return err
			}
		}
		if !approvalPart.Empty() {
			if err := apply(gitsource.Change{Message: status.ApprovalsMessage(approvalPart, message, s.src.StatusBranch()),
				Writes: approvalPart.Writes, Deletes: approvalPart.Deletes}); err != nil {
				return err
			}
		}
	}
	if s.branches {
		s.pushApprovalBranches(ctx, approvalPart)
		s.deleteSettledBranches(ctx, approvalPart)
	}
	s.forge.forgeStatusesChanged(ch)
	return nil
}

// takeAttempts returns the number of pushes the last commit took and
// starts counting again.
func (s *statusPush) takeAttempts() int { return int(s.attempts.Swap(0)) }

// deleteSettledBranches deletes gitfleet/approve/<name> once its request is
// settled: accepted (by merging the branch, by a commit, by any means), or
// gone with its run. A branch left behind invites a merge that conflicts.
func (s *statusPush) deleteSettledBranches(ctx context.Context, ch status.Changeset) {
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
		if s.branchGone[p] {
			continue
		}
		name := approvalBranchName(p)
		if name == "" {
			continue
		}
		if s.forge.forgeApprovalSettled(p, slices.Contains(ch.Deletes, p)) {
			s.branchGone[p] = true // the forge call deletes it, after closing its pull request
			continue
		}
		if err := s.src.DeleteBranch(ctx, name); err != nil {
			s.log.Warn("deleting the approval branch failed; it can be deleted by hand", "branch", gitsource.ApproveBranchPrefix+name, "err", err)
			continue
		}
		s.branchGone[p] = true
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
func (s *statusPush) pushApprovalBranches(ctx context.Context, ch status.Changeset) {
	for _, p := range ch.WritePaths() {
		obj, err := status.Decode(ch.Writes[p])
		if err != nil {
			continue
		}
		ar, ok := obj.(*fleet.ApprovalRequest)
		if !ok || meta.FindStatusCondition(ar.Status.Conditions, fleet.ApprovalRequestConditionApproved) != nil || s.approved[p] {
			continue
		}
		data, err := status.Encode(status.ApprovedCopy(ar, s.clock.Now()))
		if err != nil {
			continue
		}
		name := ar.Name
		if ar.Namespace != "" {
			name = ar.Namespace + "." + ar.Name
		}
		msg := fmt.Sprintf("approve %s\n\nMerging this change approves stage %s of %s.", ar.Name, ar.Spec.TargetStage, ar.Spec.TargetUpdateRun)
		if _, err := s.src.PushBranch(ctx, name, gitsource.Change{Message: msg, Writes: map[string][]byte{p: data}}); err != nil {
			s.log.Warn("pushing the approval branch failed", "approval_request", ar.Name, "err", err)
			continue
		}
		s.approved[p] = true
		s.log.Info("approval requested; merge the branch to approve", "approval_request", ar.Name,
			"branch", gitsource.ApproveBranchPrefix+name, "command", MergeCommand(gitsource.ApproveBranchPrefix+name))
		s.forge.forgeApprovalBranchPushed(hub.Key{Namespace: ar.Namespace, Name: ar.Name}, gitsource.ApproveBranchPrefix+name)
	}
}

// MergeCommand is how a person approves by merging the approval branch
// from a clone: --no-ff, so the merge commit is theirs and gitfleet names
// them as the approver (a fast-forward leaves gitfleet's commit as the
// change, and who approved is lost).
func MergeCommand(branch string) string {
	return "git fetch origin && git merge --no-ff origin/" + branch + " && git push"
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
