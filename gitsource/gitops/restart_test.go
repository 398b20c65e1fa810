package gitops_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource/gitops"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/status"
)

// The restart tests roll the quickstart out with members that take a second
// to become available and a one-second soak, so there is time to stop
// gitfleet in the middle of each step.
const restartAvailableAfter, restartSoak = "1s", "1s"

// clusterUpdating reports whether a run's status shows a cluster started
// and not finished in a stage.
func clusterUpdating(run *fleet.UpdateRun, stage, cluster string) bool {
	if run == nil {
		return false
	}
	for _, st := range run.Status.StagesStatus {
		if st.StageName != stage {
			continue
		}
		for _, c := range st.Clusters {
			if c.ClusterName == cluster {
				return meta.IsStatusConditionTrue(c.Conditions, fleet.ClusterUpdatingConditionStarted) &&
					meta.FindStatusCondition(c.Conditions, fleet.ClusterUpdatingConditionSucceeded) == nil
			}
		}
	}
	return false
}

// clusterStarted reports whether a run's status shows a cluster started in
// a stage (finished or not).
func clusterStarted(run *fleet.UpdateRun, stage, cluster string) bool {
	if run == nil {
		return false
	}
	for _, st := range run.Status.StagesStatus {
		for _, c := range st.Clusters {
			if st.StageName == stage && c.ClusterName == cluster {
				return meta.IsStatusConditionTrue(c.Conditions, fleet.ClusterUpdatingConditionStarted)
			}
		}
	}
	return false
}

// soaking reports whether a run's status shows staging done and its timed
// wait still running.
func soaking(run *fleet.UpdateRun) bool {
	if run == nil || len(run.Status.StagesStatus) < 2 {
		return false
	}
	staging := run.Status.StagesStatus[0]
	return len(staging.AfterStageTaskStatus) == 1 && len(staging.Clusters) == 1 &&
		meta.IsStatusConditionTrue(staging.Clusters[0].Conditions, fleet.ClusterUpdatingConditionSucceeded) &&
		!meta.IsStatusConditionTrue(staging.AfterStageTaskStatus[0].Conditions, fleet.StageTaskConditionWaitTimeElapsed)
}

// waitRun waits until the run's status in Git satisfies cond.
func (r *fleetRepo) waitRun(name, what string, cond func(*fleet.UpdateRun) bool) {
	r.t.Helper()
	eventually(r.t, what, func() bool { return cond(r.run(name)) })
}

var (
	referenceOnce sync.Once
	referenceRun  *fleet.UpdateRun
)

// uninterruptedRun is the final status of example-run rolled out by one
// daemon that was never stopped, on the restart tests' fleet.
func uninterruptedRun(t *testing.T) *fleet.UpdateRun {
	t.Helper()
	referenceOnce.Do(func() {
		r := newFleetRepo(t, timedFleet(t, restartAvailableAfter, restartSoak))
		d := startDaemon(t, "file://"+r.remote, t.TempDir(), 50*time.Millisecond)
		r.approve(approvalName)
		referenceRun = r.waitPhase("example-run", fleet.PhaseSucceeded)
		d.stop(t)
	})
	if referenceRun == nil {
		t.Fatal("the uninterrupted reference run did not complete")
	}
	return referenceRun
}

// A daemon stopped at every step of a rollout and replaced by one with an
// empty cache — all it has is the remote — picks the run up where it was:
// no stage skipped, never more clusters updating than maxConcurrency, the
// merged approval kept, and the same final status as a run that was never
// interrupted.
func TestRestartWithOnlyTheRemoteResumesTheRunWhereItWas(t *testing.T) {
	want := uninterruptedRun(t)
	r := newFleetRepo(t, timedFleet(t, restartAvailableAfter, restartSoak))
	updates := r.refUpdates()
	d := startRestartingDaemon(t, r)
	d.advanceUntil(t, "member2 updating in staging", d.runIs(func(run *fleet.UpdateRun) bool {
		return clusterUpdating(run, "staging", "member2")
	}))
	d.restart(t, "while member2 was updating")
	d.advanceUntil(t, "the staging soak", d.runIs(soaking))
	d.restart(t, "during the soak")
	d.advanceUntil(t, "member3 updating in canary", d.runIs(func(run *fleet.UpdateRun) bool {
		return clusterUpdating(run, "canary", "member3")
	}))
	d.restart(t, "while member3 was updating")
	d.advanceUntil(t, "the canary approval request", func() bool { return r.approval(approvalName) != nil })
	r.approve(approvalName)
	d.restart(t, "right after the approval was merged")

	d.advanceUntil(t, "the run to succeed", d.runIs(func(run *fleet.UpdateRun) bool { return run.Phase() == fleet.PhaseSucceeded }))
	got := r.run("example-run")
	d.advanceUntil(t, "every binding available on snapshot 0", func() bool {
		return bindingsAvailable(r, "example-placement-0-snapshot", "member1", "member2", "member3")
	})
	d.stop(t)

	if n := checkRunHistory(t, r, "example-run"); n < 5 {
		t.Errorf("only %d versions of the run status in Git", n)
	}
	if g, w := string(encode(t, withoutTimes(got))), string(encode(t, withoutTimes(want))); g != w {
		t.Errorf("final run status differs from an uninterrupted run's (timestamps aside):\n--- interrupted\n%s\n--- uninterrupted\n%s", g, w)
	}
	checkApprovalKept(t, r, approvalName)
	checkFastForwardsOnly(t, r, updates())
}

// restartingDaemon is an in-process daemon on a fake clock that a restart
// test stops and replaces by one with an empty cache: all the new one has
// is the remote. Each step the test restarts in holds until the test steps
// the clock past it; each daemon gets a clock of its own, starting where
// the last one stopped, so timers a stopped daemon armed die with it, as
// they would in a real restart.
type restartingDaemon struct {
	*daemon
	clk       *clock.Fake
	r         *fleetRepo
	configure []func(*gitops.Config)
}

// startRestartingDaemon starts the first daemon on r's remote, configured
// on its fake clock, then by configure.
func startRestartingDaemon(t *testing.T, r *fleetRepo, configure ...func(*gitops.Config)) *restartingDaemon {
	d := &restartingDaemon{clk: clock.NewFake(time.Now()), r: r, configure: configure}
	d.start(t)
	return d
}

func (d *restartingDaemon) start(t *testing.T) {
	d.daemon = startDaemonWith(t, "file://"+d.r.remote, t.TempDir(), 50*time.Millisecond, func(c *gitops.Config) {
		onFakeClock(d.clk)(c)
		for _, f := range d.configure {
			f(c)
		}
	})
}

// restart stops the daemon and starts another with an empty cache.
func (d *restartingDaemon) restart(t *testing.T, when string) {
	t.Helper()
	d.daemon.stop(t)
	t.Logf("restarted %s", when)
	d.clk = clock.NewFake(d.clk.Now())
	d.start(t)
}

// advanceUntil steps the current daemon's clock until cond holds.
func (d *restartingDaemon) advanceUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	d.daemon.advanceUntil(t, d.clk, what, cond)
}

// runIs is a condition on example-run as Git has it.
func (d *restartingDaemon) runIs(cond func(*fleet.UpdateRun) bool) func() bool {
	return func() bool { return cond(d.r.run("example-run")) }
}

// restartableServe starts `gitfleet serve` on r's remote with a cache
// directory of the caller's choice (the same one again, or an empty one),
// for tests that kill it with SIGKILL and start it again.
func restartableServe(t *testing.T, r *fleetRepo) func(cacheDir string) *serveProcess {
	return func(cacheDir string) *serveProcess {
		return startServe(t, "--repo", "file://"+r.remote, "--cache-dir", cacheDir, "--interval", "100ms",
			"--status-interval", "50ms", "--metrics-addr", "127.0.0.1:0", "--log-level", "debug")
	}
}

// checkApprovalKept fails if the approval request was created more than
// once, or if its Approved condition ever disappeared once merged, or if it
// did not end accepted.
func checkApprovalKept(t *testing.T, r *fleetRepo, name string) {
	t.Helper()
	path := "approvals/" + name + ".yaml"
	if created := strings.Fields(r.git("log", "--format=%H", "--diff-filter=A", "main", "--", path)); len(created) != 1 {
		t.Errorf("%s was created %d times, want once", path, len(created))
	}
	commits, versions := r.history(path)
	approved := false
	for i, data := range versions {
		obj := decode(t, path, data).(*fleet.ApprovalRequest)
		has := meta.IsStatusConditionTrue(obj.Status.Conditions, fleet.ApprovalRequestConditionApproved)
		if approved && !has {
			t.Errorf("commit %s dropped the merged approval from %s", commits[i][:12], path)
		}
		approved = approved || has
	}
	final := r.approval(name)
	if final == nil || !meta.IsStatusConditionTrue(final.Status.Conditions, fleet.ApprovalRequestConditionApproved) ||
		!meta.IsStatusConditionTrue(final.Status.Conditions, fleet.ApprovalRequestConditionApprovalAccepted) {
		t.Errorf("approval %s did not end approved and accepted: %+v", name, final)
	}
}

// waitBindingsAvailable waits until bindingsAvailable holds.
func waitBindingsAvailable(t *testing.T, r *fleetRepo, snapshot string, members ...string) {
	t.Helper()
	eventually(t, fmt.Sprintf("the bindings of %v to be available on %s", members, snapshot), func() bool {
		return bindingsAvailable(r, snapshot, members...)
	})
}

// bindingsAvailable reports whether every listed member's binding in Git
// points at snapshot and is Available. (A restarted daemon's simulated
// members report their work not yet available again until their
// availability delay has passed, even for clusters that were done.)
func bindingsAvailable(r *fleetRepo, snapshot string, members ...string) bool {
	for _, member := range members {
		o := r.object("status/bindings/example-placement/" + member + ".yaml")
		if o == nil {
			return false
		}
		b := o.(*fleet.Binding)
		if b.Spec.ResourceSnapshotName != snapshot || !meta.IsStatusConditionTrue(b.Status.Conditions, fleet.ResourceBindingAvailable) {
			return false
		}
	}
	return true
}

// checkFastForwardsOnly fails if any logged update of main was not a fast
// forward (the remote refuses them too; this is belt and braces).
func checkFastForwardsOnly(t *testing.T, r *fleetRepo, updates [][3]string) {
	t.Helper()
	n := 0
	for _, u := range updates {
		if u[0] != "refs/heads/main" || strings.Trim(u[1], "0") == "" {
			continue
		}
		n++
		if _, err := gitRun(r.remote, "merge-base", "--is-ancestor", u[1], u[2]); err != nil {
			t.Errorf("main moved from %s to %s, not a fast forward", u[1][:12], u[2][:12])
		}
	}
	if n == 0 {
		t.Error("the remote logged no update of main")
	}
}

// SIGKILLed at several moments of a rollout — no shutdown, no final push —
// and started again, sometimes in an empty cache directory, the real binary
// finishes the run with the same stage and cluster conditions as a run that
// was never killed.
func TestKilledServeProcessFinishesTheRunAfterRestart(t *testing.T) {
	want := uninterruptedRun(t)
	r := newFleetRepo(t, timedFleet(t, restartAvailableAfter, restartSoak))
	updates := r.refUpdates()
	cache := t.TempDir()
	serve := restartableServe(t, r)
	p := serve(cache)

	eventually(t, "the first status commit", func() bool {
		return strings.Contains(r.git("log", "--format=%B", "main"), "Gitfleet-Commit: true")
	})
	p.kill()
	p = serve(cache)

	// Killed once member2, then member3, has started: most often while it
	// updates, sometimes later, as a real clock gives it (the in-process
	// restart test holds each step on a fake clock instead).
	r.waitRun("example-run", "member2 started in staging", func(run *fleet.UpdateRun) bool {
		return clusterStarted(run, "staging", "member2")
	})
	p.kill()
	p = serve(t.TempDir())

	r.waitRun("example-run", "member3 started in canary", func(run *fleet.UpdateRun) bool {
		return clusterStarted(run, "canary", "member3")
	})
	p.kill()
	p = serve(cache)

	r.approve(approvalName)
	p.kill()
	p = serve(t.TempDir())

	got := r.waitPhase("example-run", fleet.PhaseSucceeded)
	waitBindingsAvailable(t, r, "example-placement-0-snapshot", "member1", "member2", "member3")
	p.kill()

	checkRunHistory(t, r, "example-run")
	if g, w := strings.Join(conditionOutline(got), "\n"), strings.Join(conditionOutline(want), "\n"); g != w {
		t.Errorf("final conditions differ from an uninterrupted run's:\n--- killed\n%s\n--- uninterrupted\n%s", g, w)
	}
	checkApprovalKept(t, r, approvalName)
	checkFastForwardsOnly(t, r, updates())
}

func decode(t testing.TB, path string, data []byte) runtime.Object {
	t.Helper()
	obj, err := status.DecodeFile(path, data)
	if err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	return obj
}

// A restart on a fleet where everything is done — with an empty cache, so
// all the new daemon has is the remote — changes nothing and so commits
// nothing: no binding re-stamped, no run touched.
func TestRestartOnAFinishedFleetCommitsNothing(t *testing.T) {
	r := newFleetRepo(t, timedFleet(t, restartAvailableAfter, restartSoak))
	url := "file://" + r.remote
	clk := clock.NewFake(time.Now())
	d := startDaemonWith(t, url, t.TempDir(), 0, onFakeClock(clk))
	d.advanceUntil(t, clk, "the canary approval request", func() bool { return r.approval(approvalName) != nil })
	r.approve(approvalName)
	d.poke()
	d.advanceUntil(t, clk, "the run to succeed with every binding available", func() bool {
		run := r.run("example-run")
		return run != nil && run.Phase() == fleet.PhaseSucceeded &&
			bindingsAvailable(r, "example-placement-0-snapshot", "member1", "member2", "member3")
	})
	d.settleOn(t, clk)
	d.stop(t)
	before := strings.TrimSpace(r.git("rev-parse", "main"))

	clk = clock.NewFake(clk.Now().Add(time.Hour))
	d = startDaemonWith(t, url, t.TempDir(), 0, onFakeClock(clk))
	d.advanceUntil(t, clk, "the restarted daemon to settle with every binding available", func() bool {
		idle, err := d.Idle(context.Background())
		return err == nil && idle && d.Controller.TimersDueWithin(time.Hour) == 0 && d.Hub.(*embedded.Hub).Members().Pending() == 0
	})
	d.stop(t)
	if after := strings.TrimSpace(r.git("rev-parse", "main")); after != before {
		t.Errorf("the restart committed:\n%s\n%s", r.git("log", "--format=%h %s", before+".."+after),
			r.git("diff", "--stat", before, after))
		t.Log(r.git("diff", before, after))
	}
}
