// Package clock is the engine's only source of time. The real clock serves
// `gitfleet serve`; the fake clock lets `gitfleet simulate` and the tests run
// the same engine in virtual time, where timers fire by jumping the clock
// instead of sleeping.
package clock

import (
	"sort"
	"sync"
	"time"
)

// Clock tells the time and schedules callbacks.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine (real clock) or from Step/Advance
	// (fake clock) once d has passed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a scheduled callback.
type Timer interface {
	// Stop cancels the callback; it reports whether it was still pending.
	Stop() bool
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now.
func (Real) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Fake is a manually advanced clock. Timers fire synchronously, in order of
// their deadline (ties in order of creation), from Advance and Step. It is
// safe for concurrent use; callbacks run without the lock held.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers []*fakeTimer
}

type fakeTimer struct {
	c    *Fake
	at   time.Time
	seq  uint64
	f    func()
	done bool
}

// NewFake returns a fake clock set to start.
func NewFake(start time.Time) *Fake { return &Fake{now: start} }

// Now returns the fake time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f at Now()+d.
func (c *Fake) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &fakeTimer{c: c, at: c.now.Add(d), seq: c.seq, f: f}
	c.timers = append(c.timers, t)
	c.sortLocked()
	return t
}

func (c *Fake) sortLocked() {
	sort.Slice(c.timers, func(i, j int) bool {
		a, b := c.timers[i], c.timers[j]
		if !a.at.Equal(b.at) {
			return a.at.Before(b.at)
		}
		return a.seq < b.seq
	})
}

// Stop cancels the timer.
func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.done {
		return false
	}
	t.done = true
	for i, x := range t.c.timers {
		if x == t {
			t.c.timers = append(t.c.timers[:i], t.c.timers[i+1:]...)
			break
		}
	}
	return true
}

// Next returns the deadline of the earliest pending timer.
func (c *Fake) Next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.timers) == 0 {
		return time.Time{}, false
	}
	return c.timers[0].at, true
}

// Pending is the number of timers not yet fired or stopped.
func (c *Fake) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Step jumps to the earliest pending timer (never backwards) and fires every
// timer due at that instant. It reports false when no timer was pending.
func (c *Fake) Step() bool {
	at, ok := c.Next()
	if !ok {
		return false
	}
	c.AdvanceTo(at)
	return true
}

// Advance moves the clock forward by d, firing due timers in order.
func (c *Fake) Advance(d time.Duration) { c.AdvanceTo(c.Now().Add(d)) }

// AdvanceTo moves the clock to t (if later), firing every timer due by then in
// deadline order; each fires with Now() equal to its deadline.
func (c *Fake) AdvanceTo(t time.Time) {
	for {
		c.mu.Lock()
		if len(c.timers) == 0 || c.timers[0].at.After(t) {
			if t.After(c.now) {
				c.now = t
			}
			c.mu.Unlock()
			return
		}
		next := c.timers[0]
		c.timers = c.timers[1:]
		next.done = true
		if next.at.After(c.now) {
			c.now = next.at
		}
		c.mu.Unlock()
		next.f()
	}
}
