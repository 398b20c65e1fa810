package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// windowWaitingRun is a run whose first stage waits for a RolloutWindow.
func windowWaitingRun() *fleet.UpdateRun {
	r := run("", "example-run", fleet.StateRun, initialized,
		cond("Progressing", "False", fleet.UpdateRunWaitingReason, "The updateRun is waiting for window office (opens x) in stage canary", 1, 0))
	r.Status.StagesStatus = []fleet.StageUpdatingStatus{{StageName: "canary",
		Clusters: []fleet.ClusterUpdatingStatus{{ClusterName: "member1"}},
		Conditions: []metav1.Condition{cond("Progressing", "False", fleet.StageUpdatingWaitingReason,
			"waiting for window office (opens 2025-07-23T07:00:00Z)", 1, 0)}}}
	return r
}

// The time a run waits for a window is counted from the pass that found it
// waiting to the pass that found it started, and its series is there at 0
// before it ever waits.
func TestWindowWaitSecondsCountTheWait(t *testing.T) {
	m, reg, clk := newMetrics()
	m.ObserveRun(stagedRun())
	want := func(v string) {
		t.Helper()
		exp := `
# HELP gitfleet_window_wait_seconds_total Time an update run waited for its stages' and members' rollout windows to open (or freezes to end), in seconds.
# TYPE gitfleet_window_wait_seconds_total counter
gitfleet_window_wait_seconds_total{name="example-run",namespace=""} ` + v + "\n"
		if err := testutil.GatherAndCompare(reg, strings.NewReader(exp), WindowWaitSecondsTotal); err != nil {
			t.Fatal(err)
		}
	}
	want("0")
	m.ObserveRun(windowWaitingRun())
	clk.Advance(90 * time.Minute)
	m.ObserveRun(windowWaitingRun())
	want("5400")
	clk.Advance(30 * time.Minute)
	m.ObserveRun(stagedRun()) // the window opened: the wait ends here
	want("7200")
	clk.Advance(time.Hour)
	m.ObserveRun(stagedRun())
	want("7200")
	m.DeleteRun("", "example-run")
	if n := testutil.CollectAndCount(m.windowWaits.total); n != 0 {
		t.Errorf("%d series after the run was deleted", n)
	}
}
