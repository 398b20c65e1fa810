package gitops

import (
	"errors"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/status"
	"github.com/gitfleet/gitfleet/status/metrics"
)

// MetricsObserver feeds gitfleet's Git-side metrics.
type MetricsObserver struct{ M *metrics.Metrics }

var _ Observer = MetricsObserver{}

// Fetched implements Observer.
func (o MetricsObserver) Fetched(d time.Duration, err error) { o.M.ObserveGitFetch(d, err) }

// Rendered implements Observer.
func (o MetricsObserver) Rendered(d time.Duration) { o.M.ObserveRender(d) }

// RenderFailed implements Observer.
func (o MetricsObserver) RenderFailed(_ *object.Commit, reason string) {
	o.M.ObserveRenderFailure(reason)
}

// Processed implements Observer.
func (o MetricsObserver) Processed(c *object.Commit, snapshots int) {
	o.M.SetLastProcessedCommit(c.Hash.String(), c.Committer.When)
	for range snapshots {
		o.M.ObserveResourceSnapshot()
	}
}

// Pushed implements Observer. A push that had to be re-applied because a
// person pushed meanwhile counts as a conflict, whether it then landed or
// was still rejected after the last attempt.
func (o MetricsObserver) Pushed(_ status.Changeset, lag time.Duration, attempts int, err error) {
	switch {
	case err == nil && attempts <= 1:
		o.M.ObserveStatusPush(metrics.PushSuccess, lag)
	case err == nil, errors.Is(err, gitsource.ErrRejected):
		o.M.ObserveStatusPush(metrics.PushConflict, lag)
	default:
		o.M.ObserveStatusPush(metrics.PushError, lag)
	}
}

// SourceReady implements Observer.
func (o MetricsObserver) SourceReady(name string, ready bool) { o.M.SetSourceReady(name, ready) }
