package main

import (
	"fmt"
	"time"
)

// instantFlag is a flag naming an instant: "now" or an RFC 3339 time
// (plan's --at, simulate's --start: where RolloutWindows are evaluated
// from).
type instantFlag struct{ t *time.Time }

func (f instantFlag) String() string {
	if f.t == nil || f.t.IsZero() {
		return ""
	}
	return f.t.UTC().Format(time.RFC3339)
}

func (f instantFlag) Set(s string) error {
	if s == "now" {
		*f.t = time.Now().UTC().Truncate(time.Second)
		return nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return fmt.Errorf("want now or an RFC 3339 time (2026-12-31T09:00:00+01:00)")
	}
	*f.t = t.UTC()
	return nil
}

func (instantFlag) Type() string { return "time" }
