package kube

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

// work is one binding's delivery as it moves through the workers: applied
// once, then checked until healthy.
type work struct {
	context  string
	delivery member.Delivery
	// applied holds the objects as applied, nil until the apply succeeded;
	// labels select them on the member.
	applied []*unstructured.Unstructured
	live    map[string]*unstructured.Unstructured
	// left is what prunes of the placement left on the member (prune:
	// disabled), named in every report once applied.
	left []fleet.ResourceIdentifier
	// drifted are the drifts the apply found in fields others set
	// (FullComparison), named in every report once applied.
	drifted []fleet.DriftedResourcePlacement
	// failing is set (under Clusters.mu) while the last attempt failed;
	// settled while the delivery waits for its next drift check.
	failing, settled bool
}

func (c *Clusters) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	c.process(ctx, key)
	return true
}

// process takes one step of a binding's delivery and decides when the
// next one comes: after a backoff when it failed, after PollInterval while
// objects are becoming healthy, after DriftCheckInterval once all are
// Current or the strategy held objects back (the periodic drift check: the
// delivery is taken again from the start, compared with what the member
// holds, and re-applied where the strategy says so), never when the
// drift check is off.
func (c *Clusters) process(ctx context.Context, key hub.Key) {
	unlock := c.bindings.lock(key)
	defer unlock()
	c.mu.Lock()
	w := c.work[key]
	c.mu.Unlock()
	if w == nil {
		c.queue.Forget(key)
		return
	}
	st, err := c.step(ctx, w)

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.work[key] != w {
		return // replaced meanwhile; the newer delivery is queued
	}
	w.failing = err != nil || st == unhealthy || st == held
	w.settled = err == nil && (st == healthy || st == held)
	switch {
	case err != nil:
		c.log.Info("delivery failed, retrying", "binding", hub.KeyString(key), "context", w.context,
			"attempt", c.queue.NumRequeues(key)+1, "err", err)
		c.queue.AddRateLimited(key)
	case w.settled && c.opts.DriftCheckInterval > 0:
		// The next pass starts over: read, compare, apply what may be.
		w.applied, w.live, w.drifted = nil, nil, nil
		c.queue.Forget(key)
		c.queue.AddAfter(key, c.opts.DriftCheckInterval)
	case w.settled:
		delete(c.work, key)
		c.queue.Forget(key)
	default:
		c.queue.Forget(key)
		c.queue.AddAfter(key, c.opts.PollInterval)
	}
}

// state is where a delivery stands after a step.
type state int

const (
	progressing state = iota // applying, or objects becoming Current
	healthy                  // every object Current; Available reported
	unhealthy                // an object kstatus calls Failed
	// held: the strategy held objects back (drifted, not taken over);
	// Applied=False until a drift check finds them applicable.
	held
)

// step applies w (unless it already was) and reports its health.
func (c *Clusters) step(ctx context.Context, w *work) (state, error) {
	d := w.delivery
	gen := d.Generation()
	base := []metav1.Condition{member.Overridden(d.Binding), member.WorkSynchronized(gen)}
	fail := func(err error, failed []fleet.FailedResourcePlacement) error {
		msg := fmt.Sprintf("Work object %s is not applied: member cluster %q: %v", d.WorkName(), d.Cluster(), err)
		cond := metav1.Condition{Type: fleet.ResourceBindingApplied, Status: metav1.ConditionFalse,
			Reason: member.WorkNotAppliedReason, Message: msg, ObservedGeneration: gen}
		if rerr := c.reporter.ReportBindingStatus(d.Key(), gen, append(base, cond), member.Failed(d.Envelopes.Name(failed))); rerr != nil {
			return errors.Join(err, rerr)
		}
		return err
	}

	cl, err := c.cluster(w.context)
	if err != nil {
		return progressing, fail(err, nil)
	}
	ctx, cancel := context.WithTimeout(ctx, 4*c.opts.RequestTimeout)
	defer cancel()

	if w.applied == nil {
		if d.ReportsDiff() {
			return cl.reportDiffStep(ctx, c.reporter, d, base)
		}
		objs, live, left, out, err := cl.apply(ctx, d, nil)
		if err != nil {
			var failed []fleet.FailedResourcePlacement
			var ae *applyError
			if errors.As(err, &ae) && ae.object != nil {
				failed = append(failed, member.FailedPlacement(ae.object, fleet.ResourceBindingApplied,
					member.ManifestApplyFailedReason, cl.redact(ae.err).Error(), gen))
			}
			err = cl.redact(err)
			return progressing, fail(fmt.Errorf("kubeconfig context %q: %w", w.context, err), failed)
		}
		if len(out.held) > 0 {
			// KubeFleet's work generator: Applied=False names the work;
			// the held objects say why, with their drifts or diffs.
			c.log.Info("objects held back by the apply strategy", "binding", d.Key().String(), "context", w.context, "held", len(out.held))
			cond := metav1.Condition{Type: fleet.ResourceBindingApplied, Status: metav1.ConditionFalse,
				Reason: member.WorkNotAppliedReason, Message: fmt.Sprintf(member.WorkFailedToApplyMessageFmt, d.WorkName()), ObservedGeneration: gen}
			return held, c.reporter.ReportBindingStatus(d.Key(), gen, member.WithPruneSkipped(append(base, cond), gen, left.sorted()), out.Placements)
		}
		w.applied, w.live, w.left, w.drifted = objs, live, left.sorted(), out.Drifted
		c.log.Debug("applied", "binding", d.Key().String(), "context", w.context, "resources", len(objs))
	}

	conds := member.WithPruneSkipped(append(base, member.Applied(gen)), gen, w.left)
	live := w.live
	w.live = nil // read fresh on every later poll
	if live == nil {
		live, err = cl.list(ctx, w.applied, ownerLabels(d))
	}
	var h health
	if err == nil {
		h, err = healthOf(w.applied, live, gen)
	}
	if err != nil {
		err = cl.redact(err)
		cond := member.NotYetAvailable(gen, d.WorkName())
		cond.Message += fmt.Sprintf(": member cluster %q: kubeconfig context %q: %v", d.Cluster(), w.context, err)
		if rerr := c.reporter.ReportBindingStatus(d.Key(), gen, append(conds, cond), member.Placements{Drifted: w.drifted}); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return progressing, err
	}
	switch {
	case len(h.notCurrent) == 0:
		return healthy, c.reporter.ReportBindingStatus(d.Key(), gen, append(conds, member.Available(gen)), member.Placements{Drifted: w.drifted})
	case h.failed:
		return unhealthy, c.reporter.ReportBindingStatus(d.Key(), gen, append(conds, member.NotAvailable(gen, d.WorkName())),
			member.Placements{Failed: d.Envelopes.Name(h.notCurrent), Drifted: w.drifted})
	default:
		return progressing, c.reporter.ReportBindingStatus(d.Key(), gen, append(conds, member.NotYetAvailable(gen, d.WorkName())),
			member.Placements{Failed: d.Envelopes.Name(h.notCurrent), Drifted: w.drifted})
	}
}

// reportDiffStep is one pass of the ReportDiff apply strategy: the diff of
// every object against the member, reported with DiffReported (False,
// KubeFleet's NotAllWorkHaveDiffReported, when it could not be computed).
func (cl *cluster) reportDiffStep(ctx context.Context, r member.Reporter, d member.Delivery, base []metav1.Condition) (state, error) {
	gen := d.Generation()
	diffed, err := cl.reportDiff(ctx, d, fleet.DefaultApplyStrategy(d.Binding.Spec.ApplyStrategy))
	if err != nil {
		err = cl.redact(err)
		if rerr := r.ReportBindingStatus(d.Key(), gen, append(base, member.NotDiffReported(gen, d.WorkName())), member.Placements{}); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return progressing, err
	}
	return healthy, r.ReportBindingStatus(d.Key(), gen, append(base, member.DiffReported(gen)), member.Placements{Diffed: diffed})
}
