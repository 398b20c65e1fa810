package gitops

import (
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// Ready of the source: a failing fetch comes first and keeps its first
// error while it goes on; a refused tip names its commit and error with
// the commit's reason; each new failure (another error, another refused
// commit) becomes the last error.
func TestSourceReadySaysWhatFails(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 26, 17, 0, 0, 0, time.UTC))
	refused := func(sha, reason, msg string) *fleet.Commit {
		return &fleet.Commit{ObjectMeta: metav1.ObjectMeta{Name: sha}, Status: fleet.CommitStatus{Conditions: []metav1.Condition{
			{Type: fleet.CommitConditionRendered, Status: metav1.ConditionFalse, Reason: reason, Message: msg}}}}
	}
	broken := refused("0c4d11f2e1a567da9a1ee3a00c4d11f2e1a567da", fleet.RenderFailedReason, "a.yaml:3: yaml: mapping values are not allowed here")
	slow := refused("9a1ee3a00c4d11f2e1a567da9a1ee3a00c4d11f2", fleet.RenderTimedOutReason, "render timed out after 1m0s (--render-timeout)")
	condition := func(status metav1.ConditionStatus, reason, msg string) *metav1.Condition {
		return &metav1.Condition{Type: fleet.GitSourceConditionReady, Status: status, Reason: reason, Message: msg}
	}
	fetchFails := condition(metav1.ConditionFalse, fleet.GitSourceFailedReason, "gitsource: fetch: repository not found")
	brokenTip := condition(metav1.ConditionFalse, fleet.RenderFailedReason, "commit 0c4d11f does not render: a.yaml:3: yaml: mapping values are not allowed here")
	for _, tc := range []struct {
		name    string
		prev    *metav1.Condition
		err     error
		refused *fleet.Commit
		want    *metav1.Condition
		began   bool
	}{
		{name: "first sync", want: condition(metav1.ConditionTrue, fleet.GitSourceSucceededReason, "fetch and sync succeeded")},
		{name: "a fetch begins to fail", prev: condition(metav1.ConditionTrue, fleet.GitSourceSucceededReason, "fetch and sync succeeded"),
			err: errors.New("gitsource: fetch: repository not found"), want: fetchFails, began: true},
		{name: "a fetch goes on failing otherwise", prev: fetchFails, err: errors.New("gitsource: fetch: connection refused"), want: fetchFails},
		{name: "the tip does not render", prev: condition(metav1.ConditionTrue, fleet.GitSourceSucceededReason, "fetch and sync succeeded"),
			refused: broken, want: brokenTip, began: true},
		{name: "the same refused tip", prev: brokenTip, refused: broken, want: brokenTip},
		{name: "a fetch fails on a refused tip", prev: brokenTip, err: errors.New("gitsource: fetch: repository not found"), refused: broken,
			want: fetchFails, began: true},
		{name: "the fetch heals, the tip is still refused", prev: fetchFails, refused: broken, want: brokenTip, began: true},
		{name: "another commit is refused", prev: brokenTip, refused: slow,
			want: condition(metav1.ConditionFalse, fleet.RenderTimedOutReason, "commit 9a1ee3a does not render: render timed out after 1m0s (--render-timeout)"), began: true},
		{name: "a fix renders", prev: brokenTip, want: condition(metav1.ConditionTrue, fleet.GitSourceSucceededReason, "fetch and sync succeeded")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, began := sourceReady(tc.prev, tc.err, tc.refused, now)
			if got.Status != tc.want.Status || got.Reason != tc.want.Reason || got.Message != tc.want.Message || began != tc.began {
				t.Errorf("got %s %s %q (began %v), want %s %s %q (began %v)",
					got.Status, got.Reason, got.Message, began, tc.want.Status, tc.want.Reason, tc.want.Message, tc.began)
			}
		})
	}
}
