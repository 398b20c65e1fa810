package ingest

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// takeApprovals takes the people's part of every approval request file in
// Git — the Approved condition, as merged — into the hub. Everything else in
// those files is gitfleet's (the spec is immutable, ApprovalAccepted is
// written by the engine), so only Approved is read back. It returns the
// names of the requests whose approval changed.
func takeApprovals(ctx context.Context, h Hub, fromGit []*fleet.ApprovalRequest) ([]*fleet.ApprovalRequest, error) {
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
