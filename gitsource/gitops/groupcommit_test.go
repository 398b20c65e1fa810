package gitops_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource/gitops"
	"github.com/gitfleet/gitfleet/internal/testing/fleettest"
	"github.com/gitfleet/gitfleet/status"
)

// concurrentShape is the fleet of the group commit tests: eight runs at
// once, one a placement, in three stages at 50%, members that take a
// second to become available, and an approval after the second stage.
var concurrentShape = fleettest.Scale{Members: 12, Runs: 8, ClustersPerRun: 6, Stages: 3, MaxConcurrency: "50%", Driver: "simulated"}

func concurrentFleet(t testing.TB) map[string][]byte {
	t.Helper()
	s := concurrentShape
	files := s.Fleet("v0")
	for name, data := range files {
		if strings.HasPrefix(name, "members/") {
			files[name] = []byte(strings.ReplaceAll(string(data), "{gitfleet.io/driver: simulated}",
				"{gitfleet.io/driver: simulated, gitfleet.io/sim-available-after: 1s}"))
		}
	}
	strategy := string(files["strategy.yaml"])
	withApproval := strings.Replace(strategy, "labelSelector: {matchLabels: {stage: s1}}}",
		"labelSelector: {matchLabels: {stage: s1}}, afterStageTasks: [{type: Approval}]}", 1)
	if withApproval == strategy {
		t.Fatalf("no stage s1 in the strategy:\n%s", strategy)
	}
	files["strategy.yaml"] = []byte(withApproval)
	files["runs.yaml"] = s.RunsFile("r0")
	return files
}

func concurrentRunNames() []string {
	names := make([]string, concurrentShape.Runs)
	for i := range names {
		names[i] = concurrentShape.RunName("r0", i)
	}
	return names
}

// Eight runs rolled out at once by daemons with group commit, each stopped
// at a step of the rollout and replaced by one with an empty cache — all
// it has is the remote: every run succeeds, no persisted status of any
// run ever shows a stage started before the previous one succeeded or
// more clusters updating than maxConcurrency, every merged approval is
// kept, and the remote only ever moved forward. The runs' writes shared
// commits: some status commit holds the progress of several runs.
func TestConcurrentRunsWithGroupCommitRestartWithOnlyTheRemote(t *testing.T) {
	r := newFleetRepo(t, concurrentFleet(t))
	updates := r.refUpdates()
	names := concurrentRunNames()
	d := startRestartingDaemon(t, r, func(c *gitops.Config) { c.GroupCommit = gitops.DefaultGroupCommit })
	runs := func(cond func(*fleet.UpdateRun) bool) func() int {
		return func() int {
			n := 0
			for _, name := range names {
				if cond(r.run(name)) {
					n++
				}
			}
			return n
		}
	}
	atLeast := func(what string, k int, count func() int) {
		t.Helper()
		d.advanceUntil(t, fmt.Sprintf("%s in %d of %d runs", what, k, len(names)), func() bool { return count() >= k })
	}
	updatingIn := func(stage string) func(*fleet.UpdateRun) bool {
		return func(run *fleet.UpdateRun) bool {
			if run == nil {
				return false
			}
			for _, st := range run.Status.StagesStatus {
				if st.StageName != stage {
					continue
				}
				for _, c := range st.Clusters {
					if clusterUpdating(run, stage, c.ClusterName) {
						return true
					}
				}
			}
			return false
		}
	}

	atLeast("a cluster updating in s0", len(names)/2, runs(updatingIn("s0")))
	d.restart(t, "with clusters updating in s0")
	atLeast("a cluster updating in s1", 1, runs(updatingIn("s1")))
	d.restart(t, "with clusters updating in s1")
	approvals := func() int {
		n := 0
		for _, name := range names {
			if r.approval(name+"-after-s1") != nil {
				n++
			}
		}
		return n
	}
	atLeast("the approval request after s1", len(names), approvals)
	approved := map[string][]byte{}
	for _, name := range names {
		p := "approvals/" + name + "-after-s1.yaml"
		approved[p] = encode(t, status.ApprovedCopy(r.approval(name+"-after-s1"), time.Now()))
	}
	r.commit("approve every run", approved)
	d.restart(t, "right after the approvals were merged")
	atLeast("Succeeded", len(names), runs(func(run *fleet.UpdateRun) bool { return run != nil && run.Phase() == fleet.PhaseSucceeded }))
	d.stop(t)

	for _, name := range names {
		checkRunHistory(t, r, name)
		checkApprovalKept(t, r, name+"-after-s1")
	}
	checkFastForwardsOnly(t, r, updates())
	if n := mostRunsInOneStatusCommit(r); n < 2 {
		t.Errorf("no status commit holds the progress of more than %d run", n)
	}
}

// mostRunsInOneStatusCommit is the largest number of runs whose existing
// status files one of gitfleet's commits changed (the sync that creates the runs
// adds their files at once, whatever the engine does).
func mostRunsInOneStatusCommit(r *fleetRepo) int {
	most := 0
	for _, c := range strings.Split(r.git("log", "--format=%x00%H", "--diff-filter=M", "--name-only", "--grep", "Gitfleet-Commit: true", "main"), "\x00") {
		runs := map[string]bool{}
		for _, line := range strings.Split(c, "\n") {
			if rest, ok := strings.CutPrefix(line, "status/runs/"); ok {
				name, _, _ := strings.Cut(strings.TrimSuffix(rest, ".yaml"), "/")
				runs[name] = true
			}
		}
		most = max(most, len(runs))
	}
	return most
}

// SIGKILLed at several moments of eight concurrent runs — serve groups
// their writes (--group-commit, on by default) — and started again,
// sometimes in an empty cache directory, the real binary finishes every
// run: no persisted status skips a stage or exceeds maxConcurrency, every
// merged approval is kept, and the remote only moved forward.
func TestKilledServeProcessFinishesConcurrentRunsAfterRestart(t *testing.T) {
	r := newFleetRepo(t, concurrentFleet(t))
	updates := r.refUpdates()
	names := concurrentRunNames()
	cache := t.TempDir()
	serve := restartableServe(t, r)
	anyRun := func(what string, cond func(*fleet.UpdateRun) bool) {
		t.Helper()
		eventually(t, what, func() bool {
			for _, name := range names {
				if cond(r.run(name)) {
					return true
				}
			}
			return false
		})
	}
	startedIn := func(stage string) func(*fleet.UpdateRun) bool {
		return func(run *fleet.UpdateRun) bool {
			if run == nil {
				return false
			}
			for _, st := range run.Status.StagesStatus {
				for _, c := range st.Clusters {
					if st.StageName == stage && clusterStarted(run, stage, c.ClusterName) {
						return true
					}
				}
			}
			return false
		}
	}

	p := serve(cache)
	anyRun("a cluster started in s0", startedIn("s0"))
	p.kill()
	p = serve(t.TempDir())
	anyRun("a cluster started in s1", startedIn("s1"))
	p.kill()
	p = serve(cache)
	for _, name := range names {
		r.approve(name + "-after-s1")
	}
	p.kill()
	p = serve(t.TempDir())
	for _, name := range names {
		r.waitPhase(name, fleet.PhaseSucceeded)
	}
	p.kill()

	for _, name := range names {
		checkRunHistory(t, r, name)
		checkApprovalKept(t, r, name+"-after-s1")
	}
	checkFastForwardsOnly(t, r, updates())
}
