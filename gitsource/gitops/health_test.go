package gitops_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gitfleet/gitfleet/gitsource/gitops"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/internal/testing/await"
)

// /readyz follows the remote: ready after the first sync, not ready once
// the last successful sync is older than the bound (the remote went away),
// ready again once a fetch succeeds. Time is a fake clock's.
func TestReadyWhileTheLastSuccessfulSyncIsRecent(t *testing.T) {
	r := newFleetRepo(t, quickstartFleet(t))
	clk := clock.NewFake(time.Now())
	d := startDaemonWith(t, "file://"+r.remote, t.TempDir(), 0, func(c *gitops.Config) { c.Clock = clk })
	if err := d.Ready(time.Minute); err != nil {
		t.Fatalf("right after the start: %v", err)
	}

	away := r.remote + ".away"
	if err := os.Rename(r.remote, away); err != nil {
		t.Fatal(err)
	}
	d.poke()
	eventually(t, "a failed fetch", func() bool { return d.LastError() != nil })
	clk.Advance(2 * time.Minute)
	err := d.Ready(time.Minute)
	if err == nil || !strings.Contains(err.Error(), "more than 1m0s") || !strings.Contains(err.Error(), r.remote) {
		t.Fatalf("with the remote gone for 2m: %v, want not ready naming the remote and the bound", err)
	}
	if err := d.Ready(0); err != nil {
		t.Errorf("with no bound (webhook-only): %v, want ready", err)
	}

	if err := os.Rename(away, r.remote); err != nil {
		t.Fatal(err)
	}
	// The retry after the backoff (on the fake clock) finds it back.
	eventually(t, "ready again after the remote came back", func() bool {
		if d.LastError() != nil {
			clk.Step()
		}
		return d.Ready(time.Minute) == nil
	})
}

// /healthz fails once one fetch and sync has run longer than the bound:
// here a render that would take hours (and a render timeout longer than the
// bound) holds the loop, the sync's patience with a render being longer
// than the test (with serve's 500ms the render would go on beside the loop
// and the sync end, sooner or later on a loaded machine).
func TestUnhealthyWhenOneSyncRunsTooLong(t *testing.T) {
	started, _ := watchRenders(t, nil)
	r := newFleetRepo(t, quickstartFleet(t))
	clk := clock.NewFake(time.Now())
	d := startDaemonWith(t, "file://"+r.remote, t.TempDir(), 0, func(c *gitops.Config) {
		c.Clock = clk
		c.RenderTimeout = time.Hour
		c.RenderPatience = time.Until(await.Deadline(t))
	})
	if err := d.Healthy(15 * time.Minute); err != nil {
		t.Fatalf("at the start: %v", err)
	}
	r.commit("a commit whose render would take hours", slowKustomization())
	d.poke()
	<-started
	clk.Advance(10 * time.Minute)
	if err := d.Healthy(15 * time.Minute); err != nil {
		t.Errorf("10m into one sync, bound 15m: %v, want healthy", err)
	}
	clk.Advance(10 * time.Minute)
	if err := d.Healthy(15 * time.Minute); err == nil || !strings.Contains(err.Error(), "wedged") {
		t.Errorf("20m into one sync, bound 15m: %v, want wedged", err)
	}
}
