package clock

import (
	"testing"
	"time"
)

func TestFakeFiresTimersInDeadlineOrder(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewFake(start)
	var got []string
	var at []time.Duration
	rec := func(name string) func() {
		return func() { got = append(got, name); at = append(at, c.Now().Sub(start)) }
	}
	c.AfterFunc(2*time.Second, rec("b"))
	c.AfterFunc(time.Second, rec("a"))
	stopped := c.AfterFunc(1500*time.Millisecond, rec("never"))
	c.AfterFunc(2*time.Second, rec("c"))
	if !stopped.Stop() {
		t.Fatal("Stop of a pending timer reported false")
	}
	c.Advance(5 * time.Second)
	want := []string{"a", "b", "c"}
	if len(got) != len(want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("fired %v, want %v", got, want)
		}
	}
	if at[0] != time.Second || at[1] != 2*time.Second {
		t.Fatalf("fired at %v, want deadlines", at)
	}
	if c.Now().Sub(start) != 5*time.Second {
		t.Fatalf("now = %v", c.Now())
	}
}

func TestFakeStepJumpsToNextTimer(t *testing.T) {
	c := NewFake(time.Unix(0, 0))
	fired := 0
	c.AfterFunc(time.Minute, func() {
		fired++
		c.AfterFunc(time.Minute, func() { fired++ })
	})
	if !c.Step() || fired != 1 || c.Now() != time.Unix(60, 0) {
		t.Fatalf("after first step fired=%d now=%v", fired, c.Now())
	}
	if !c.Step() || fired != 2 || c.Now() != time.Unix(120, 0) {
		t.Fatalf("after second step fired=%d now=%v", fired, c.Now())
	}
	if c.Step() {
		t.Fatal("Step with no timers reported true")
	}
}
