package gitops

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// follow fetches on every trigger and syncs what moved. A failed fetch or
// sync is retried with backoff (1s doubling to Config.RetryMax) without
// waiting for another trigger, so an outage of the remote heals on its own
// and nothing pushed meanwhile is lost: the next fetch brings every commit,
// and each is processed in order. Triggers that arrive during the wait do
// not cut it short (the retry answers them): the wait the log announces is
// the wait, one line per failed attempt.
func (d *Daemon) follow(ctx context.Context, triggers <-chan struct{}) error {
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: d.cfg.RetryMax}
	if backoff.Cap <= 0 {
		backoff.Cap = 5 * time.Minute
	}
	retry, failures := backoff, 0
	for {
		select {
		case <-triggers: // this fetch answers a pending trigger too
		default:
		}
		start := d.clock.Now()
		d.health.begin(start)
		head, err := d.src.Fetch(ctx)
		d.observeFetch(start, err)
		if err == nil {
			err = d.sync(ctx, head)
		}
		d.health.synced(d.clock.Now(), err)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		d.recordSource(ctx, head.Commit, err)
		if err != nil {
			failures++
			delay := retry.Step()
			d.log.Warn("fetch or sync failed; retrying", "err", err.Error(), "attempt", failures,
				"retry_in", delay.String(), "next_step", NextStep(err))
			if err := d.sleep(ctx, delay); err != nil {
				return err
			}
			continue
		}
		if failures > 0 {
			d.log.Info("fetch and sync succeed again", "failed_attempts", failures)
		}
		retry, failures = backoff, 0
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-triggers:
		case <-d.renders.wake: // a render ended: apply it (the fetch is cheap)
		}
	}
}

// sleep waits on Config.RetryClock, or until ctx is done.
func (d *Daemon) sleep(ctx context.Context, wait time.Duration) error {
	done := make(chan struct{})
	t := d.cfg.RetryClock.AfterFunc(wait, func() { close(done) })
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-done:
		return nil
	}
}

func (d *Daemon) observeFetch(start time.Time, err error) {
	if d.cfg.Observer != nil {
		d.cfg.Observer.Fetched(d.clock.Now().Sub(start), err)
	}
}

// health is what the health endpoints read of the loop, under its own
// lock: they do not wait for a sync. Times are on the daemon's clock.
type health struct {
	mu sync.Mutex
	// lastSync is when a fetch and sync last succeeded; since is when the
	// one in progress began (zero between them).
	lastSync, since time.Time
	// lastErr is the error of the last fetch and sync, nil when it
	// succeeded.
	lastErr error
}

// begin notes that a fetch and sync began at now.
func (h *health) begin(now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.since = now
}

// synced notes that a fetch and sync ended at now with err.
func (h *health) synced(now time.Time, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.since, h.lastErr = time.Time{}, err
	if err == nil {
		h.lastSync = now
	}
}

// setErr notes the error of a sync that no fetch of follow's began (Idle).
func (h *health) setErr(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastErr = err
}

// ready is Ready at now of the loop following url.
func (h *health) ready(now time.Time, maxAge time.Duration, url string) error {
	h.mu.Lock()
	last, lastErr := h.lastSync, h.lastErr
	h.mu.Unlock()
	age := now.Sub(last)
	if maxAge <= 0 || age <= maxAge {
		return nil
	}
	cause := "no fetch was attempted"
	if lastErr != nil {
		cause = lastErr.Error()
	}
	return fmt.Errorf("the last successful sync of %s was %s ago, more than %s: %s",
		url, age.Round(time.Second), maxAge, cause)
}

// healthy is Healthy at now of the loop following url.
func (h *health) healthy(now time.Time, maxDuration time.Duration, url string) error {
	h.mu.Lock()
	since := h.since
	h.mu.Unlock()
	if since.IsZero() || maxDuration <= 0 {
		return nil
	}
	if took := now.Sub(since); took > maxDuration {
		return fmt.Errorf("one fetch and sync of %s has been running for %s, more than %s: the loop is wedged",
			url, took.Round(time.Second), maxDuration)
	}
	return nil
}

// Ready reports, for /readyz, whether the fleet repository was fetched and
// synced successfully within maxAge; the error says when it last was and
// why it fails since. A daemon that only learns of commits by webhook
// fetches rarely: give it maxAge 0, which only asks for one success.
func (d *Daemon) Ready(maxAge time.Duration) error {
	return d.health.ready(d.clock.Now(), maxAge, d.src.URL())
}

// Healthy reports, for /healthz, whether the loop is alive: a fetch and
// sync that has run longer than maxDuration is wedged (every network step
// has its own timeout, so a working loop never takes that long), and a
// restart is the fix.
func (d *Daemon) Healthy(maxDuration time.Duration) error {
	return d.health.healthy(d.clock.Now(), maxDuration, d.src.URL())
}

// LastError is the error of the last fetch and sync, nil when it succeeded.
func (d *Daemon) LastError() error {
	d.health.mu.Lock()
	defer d.health.mu.Unlock()
	return d.health.lastErr
}
