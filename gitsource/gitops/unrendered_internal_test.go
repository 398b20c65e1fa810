package gitops

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource/ingest"
	"github.com/gitfleet/gitfleet/render/renderproc"
)

// The record of a commit that does not render says why in its Rendered
// condition's reason: a timeout reading or rendering it, the memory
// limit, or anything else.
func TestUnrenderedRecordReason(t *testing.T) {
	now := time.Date(2026, 11, 26, 17, 0, 0, 500, time.UTC)
	c := &object.Commit{Hash: plumbing.Hash{1}, Message: "break it\n\nbody", Author: object.Signature{Name: "Ada", Email: "ada@example.com"}}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{err: errors.New("a.yaml:3: yaml: mapping values are not allowed here"), want: fleet.RenderFailedReason},
		{err: fmt.Errorf("%w after 1m0s reading the commit", ingest.ErrReadTimeout), want: fleet.RenderTimedOutReason},
		{err: fmt.Errorf("render: %w", renderproc.ErrTimeout), want: fleet.RenderTimedOutReason},
		{err: fmt.Errorf("render: %w", renderproc.ErrMemory), want: fleet.RenderMemoryExceededReason},
	} {
		rec := unrenderedRecord(c, tc.err, now)
		cond := rec.Status.Conditions[0]
		if cond.Reason != tc.want || cond.Status != metav1.ConditionFalse || cond.Message != tc.err.Error() {
			t.Errorf("%v: condition %+v; want reason %s", tc.err, cond, tc.want)
		}
		if rec.Name != c.Hash.String() || rec.Spec.Subject != "break it" || rec.Spec.Author != "Ada <ada@example.com>" ||
			!cond.LastTransitionTime.Time.Equal(now.Truncate(time.Second)) {
			t.Errorf("record %+v", rec)
		}
	}
}
