package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/condmsg"
	"github.com/gitfleet/gitfleet/reconciler/delivery"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

// work is one binding's delivery as it moves through the workers: its
// Works applied once, then checked until healthy.
type work struct {
	context  string
	delivery member.Delivery
	// applied holds each Work's last apply, nil until every Work applied
	// (none refused, none held back).
	applied []workResult
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
		w.applied = nil
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

// step applies w's Works (unless they already were) and reports on the
// binding from their status as for a member that pulls them
// (delivery.Status): the same conditions, reasons and failed, drifted
// and diffed placements. Only what no Work status can say, an error
// reaching the member, is reported as such: Applied=False naming the
// binding's first Work and the cause, capped (condmsg; DiffReported=False
// under ReportDiff).
func (c *Clusters) step(ctx context.Context, w *work) (state, error) {
	d := w.delivery
	gen := d.Generation()
	base := []metav1.Condition{member.Overridden(d.Binding), member.WorkSynchronized(gen)}
	unreached := func(err error) error {
		msg := fmt.Sprintf("Work object %s is not applied: member cluster %q: %s", d.WorkName(), d.Cluster(), condmsg.Cap(err.Error()))
		cond := metav1.Condition{Type: fleet.ResourceBindingApplied, Status: metav1.ConditionFalse, Reason: member.WorkNotAppliedReason,
			Message: msg, ObservedGeneration: gen}
		if d.ReportsDiff() {
			cond = member.NotDiffReported(gen, d.WorkName())
		}
		if rerr := c.reporter.ReportBindingStatus(d.Key(), gen, append(base, cond), member.Placements{}); rerr != nil {
			return errors.Join(err, rerr)
		}
		return err
	}
	report := func(results []workResult) error {
		conds, p := delivery.Status(d.Binding, withStatus(results))
		return c.reporter.ReportBindingStatus(d.Key(), gen, conds, p)
	}

	cl, err := c.cluster(w.context)
	if err != nil {
		return progressing, unreached(err)
	}
	ctx, cancel := context.WithTimeout(ctx, 4*c.opts.RequestTimeout)
	defer cancel()

	if w.applied == nil {
		results, err := cl.applyWorks(ctx, d)
		if err != nil {
			return progressing, unreached(fmt.Errorf("kubeconfig context %q: %w", w.context, cl.redact(err)))
		}
		st, err := stateOf(results, d.ReportsDiff())
		if rerr := report(results); rerr != nil {
			return progressing, errors.Join(err, rerr)
		}
		switch {
		case err != nil:
			return progressing, fmt.Errorf("kubeconfig context %q: %w", w.context, err)
		case st == held:
			c.log.Info("objects held back by the apply strategy", "binding", d.Key().String(), "context", w.context)
		case !d.ReportsDiff():
			w.applied = results
			c.log.Debug("applied", "binding", d.Key().String(), "context", w.context, "works", len(results))
		}
		return st, nil
	}

	// A later check: the health of what the Works applied, read afresh.
	var objs []*unstructured.Unstructured
	for _, r := range w.applied {
		objs = append(objs, r.objs...)
	}
	live, err := cl.list(ctx, objs, ownerLabels(d))
	at := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	for i := range w.applied {
		if err == nil {
			w.applied[i].status, err = w.applied[i].check(live, at)
		}
	}
	if err != nil {
		err = cl.redact(err)
		conds, p := delivery.Status(d.Binding, withStatus(w.applied))
		cond := member.NotYetAvailable(gen, d.WorkName())
		cond.Message += fmt.Sprintf(": member cluster %q: kubeconfig context %q: %s", d.Cluster(), w.context, condmsg.Cap(err.Error()))
		meta.SetStatusCondition(&conds, cond)
		if rerr := c.reporter.ReportBindingStatus(d.Key(), gen, conds, member.Placements{Drifted: p.Drifted}); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return progressing, err
	}
	st, _ := stateOf(w.applied, false)
	return st, report(w.applied)
}

// applyWorks applies every Work of d, each sparing what the others hold
// (receiver first: an object moving between Works is taken over by the
// one it moved to, never deleted and made again), then removes what the
// member records of Works d no longer has. The error is one reaching the
// member; a refused manifest is in its Work's status.
func (cl *cluster) applyWorks(ctx context.Context, d member.Delivery) ([]workResult, error) {
	now := time.Now()
	results := make([]workResult, 0, len(d.Works))
	for i, w := range d.Works {
		others := slices.Concat(d.Works[:i], d.Works[i+1:])
		res, err := cl.applyWork(ctx, w, others, now)
		if err != nil {
			return nil, err
		}
		results = append(results, res)
	}
	names, err := cl.recordNames(ctx, d)
	if err != nil {
		return nil, err
	}
	var claimed inventory
	for _, name := range names {
		if slices.ContainsFunc(d.Works, func(w *fleet.Work) bool { return w.Name == name }) {
			continue
		}
		if claimed == nil {
			if claimed, err = claimedBy(d.Works); err != nil {
				return nil, err
			}
		}
		gone := d
		gone.Record = name
		if _, err := cl.remove(ctx, gone, claimed); err != nil {
			return nil, cl.redact(err)
		}
	}
	return results, nil
}

// withStatus are the Works of results, each with its status.
func withStatus(results []workResult) []*fleet.Work {
	out := make([]*fleet.Work, len(results))
	for i, r := range results {
		w := *r.work
		w.Status = r.status
		out[i] = &w
	}
	return out
}

// stateOf is where a delivery stands from its Works' status; the error
// names a manifest the member refused (tried again after a backoff).
func stateOf(results []workResult, reportDiff bool) (state, error) {
	st := healthy
	for _, r := range results {
		switch {
		case r.refused != nil:
			return progressing, refusal(r)
		case len(r.out.held) > 0:
			st = held
		case reportDiff || st == held:
		default:
			for _, mc := range r.status.ManifestConditions {
				c := meta.FindStatusCondition(mc.Conditions, fleet.WorkConditionTypeAvailable)
				switch {
				case c != nil && c.Status == metav1.ConditionTrue:
				case c != nil && c.Reason == ManifestFailedReason:
					st = unhealthy
				case st == healthy:
					st = progressing
				}
			}
		}
	}
	return st, nil
}

// refusal is the error of a Work whose apply failed, for the log: the
// member's answer, which its status says only of a manifest it names.
func refusal(r workResult) error {
	return fmt.Errorf("work %s: %w", r.work.Name, r.refused)
}
