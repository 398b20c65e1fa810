package gitsource

import (
	"context"
)

// Follow fetches whenever signals fires (typically Watcher.C()) and calls fn
// with the Head once at the start and then whenever a tip moved. A failed
// fetch, or an fn error, is retried after a delay from retry (its zero value
// means 1s doubling to 5m) without waiting for another signal, so a remote
// outage or a failing handler heals on its own. Follow returns ctx's error
// when ctx is done.
func (s *Source) Follow(ctx context.Context, signals <-chan struct{}, retry Backoff, fn func(context.Context, Head) error) error {
	retry.Reset()
	var delivered Head
	first := true
	for {
		// This fetch answers any pending signal too.
		select {
		case <-signals:
		default:
		}
		head, err := s.Fetch(ctx)
		if err == nil && (first || head != delivered) {
			if err = fn(ctx, head); err == nil {
				delivered, first = head, false
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			d := retry.Next()
			s.log.Warn("fetch or handler failed; retrying", "err", err.Error(), "attempt", retry.Attempts(), "retry_in", d)
			if err := sleep(ctx, d); err != nil {
				return err
			}
			continue
		}
		retry.Reset()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-signals:
		}
	}
}
