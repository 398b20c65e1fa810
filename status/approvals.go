package status

import (
	"fmt"
	"strings"
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

// ApprovedBy is the value of fleet.ApprovedByAnnotation for an approval
// made by the commit hash (abbreviated) authored by name <email>; merge
// says it is a merge commit: "Alice <alice@example.com> (merge commit
// abc1234)".
func ApprovedBy(name, email, hash string, merge bool) string {
	what := "commit"
	if merge {
		what = "merge commit"
	}
	return fmt.Sprintf("%s <%s> (%s %s)", name, email, what, hash)
}

// Approver is who approved a, as a page shows it: its
// fleet.ApprovedByAnnotation without the e-mail address ("Alice (merge
// commit abc1234)"), or "" when Git named nobody.
func Approver(a *fleet.ApprovalRequest) string {
	v := a.Annotations[fleet.ApprovedByAnnotation]
	name, rest, ok := strings.Cut(v, " <")
	if !ok {
		return v
	}
	if _, commit, ok := strings.Cut(rest, "> "); ok {
		return name + " " + commit
	}
	return v
}
