// Package await lets tests wait for real processes (git servers, the
// daemon, API servers) without wall-clock deadlines of their own.
//
// A fixed "within 10s" fails on a loaded machine although nothing is
// wrong. Here a wait lasts until the condition holds or until shortly
// before the test binary's -timeout, whichever comes first: a hang is
// still reported by the test that hung, with what it was waiting for, and
// a slow machine only makes the suite slower.
package await

import (
	"context"
	"testing"
	"time"
)

// grace is left between the end of a wait and the test binary's -timeout,
// for the failing test to report and clean up.
const grace = 30 * time.Second

// Deadline is when waits of t give up: grace before the -timeout of the
// test binary, or an hour from now without one.
func Deadline(t testing.TB) time.Time {
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if deadline, ok := d.Deadline(); ok {
			return deadline.Add(-grace)
		}
	}
	return time.Now().Add(time.Hour)
}

// Context returns a context that ends with the test or at Deadline.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithDeadline(t.Context(), Deadline(t))
	t.Cleanup(cancel)
	return ctx
}

// Until polls cond until it holds. It fails the test, naming what it
// waited for and for how long, once Deadline passes; every 30s of waiting
// it logs that it still waits, so a slow run shows where it spends time.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	UntilBy(t, what, Deadline(t), cond)
}

// UntilBy is Until giving up at by, or at Deadline if that is earlier: for
// a caller that bounds its wait by the work it waits for.
func UntilBy(t testing.TB, what string, by time.Time, cond func() bool) {
	t.Helper()
	start := time.Now()
	deadline := Deadline(t)
	if by.Before(deadline) {
		deadline = by
	}
	nextLog := start.Add(30 * time.Second)
	poll := 10 * time.Millisecond
	for !cond() {
		now := time.Now()
		if now.After(deadline) {
			t.Fatalf("gave up after %s waiting for %s", now.Sub(start).Round(time.Millisecond), what)
		}
		if now.After(nextLog) {
			t.Logf("still waiting for %s after %s", what, now.Sub(start).Round(time.Second))
			nextLog = now.Add(30 * time.Second)
		}
		time.Sleep(poll)
		poll = min(2*poll, 200*time.Millisecond)
	}
}
