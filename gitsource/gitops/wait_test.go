package gitops_test

import (
	"strings"
	"testing"
	"time"
)

// A wait of a test gives up after waitFloor, or after waitScale times as
// long as the test ran before it, and says so in what it waited for.
func TestAWaitIsBoundedByTheTestsPace(t *testing.T) {
	within := func(by time.Time, want time.Duration) bool {
		d := time.Until(by)
		return d > want-5*time.Second && d <= want+time.Second
	}
	by, why := waitBound(t)
	if !within(by, waitFloor) || !strings.Contains(why, "at most 5m0s") {
		t.Errorf("a wait at the start of a test gives up in %s (%s); want %s", time.Until(by).Round(time.Second), why, waitFloor)
	}
	testStarts.Store(t, time.Now().Add(-10*time.Minute))
	by, why = waitBound(t)
	if want := waitScale * 10 * time.Minute; !within(by, want) || !strings.Contains(why, "the 10m0s the test ran before") {
		t.Errorf("a wait 10 minutes into a test gives up in %s (%s); want %s", time.Until(by).Round(time.Second), why, want)
	}
	var seen bool
	if err := waitFor(t, "a condition that holds", func() bool { seen = true; return true }); err != nil || !seen {
		t.Errorf("a wait for what holds: %v", err)
	}
}
