package gitops_test

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// moreThanTheHistoryLimit is how many changes of the workload the history
// tests push while a run holds snapshot 0: one more than the default
// revisionHistoryLimit, which took the run's snapshot away before
// snapshots in use were kept.
const moreThanTheHistoryLimit = fleet.DefaultRevisionHistoryLimit + 1

// changeWorkload pushes change i of the quickstart's ConfigMap and waits
// until the remote's status tree has the snapshot it records (index i:
// snapshot 0 is the first commit's), so every change is a snapshot of its
// own.
func changeWorkload(t *testing.T, r *fleetRepo, i int) {
	t.Helper()
	workload := strings.Replace(string(r.file("workload.yaml")), "key: value1", fmt.Sprintf("key: change-%d", i), 1)
	if i > 1 {
		workload = strings.Replace(string(r.file("workload.yaml")), fmt.Sprintf("key: change-%d", i-1), fmt.Sprintf("key: change-%d", i), 1)
	}
	r.commit(fmt.Sprintf("change %d of the workload", i), map[string][]byte{"workload.yaml": []byte(workload)})
	path := fmt.Sprintf("status/snapshots/example-placement/%d.yaml", i)
	eventually(t, path+" in Git", func() bool { return r.file(path) != nil })
}

// snapshotsInGit lists the resource snapshot indices of example-placement
// in the remote's status tree.
func snapshotsInGit(t *testing.T, r *fleetRepo) []int {
	t.Helper()
	var names []string
	for _, f := range strings.Fields(r.git("ls-tree", "--name-only", "main", "status/snapshots/example-placement/")) {
		names = append(names, strings.TrimSuffix(path.Base(f), ".yaml"))
	}
	return indices(t, names)
}

// snapshotsOnTheHub lists the resource snapshot indices of
// example-placement on the daemon's hub.
func snapshotsOnTheHub(t *testing.T, d *daemon) []int {
	t.Helper()
	snaps, err := d.Hub.ListResourceSnapshots(t.Context(), hub.Key{Name: "example-placement"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range snaps {
		names = append(names, s.Labels[fleet.ResourceIndexLabel])
	}
	return indices(t, names)
}

func indices(t *testing.T, names []string) []int {
	t.Helper()
	var out []int
	for _, n := range names {
		i, err := strconv.Atoi(n)
		if err != nil {
			t.Fatalf("snapshot index %q: %v", n, err)
		}
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

// keptWhileRunZeroHolds is the history once snapshot 1 to 11 are recorded
// while snapshot 0 is in use: 0, and the ten newest unused, 2 to 11.
var keptWhileRunZeroHolds = []int{0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}

// More changes than the history limit pushed while a run soaks between
// stages delete older snapshots, never the run's: the run delivers
// snapshot 0 to the next stage and finishes with it.
func TestRunSoakingThroughMoreCommitsThanTheHistoryLimitFinishesWithItsSnapshot(t *testing.T) {
	r := newFleetRepo(t, timedFleet(t, "0s", "1m"))
	clk := clock.NewFake(time.Now())
	d := startDaemonWith(t, "file://"+r.remote, t.TempDir(), 50*time.Millisecond, onFakeClock(clk))
	d.advanceUntil(t, clk, "the staging soak", func() bool { return soaking(r.run("example-run")) })
	if used := r.run("example-run").Status.ResourceSnapshotIndexUsed; used != "0" {
		t.Fatalf("the run started on snapshot %q, want 0", used)
	}

	// The clock stands still: the soak lasts while the changes arrive.
	for i := 1; i <= moreThanTheHistoryLimit; i++ {
		changeWorkload(t, r, i)
	}
	if kept := snapshotsOnTheHub(t, d); !slices.Equal(kept, keptWhileRunZeroHolds) {
		t.Fatalf("resource snapshots on the hub after %d changes during the soak: %v, want %v", moreThanTheHistoryLimit, kept, keptWhileRunZeroHolds)
	}
	if !soaking(r.run("example-run")) {
		t.Fatal("the soak ended while the changes were pushed")
	}

	d.advanceUntil(t, clk, "the canary approval request", func() bool { return r.approval(approvalName) != nil })
	r.approve(approvalName)
	d.advanceUntil(t, clk, "the run to succeed", func() bool { return r.run("example-run").Phase() == fleet.PhaseSucceeded })
	d.advanceUntil(t, clk, "every binding available on snapshot 0", func() bool {
		return bindingsAvailable(r, "example-placement-0-snapshot", "member1", "member2", "member3")
	})
	if used := r.run("example-run").Status.ResourceSnapshotIndexUsed; used != "0" {
		t.Errorf("the run finished on snapshot %q, want 0", used)
	}
	waitFlushed(t, d)
	if got := snapshotsInGit(t, r); !slices.Equal(got, keptWhileRunZeroHolds) {
		t.Errorf("resource snapshots in Git: %v, want %v", got, keptWhileRunZeroHolds)
	}
}

// The same across kill -9, on both hubs: serve is killed while the changes
// arrive and again after, each time started in an empty cache directory,
// so all the embedded hub has of snapshot 0 is the remote's status tree.
// The run holds between stages on an approval (a real process's soak runs
// on the real clock).
func TestKilledServeProcessKeepsTheRunsSnapshotThroughMoreCommitsThanTheHistoryLimit(t *testing.T) {
	for _, hubKind := range []string{"embedded", "kube"} {
		t.Run(hubKind, func(t *testing.T) {
			start := time.Now()
			files := timedFleet(t, "0s", "1s")
			hold := strings.Replace(string(files["strategy.yaml"]), "- type: TimedWait\n          waitTime: 1s", "- type: Approval", 1)
			if hold == string(files["strategy.yaml"]) {
				t.Fatal("the quickstart strategy has no staging soak to replace")
			}
			files["strategy.yaml"] = []byte(hold)
			var k kubectl
			if hubKind == "kube" {
				if testing.Short() {
					t.Skip("starts a kube-apiserver and gitfleet serve")
				}
				k, _ = startKubeHub(t)
			}
			r := newFleetRepo(t, files)
			serve := func() *serveProcess {
				if hubKind == "kube" {
					return startServe(t, serveOnKubeHub(r, k, t.TempDir())...)
				}
				return startServe(t, "--repo", "file://"+r.remote, "--cache-dir", t.TempDir(), "--interval", "100ms",
					"--status-interval", "50ms", "--metrics-addr", "127.0.0.1:0", "--log-level", "debug")
			}
			p := serve()
			const staging = "example-run-after-staging"
			eventually(t, "the staging approval request", func() bool { return r.approval(staging) != nil })

			for i := 1; i <= moreThanTheHistoryLimit; i++ {
				changeWorkload(t, r, i)
				if i == moreThanTheHistoryLimit/2 {
					p.kill()
					p = serve()
				}
			}
			if got := snapshotsInGit(t, r); !slices.Equal(got, keptWhileRunZeroHolds) {
				t.Fatalf("resource snapshots in Git after %d changes: %v, want %v", moreThanTheHistoryLimit, got, keptWhileRunZeroHolds)
			}
			p.kill()
			p = serve()

			r.approve(staging)
			r.approve(approvalName)
			// Finishing the run is less work than what came before (three
			// serve starts, eleven changes recorded): it gets as long, at
			// least a minute. On a Kubernetes hub, the hub's view of the run
			// tells a run that did not finish from a status tree not told.
			var onHub func() string
			if hubKind == "kube" {
				onHub = func() string {
					out, err := k.try("get", "clusterstagedupdaterun", "example-run", "-o",
						`jsonpath={range .status.conditions[*]}{.type}={.status} ({.reason}); {end}`)
					if err != nil {
						return fmt.Sprintf("kubectl get clusterstagedupdaterun example-run: %v: %s", err, out)
					}
					return strings.TrimSuffix(out, "; ")
				}
			}
			run := r.waitPhaseWithin("example-run", fleet.PhaseSucceeded, max(time.Minute, time.Since(start)), onHub)
			waitBindingsAvailable(t, r, "example-placement-0-snapshot", "member1", "member2", "member3")
			p.kill()
			if used := run.Status.ResourceSnapshotIndexUsed; used != "0" {
				t.Errorf("the run finished on snapshot %q, want 0", used)
			}
			checkRunHistory(t, r, "example-run")
		})
	}
}
