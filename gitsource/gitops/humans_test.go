package gitops_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// People keep pushing while gitfleet rolls out and writes status: fifty
// commits from another clone, a few of them changing the workload, race
// gitfleet's status pushes. Every human commit lands on main unchanged,
// gitfleet only ever fast-forwards main and only writes status/ and
// approvals/, each workload change gets its snapshot, and the status tree
// is complete at the end.
func TestHumanCommitsRacingStatusPushesAreAllKept(t *testing.T) {
	const humans = 50
	workloadChanges := map[int]bool{10: true, 25: true, 40: true}

	files := timedFleet(t, restartAvailableAfter, restartSoak)
	r := newFleetRepo(t, files)
	updates := r.refUpdates()
	startDaemon(t, "file://"+r.remote, t.TempDir(), 50*time.Millisecond)
	colleague := r.clone("colleague")

	type pushed struct {
		n      int
		commit string
	}
	results := make(chan pushed, humans)
	var first string
	errs := make(chan error, 1)
	go func() {
		defer close(results)
		for n := 1; n <= humans; n++ {
			change := map[string][]byte{fmt.Sprintf("docs/note-%d.md", n): []byte(fmt.Sprintf("note %d\n", n))}
			if workloadChanges[n] {
				change["workload.yaml"] = []byte(strings.Replace(string(files["workload.yaml"]), "key: value1", fmt.Sprintf("key: value-%d", n), 1))
			}
			h, err := colleague.tryCommit(fmt.Sprintf("note %d", n), change)
			if err != nil {
				errs <- fmt.Errorf("human commit %d: %w", n, err)
				return
			}
			results <- pushed{n, h}
			if n == humans/2 {
				// Hold the second half until gitfleet has pushed status
				// since the first human commit, so the two really
				// interleave however the machine schedules them.
				for !gitfleetPushedSince(colleague, first) {
					time.Sleep(20 * time.Millisecond)
				}
			}
			if n == 1 {
				first = h
			}
			// Spread the pushes over the rollout: back to back they
			// starve gitfleet's pushes (gitsource backs off on repeated
			// rejections).
			time.Sleep(40 * time.Millisecond)
		}
	}()

	r.approve(approvalName)
	run := r.waitPhase("example-run", fleet.PhaseSucceeded)
	commits := map[int]string{}
	for p := range results {
		commits[p.n] = p.commit
	}
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	if len(commits) != humans {
		t.Fatalf("%d human commits pushed, want %d", len(commits), humans)
	}

	// Every human commit is on main, with its content intact at the tip.
	for n, h := range commits {
		if _, err := gitRun(r.remote, "merge-base", "--is-ancestor", h, "main"); err != nil {
			t.Errorf("human commit %d (%s) is not on main", n, h[:12])
		}
		if got := string(r.file(fmt.Sprintf("docs/note-%d.md", n))); got != fmt.Sprintf("note %d\n", n) {
			t.Errorf("docs/note-%d.md at main's tip is %q", n, got)
		}
	}
	if !strings.Contains(string(r.file("workload.yaml")), "key: value-40") {
		t.Errorf("workload.yaml at main's tip lost the last human change:\n%s", r.file("workload.yaml"))
	}
	checkFastForwardsOnly(t, r, updates())
	checkOwnCommitsWriteOnlyStatus(t, r)
	// The race really happened: gitfleet pushed status between the first
	// and the last human commit.
	interleaved := strings.Fields(r.git("log", "--format=%H", "--grep", "Gitfleet-Commit: true", commits[1]+".."+commits[humans]))
	t.Logf("gitfleet pushed %d status commits among the %d human ones", len(interleaved), humans)
	if len(interleaved) == 0 {
		t.Error("no status commit landed between the human commits; the test raced nothing")
	}

	// One snapshot per workload change, recording its commit, and no more.
	index := 1
	for n := 1; n <= humans; n++ {
		if !workloadChanges[n] {
			continue
		}
		path := fmt.Sprintf("status/snapshots/example-placement/%d.yaml", index)
		eventually(t, path, func() bool { return r.file(path) != nil })
		snap := r.object(path).(*fleet.ResourceSnapshot)
		if snap.Annotations[fleet.CommitAnnotation] != commits[n] {
			t.Errorf("snapshot %d records commit %q, want human commit %d (%s)", index, snap.Annotations[fleet.CommitAnnotation], n, commits[n])
		}
		if !strings.Contains(string(r.file(path)), fmt.Sprintf("value-%d", n)) {
			t.Errorf("snapshot %d does not hold value-%d", index, n)
		}
		index++
	}
	if p := fmt.Sprintf("status/snapshots/example-placement/%d.yaml", index); r.file(p) != nil {
		t.Errorf("%s exists: a snapshot was recorded for a commit that changed no workload", p)
	}

	// The status tree is complete.
	waitBindingsAvailable(t, r, "example-placement-"+run.Status.ResourceSnapshotIndexUsed+"-snapshot", "member1", "member2", "member3")
	checkRunHistory(t, r, "example-run")
	checkApprovalKept(t, r, approvalName)
	for _, p := range []string{"status/placements/example-placement.yaml", "status/strategies/example-strategy.yaml",
		"status/clusters/member1.yaml", "status/clusters/member2.yaml", "status/clusters/member3.yaml"} {
		if r.file(p) == nil {
			t.Errorf("%s is missing from the status tree", p)
		}
	}
}

// checkOwnCommitsWriteOnlyStatus fails if a commit gitfleet made on main
// touched anything outside status/ and approvals/.
func checkOwnCommitsWriteOnlyStatus(t *testing.T, r *fleetRepo) {
	t.Helper()
	own := strings.Fields(r.git("log", "--format=%H", "--grep", "Gitfleet-Commit: true", "main"))
	if len(own) == 0 {
		t.Fatal("gitfleet made no commit on main")
	}
	for _, c := range own {
		for _, p := range strings.Fields(r.git("diff-tree", "--no-commit-id", "--name-only", "-r", c)) {
			if !strings.HasPrefix(p, "status/") && !strings.HasPrefix(p, "approvals/") {
				t.Errorf("gitfleet's commit %s wrote %s", c[:12], p)
			}
		}
	}
}

// gitfleetPushedSince reports whether the remote's main has a gitfleet
// commit after commit.
func gitfleetPushedSince(r *fleetRepo, commit string) bool {
	if _, err := gitRun(r.work, "fetch", "-q", "origin"); err != nil {
		return false
	}
	out, err := gitRun(r.work, "log", "--format=%H", "--grep", "Gitfleet-Commit: true", commit+"..origin/main")
	return err == nil && out != ""
}
