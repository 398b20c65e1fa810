package gitops_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/kubetest"
	"github.com/gitfleet/gitfleet/reconciler/updaterun"
)

// budgetFleet is the restart tests' fleet with member3 never available
// (gitfleet.io/sim-unavailable) and a run that may lose one cluster per
// stage, each given a minute.
func budgetFleet(t testing.TB) map[string][]byte {
	t.Helper()
	files := timedFleet(t, restartAvailableAfter, restartSoak)
	members := string(files["members.yaml"])
	marker := "    name: fleet-member-agent-member3"
	i := strings.Index(members, marker)
	j := strings.LastIndex(members[:i], "spec:\n")
	if i < 0 || j < 0 {
		t.Fatal("examples/quickstart/members.yaml changed: member3 not found")
	}
	files["members.yaml"] = []byte(members[:j] + "    gitfleet.io/sim-unavailable: its API server is down\n" + members[j:])
	files["run.yaml"] = []byte(strings.Replace(string(files["run.yaml"]), "  state: Run\n",
		"  state: Run\n  failurePolicy:\n    maxAllowedClusterFailures: 1\n    maxWaitTimePerClusterMinutes: 1\n", 1))
	return files
}

func clusterFailed(run *fleet.UpdateRun, stage, cluster string) bool {
	if run == nil {
		return false
	}
	for _, st := range run.Status.StagesStatus {
		for _, c := range st.Clusters {
			if st.StageName == stage && c.ClusterName == cluster {
				return meta.IsStatusConditionFalse(c.Conditions, fleet.ClusterUpdatingConditionSucceeded)
			}
		}
	}
	return false
}

// checkBudgetHistory checks every version of a run's status in Git
// against what a failure budget promises: a failed cluster stays failed;
// no cluster of a stage starts after the failure that took the stage over
// its budget; a run that succeeded with failed clusters says
// UpdateRunPartiallySucceeded and kept each stage within its budget, and
// one that says UpdateRunSucceeded lost none.
func checkBudgetHistory(t testing.TB, r *fleetRepo, name string) {
	t.Helper()
	path := "status/runs/" + name + ".yaml"
	commits, versions := r.history(path)
	failedOnce := map[string]bool{}
	for i, data := range versions {
		run := decode(t, path, data).(*fleet.UpdateRun)
		at := fmt.Sprintf("%s at commit %s", path, commits[i][:12])
		for _, problem := range budgetViolations(run) {
			t.Errorf("%s: %s", at, problem)
		}
		for _, st := range run.Status.StagesStatus {
			for _, c := range st.Clusters {
				key := st.StageName + "/" + c.ClusterName
				failed := meta.IsStatusConditionFalse(c.Conditions, fleet.ClusterUpdatingConditionSucceeded)
				if failedOnce[key] && !failed {
					t.Errorf("%s: cluster %s is no longer failed", at, key)
				}
				failedOnce[key] = failedOnce[key] || failed
			}
		}
	}
}

func budgetViolations(run *fleet.UpdateRun) []string {
	snap := run.Status.StagedUpdateStrategySnapshot
	if run.Spec.FailurePolicy == nil || snap == nil {
		return nil
	}
	var out []string
	failedInRun := 0
	for i, st := range run.Status.StagesStatus {
		budget, _, err := updaterun.StageBudget(run.Spec.FailurePolicy, &snap.Stages[i], len(st.Clusters))
		if err != nil {
			out = append(out, err.Error())
			continue
		}
		var failedAt []time.Time
		for _, c := range st.Clusters {
			if s := meta.FindStatusCondition(c.Conditions, fleet.ClusterUpdatingConditionSucceeded); s != nil && s.Status == metav1.ConditionFalse {
				failedAt = append(failedAt, s.LastTransitionTime.Time)
			}
		}
		failedInRun += len(failedAt)
		if len(failedAt) > budget {
			sort.Slice(failedAt, func(a, b int) bool { return failedAt[a].Before(failedAt[b]) })
			over := failedAt[budget]
			for _, c := range st.Clusters {
				if s := meta.FindStatusCondition(c.Conditions, fleet.ClusterUpdatingConditionStarted); s != nil && s.LastTransitionTime.After(over) {
					out = append(out, fmt.Sprintf("cluster %s of stage %s started after the stage went over its budget of %d", c.ClusterName, st.StageName, budget))
				}
			}
		}
		if meta.IsStatusConditionTrue(run.Status.Conditions, fleet.StagedUpdateRunConditionSucceeded) && len(failedAt) > budget {
			out = append(out, fmt.Sprintf("the run succeeded with %d failed clusters in stage %s, over its budget of %d", len(failedAt), st.StageName, budget))
		}
	}
	if c := meta.FindStatusCondition(run.Status.Conditions, fleet.StagedUpdateRunConditionSucceeded); c != nil && c.Status == metav1.ConditionTrue {
		switch {
		case failedInRun > 0 && c.Reason != fleet.UpdateRunPartiallySucceededReason:
			out = append(out, fmt.Sprintf("the run succeeded with %d failed clusters, reason %s", failedInRun, c.Reason))
		case failedInRun == 0 && c.Reason == fleet.UpdateRunPartiallySucceededReason:
			out = append(out, "the run partially succeeded without a failed cluster")
		}
	}
	return out
}

// A daemon stopped while a cluster that never becomes available updates,
// again right after its deadline failed it, and again after the approval,
// each time replaced by one with an empty cache, keeps the failure budget:
// the deadline runs from the cluster's start recorded in Git, the failed
// cluster stays failed and keeps its binding, the rest of the stage goes
// on, and the run ends partially succeeded naming it.
func TestRestartKeepsTheFailureBudget(t *testing.T) {
	r := newFleetRepo(t, budgetFleet(t))
	updates := r.refUpdates()
	d := startRestartingDaemon(t, r)
	d.advanceUntil(t, "member3 updating in canary", d.runIs(func(run *fleet.UpdateRun) bool {
		return clusterUpdating(run, "canary", "member3")
	}))
	started := meta.FindStatusCondition(r.run("example-run").Status.StagesStatus[1].Clusters[0].Conditions, fleet.ClusterUpdatingConditionStarted).LastTransitionTime.Time
	d.restart(t, "while member3 was updating")
	d.advanceUntil(t, "member3 failed at its deadline", d.runIs(func(run *fleet.UpdateRun) bool {
		return clusterFailed(run, "canary", "member3")
	}))
	failed := meta.FindStatusCondition(r.run("example-run").Status.StagesStatus[1].Clusters[0].Conditions, fleet.ClusterUpdatingConditionSucceeded)
	if wait := failed.LastTransitionTime.Sub(started); wait < time.Minute || wait > time.Minute+updaterun.ClusterPollInterval+time.Second {
		t.Errorf("member3 failed %s after its start, want its 1-minute deadline (polled every %s)", wait, updaterun.ClusterPollInterval)
	}
	if !strings.Contains(failed.Message, "did not finish updating within maxWaitTimePerClusterMinutes 1") {
		t.Errorf("member3's failure does not say why: %q", failed.Message)
	}
	d.restart(t, "right after member3 failed")
	d.advanceUntil(t, "the canary approval request", func() bool { return r.approval(approvalName) != nil })
	r.approve(approvalName)
	d.restart(t, "right after the approval was merged")

	d.advanceUntil(t, "the run to succeed", d.runIs(func(run *fleet.UpdateRun) bool { return run.Phase() == fleet.PhaseSucceeded }))
	d.advanceUntil(t, "member1 and member2 available on snapshot 0", func() bool {
		return bindingsAvailable(r, "example-placement-0-snapshot", "member1", "member2")
	})
	d.stop(t)

	got := r.run("example-run")
	c := meta.FindStatusCondition(got.Status.Conditions, fleet.StagedUpdateRunConditionSucceeded)
	if want := "All stages are completed, 1 cluster(s) failed within the failure budget: member3 (stage canary)"; c.Reason != fleet.UpdateRunPartiallySucceededReason || c.Message != want {
		t.Errorf("run Succeeded %s %q, want %s %q", c.Reason, c.Message, fleet.UpdateRunPartiallySucceededReason, want)
	}
	if b := r.object("status/bindings/example-placement/member3.yaml").(*fleet.Binding); b.Spec.ResourceSnapshotName != "example-placement-0-snapshot" || b.Spec.State != fleet.BindingStateBound {
		t.Errorf("member3's binding: %s on %q, want it kept Bound on the run's snapshot", b.Spec.State, b.Spec.ResourceSnapshotName)
	}
	checkRunHistory(t, r, "example-run")
	checkBudgetHistory(t, r, "example-run")
	checkApprovalKept(t, r, approvalName)
	checkFastForwardsOnly(t, r, updates())
}

// SIGKILLed while a cluster that never becomes available updates, right
// after its deadline failed it, and after the approval, the real binary
// keeps the kill -9 campaign's invariants with a budget in play, and ends
// the run partially succeeded. (A real clock: the deadline is a real
// minute.)
func TestKilledServeProcessKeepsTheFailureBudget(t *testing.T) {
	r := newFleetRepo(t, budgetFleet(t))
	updates := r.refUpdates()
	cache := t.TempDir()
	serve := restartableServe(t, r)
	p := serve(cache)
	r.waitRun("example-run", "member3 started in canary", func(run *fleet.UpdateRun) bool {
		return clusterStarted(run, "canary", "member3")
	})
	p.kill()
	p = serve(t.TempDir())
	r.waitRun("example-run", "member3 failed at its deadline", func(run *fleet.UpdateRun) bool {
		return clusterFailed(run, "canary", "member3")
	})
	p.kill()
	p = serve(cache)
	r.approve(approvalName)
	p.kill()
	p = serve(t.TempDir())

	got := r.waitPhase("example-run", fleet.PhaseSucceeded)
	waitBindingsAvailable(t, r, "example-placement-0-snapshot", "member1", "member2")
	p.kill()

	if c := meta.FindStatusCondition(got.Status.Conditions, fleet.StagedUpdateRunConditionSucceeded); c.Reason != fleet.UpdateRunPartiallySucceededReason ||
		!strings.Contains(c.Message, "member3 (stage canary)") {
		t.Errorf("run Succeeded %s %q, want partially succeeded naming member3", c.Reason, c.Message)
	}
	checkRunHistory(t, r, "example-run")
	checkBudgetHistory(t, r, "example-run")
	checkApprovalKept(t, r, approvalName)
	checkFastForwardsOnly(t, r, updates())
}

// End to end through `gitfleet serve` on three real API servers: member1's
// API server is killed while the run holds at the canary stage's
// before-stage approval, so when the canary stage runs, member3 updates
// and member1 cannot; at its one-minute deadline member1 fails with what
// its binding says, the stage goes on within its budget of 1, and the run
// ends Succeeded=True UpdateRunPartiallySucceeded naming member1. Its
// binding stays on the run's snapshot, so once its API server is back the
// member converges.
func TestAMemberWhoseAPIServerDiesFailsWithinTheBudget(t *testing.T) {
	clusters := startClusters(t, "member1", "member2", "member3")
	member1, member2, member3 := clusters[0], clusters[1], clusters[2]
	files := kubeconfigFleet(t)
	files["run.yaml"] = []byte(strings.Replace(string(files["run.yaml"]), "  state: Run\n",
		"  state: Run\n  failurePolicy:\n    maxAllowedClusterFailures: 1\n    maxWaitTimePerClusterMinutes: 1\n", 1))
	r := newFleetRepo(t, files)
	startServe(t, "--repo", "file://"+r.remote, "--cache-dir", t.TempDir(), "--interval", "200ms",
		"--status-interval", "100ms", "--metrics-addr", "", "--kubeconfig", kubetest.Kubeconfig(t, clusters, nil))
	value := func(c *kubetest.Cluster) string { return c.ConfigMapValue("test-namespace", "test-cm", "key") }

	eventually(t, "the canary stage's before-stage approval request", func() bool {
		return r.approval("example-run-before-canary") != nil
	})
	if value(member2) != "value1" {
		t.Fatalf("staging (member2) has %q, want value1", value(member2))
	}
	// Freeze member1's API server before its stage, so that its update,
	// once started, hangs in flight; kill the API server only then: it
	// dies mid-stage, with member1 started and not done.
	member1.PauseAPIServer()
	r.approve("example-run-before-canary")
	r.waitRun("example-run", "member1 started in the canary stage", func(run *fleet.UpdateRun) bool {
		return clusterStarted(run, "canary", "member1")
	})
	if run := r.run("example-run"); clusterFailed(run, "canary", "member1") {
		t.Fatal("member1 failed before its API server was killed")
	}
	member1.StopAPIServer()
	r.waitRun("example-run", "member1 failed at its deadline", func(run *fleet.UpdateRun) bool {
		return clusterFailed(run, "canary", "member1")
	})
	if value(member3) != "value1" {
		t.Errorf("member3 has %q, want value1: the canary stage goes on around member1", value(member3))
	}
	run := r.run("example-run")
	failed := meta.FindStatusCondition(run.Status.StagesStatus[1].Clusters[1].Conditions, fleet.ClusterUpdatingConditionSucceeded)
	if !strings.Contains(failed.Message, "the cluster `member1` in the stage `canary` did not finish updating within maxWaitTimePerClusterMinutes 1: ") ||
		!strings.Contains(failed.Message, "binding ") {
		t.Errorf("member1's failure does not say why: %q", failed.Message)
	}
	r.approve("example-run-after-canary")
	got := r.waitPhase("example-run", fleet.PhaseSucceeded)
	c := meta.FindStatusCondition(got.Status.Conditions, fleet.StagedUpdateRunConditionSucceeded)
	if want := "All stages are completed, 1 cluster(s) failed within the failure budget: member1 (stage canary)"; c.Reason != fleet.UpdateRunPartiallySucceededReason || c.Message != want {
		t.Errorf("run Succeeded %s %q, want %s %q", c.Reason, c.Message, fleet.UpdateRunPartiallySucceededReason, want)
	}
	checkRunHistory(t, r, "example-run")
	checkBudgetHistory(t, r, "example-run")

	member1.StartAPIServer()
	eventually(t, "member1 to converge on the run's snapshot once its API server is back", func() bool {
		return value(member1) == "value1"
	})
}
