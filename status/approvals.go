package status

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// ApprovedCopy returns a copy of a with the Approved condition that
// `kubectl fleet approve` writes (spec §4.2): status True, reason and message
// by scope, and — the detail people get wrong by hand — observedGeneration
// equal to the request's metadata.generation, without which the engine
// ignores the approval. A request read without a generation is at
// generation 1: the hub creates every request at 1 and its spec is
// immutable. As with the API server, lastTransitionTime moves only when the
// status changes.
func ApprovedCopy(a *fleet.ApprovalRequest, now time.Time) *fleet.ApprovalRequest {
	out := a.DeepCopy()
	gen := out.Generation
	if gen == 0 {
		gen = 1
		out.Generation = 1
	}
	reason, message := fleet.ClusterApprovalRequestApprovedReason, "ClusterApprovalRequest has been approved"
	if out.Namespace != "" {
		reason, message = fleet.ApprovalRequestApprovedReason, "ApprovalRequest has been approved"
	}
	meta.SetStatusCondition(&out.Status.Conditions, metav1.Condition{
		Type:               fleet.ApprovalRequestConditionApproved,
		Status:             metav1.ConditionTrue,
		ObservedGeneration: gen,
		LastTransitionTime: metav1.NewTime(now.UTC().Truncate(time.Second)),
		Reason:             reason,
		Message:            message,
	})
	return out
}
