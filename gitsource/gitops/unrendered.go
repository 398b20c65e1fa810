package gitops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource/ingest"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/render/renderproc"
	"github.com/gitfleet/gitfleet/status"
)

// A commit that does not render is recorded in status/commits/<sha>.yaml
// (kind Commit, condition Rendered False) and skipped: no snapshot, and the
// hub keeps the fleet objects of the last commit that rendered.

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// recordUnrendered records a commit that did not render: a status file
// (status/commits/<sha>.yaml) with the error, a metric, one log line and,
// with a forge, a failed commit status. The commit is skipped: no
// snapshot, and the hub keeps the fleet objects of the last commit that
// rendered. It returns the record.
func (d *Daemon) recordUnrendered(c *object.Commit, err error) *fleet.Commit {
	rec := unrenderedRecord(c, err, d.clock.Now())
	reason := rec.Status.Conditions[0].Reason
	d.git.unrendered[rec.Name] = rec
	d.Store.Put(hub.ObjectRef{Kind: fleet.KindCommit, Key: hub.Key{Name: rec.Name}}, rec)
	d.log.Error("commit does not render; skipped, the hub keeps the last good fleet objects",
		"commit", short(c.Hash), "reason", reason, "err", err.Error(), "record", "status/commits/"+rec.Name+".yaml")
	if d.cfg.Observer != nil {
		d.cfg.Observer.RenderFailed(c, reason)
	}
	d.forgeRefused(rec)
	return rec
}

// refusal is the record of the content commit of tip (the newest
// first-parent commit from tip that changed hub content), which failed to
// render with err, for the source status only: nothing is written to
// status/commits/.
func (d *Daemon) refusal(ctx context.Context, tip plumbing.Hash, err error) *fleet.Commit {
	h := tip
	if c := d.walkToContent(ctx, tip); c != "" {
		h = plumbing.NewHash(c)
	}
	c, cerr := d.src.Commit(ctx, h)
	if cerr != nil {
		c = &object.Commit{Hash: h}
	}
	return unrenderedRecord(c, err, d.clock.Now())
}

// unrenderedRecord is the status/commits/ record of commit c, which did
// not render with err.
func unrenderedRecord(c *object.Commit, err error, now time.Time) *fleet.Commit {
	reason := fleet.RenderFailedReason
	switch {
	case errors.Is(err, ingest.ErrReadTimeout), errors.Is(err, renderproc.ErrTimeout):
		reason = fleet.RenderTimedOutReason
	case errors.Is(err, renderproc.ErrMemory):
		reason = fleet.RenderMemoryExceededReason
	}
	return &fleet.Commit{
		ObjectMeta: metav1.ObjectMeta{Name: c.Hash.String()},
		Spec: fleet.CommitSpec{
			Subject: firstLine(c.Message),
			Author:  fmt.Sprintf("%s <%s>", c.Author.Name, c.Author.Email),
		},
		Status: fleet.CommitStatus{Conditions: []metav1.Condition{{
			Type: fleet.CommitConditionRendered, Status: metav1.ConditionFalse, Reason: reason,
			Message: err.Error(), LastTransitionTime: metav1.NewTime(now.UTC().Truncate(time.Second)),
		}}},
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// hubStore is the status tree as the embedded hub sees it: every object but
// the daemon's own records (commits that did not render, the source
// status), which Load hands to the daemon instead.
type hubStore struct {
	*status.TreeStore
	unrendered map[string]*fleet.Commit
	sources    map[string]*fleet.GitSource
}

func (s hubStore) Load(ctx context.Context) ([]runtime.Object, error) {
	objs, err := s.TreeStore.Load(ctx)
	hubObjs := objs[:0]
	for _, o := range objs {
		if c, ok := o.(*fleet.Commit); ok {
			s.unrendered[c.Name] = c
			continue
		}
		if src, ok := o.(*fleet.GitSource); ok {
			s.sources[src.Name] = src
			continue
		}
		hubObjs = append(hubObjs, o)
	}
	return hubObjs, err
}
