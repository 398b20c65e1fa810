package gitsource

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff computes exponentially growing, capped delays with ±10% jitter,
// so that many gitfleet instances failing against one forge do not retry in
// lockstep. The zero value uses 1s doubling to 5m. A Backoff is not safe for
// concurrent use.
type Backoff struct {
	Initial time.Duration // first delay (default 1s)
	Max     time.Duration // cap (default 5m)

	attempt int
}

// Next returns the delay before the next retry and advances the sequence.
func (b *Backoff) Next() time.Duration {
	initial, max := b.Initial, b.Max
	if initial <= 0 {
		initial = time.Second
	}
	if max <= 0 {
		max = 5 * time.Minute
	}
	d := initial
	for i := 0; i < b.attempt && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	b.attempt++
	return jitter(d)
}

// Reset starts the sequence over, after a success.
func (b *Backoff) Reset() { b.attempt = 0 }

// Attempts returns how many delays Next has handed out since the last Reset.
func (b *Backoff) Attempts() int { return b.attempt }

// jitter spreads d uniformly over ±10%.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return time.Duration(float64(d) * (0.9 + 0.2*rand.Float64()))
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
