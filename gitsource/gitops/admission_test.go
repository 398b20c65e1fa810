package gitops_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// A change the API server would refuse is refused the same way: the run
// keeps its last accepted spec and its status file says why, in KubeFleet's
// words; a later valid change clears the note.
func TestRefusedRunChangesAreReportedAndTheAcceptedSpecKeepsRunning(t *testing.T) {
	files := quickstartFleet(t)
	r := newFleetRepo(t, files)
	startDaemon(t, "file://"+r.remote, t.TempDir(), 50*time.Millisecond)
	waitForCanaryApproval(t, r)

	cases := []struct {
		name, from, to, want string
	}{
		{"immutable placementName", "placementName: example-placement", "placementName: another-placement", "placementName is immutable"},
		{"forbidden state transition", "state: Run", "state: Initialize", "invalid state transition: cannot transition from Run to Initialize"},
	}
	// The commit that carries only the refusal says so in its title.
	title := func() string {
		return strings.TrimSpace(r.git("log", "-1", "--format=%s", "main", "--", "status/runs/example-run.yaml"))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			changed := strings.Replace(string(files["run.yaml"]), tc.from, tc.to, 1)
			r.commit(tc.name, map[string][]byte{"run.yaml": []byte(changed)})
			var run *fleet.UpdateRun
			eventually(t, "the rejection on the run's status file", func() bool {
				run = r.run("example-run")
				return strings.Contains(run.Annotations[fleet.RejectedChangeAnnotation], tc.want)
			})
			if run.Spec.PlacementName != "example-placement" || run.Spec.State != fleet.StateRun || run.Generation != 1 {
				t.Errorf("the refused spec was applied: %+v, generation %d", run.Spec, run.Generation)
			}
			if !strings.Contains(run.Annotations[fleet.RejectedChangeAnnotation], "run.yaml") {
				t.Errorf("the note %q does not name the file", run.Annotations[fleet.RejectedChangeAnnotation])
			}
			if got, want := title(), "status: example-run change refused: "+tc.want; got != want {
				t.Errorf("the status commit is titled %q, want %q", got, want)
			}
		})
	}

	// Stop is allowed: generation 2, the note is gone, the run stops.
	stopped := strings.Replace(string(files["run.yaml"]), "state: Run", "state: Stop", 1)
	r.commit("stop", map[string][]byte{"run.yaml": []byte(stopped)})
	run := r.waitPhase("example-run", fleet.PhaseStopped)
	if run.Generation != 2 || run.Annotations[fleet.RejectedChangeAnnotation] != "" {
		t.Errorf("after an accepted change: generation %d, note %q", run.Generation, run.Annotations[fleet.RejectedChangeAnnotation])
	}
}

// Deleting a run's file deletes the run: its status file and its approval
// requests go, and nothing else.
func TestDeletingTheRunFileRemovesItsStatusAndApprovals(t *testing.T) {
	r := newFleetRepo(t, quickstartFleet(t))
	startDaemon(t, "file://"+r.remote, t.TempDir(), 50*time.Millisecond)
	waitForCanaryApproval(t, r)

	r.commit("abandon the rollout", map[string][]byte{"run.yaml": nil})
	eventually(t, "the run's status file to go", func() bool { return r.file("status/runs/example-run.yaml") == nil })
	eventually(t, "the approval request to go", func() bool { return r.approval(approvalName) == nil })
	for _, member := range []string{"member1", "member2", "member3"} {
		if r.file("status/bindings/example-placement/"+member+".yaml") == nil {
			t.Errorf("the binding of %s went with the run; bindings stay as they are (the release is abandoned)", member)
		}
	}
}

// A broken manifest withholds only itself: the other runs go on, and the
// object that stopped rendering keeps its last good version.
func TestABrokenRunFileDoesNotStopOtherRuns(t *testing.T) {
	files := quickstartFleet(t)
	files["broken-run.yaml"] = []byte("apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterStagedUpdateRun\nmetadata:\n  name: broken\nspec:\n  placementName: example-placement\n  stagedRolloutStrategyName: example-strategy\n  state: Sprint\n")
	r := newFleetRepo(t, files)
	startDaemon(t, "file://"+r.remote, t.TempDir(), 50*time.Millisecond)
	waitForCanaryApproval(t, r)
	if r.run("broken") != nil {
		t.Error("a run with an invalid state was admitted")
	}

	// A typo in the good run's file keeps the run as it was.
	r.commit("typo", map[string][]byte{"run.yaml": []byte("apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterStagedUpdateRun\nmetadata:\n  name: example-run\nspec:\n  placementNam: example-placement\n")})
	var run *fleet.UpdateRun
	eventually(t, "the run's status file to say its file no longer renders", func() bool {
		run = r.run("example-run")
		return run != nil && strings.Contains(run.Annotations[fleet.RejectedChangeAnnotation], "no longer renders (run.yaml")
	})
	if !strings.Contains(run.Annotations[fleet.RejectedChangeAnnotation], "placementNam") {
		t.Errorf("the note %q does not name the unknown field", run.Annotations[fleet.RejectedChangeAnnotation])
	}
	if run.Phase() != fleet.PhaseWaiting || run.Spec.PlacementName != "example-placement" {
		t.Fatalf("a broken file changed its run: %s %+v", run.Phase(), run.Spec)
	}
	title := strings.TrimSpace(r.git("log", "-1", "--format=%s", "main", "--", "status/runs/example-run.yaml"))
	if want := "status: example-run change refused: run.yaml no longer renders"; title != want {
		t.Errorf("the status commit is titled %q, want %q", title, want)
	}
}

// A run naming a strategy that is in Git but refused fails its
// initialization in serve saying the strategy is invalid, with the
// strategy's first error and where it is, not that it does not exist.
func TestARunOfARefusedStrategyFailsSayingItIsInvalid(t *testing.T) {
	files := quickstartFleet(t)
	edited := bytes.Replace(files["strategy.yaml"], []byte("      sortingLabelKey: order\n"), []byte("      sortingLabelKey: order\n      maxConcurrency: 0\n"), 1)
	if bytes.Equal(edited, files["strategy.yaml"]) {
		t.Fatal("the edit changed nothing")
	}
	files["strategy.yaml"] = edited
	r := newFleetRepo(t, files)
	startDaemon(t, "file://"+r.remote, t.TempDir(), 50*time.Millisecond)
	run := r.waitPhase("example-run", fleet.PhaseInitFailed)
	want := "cannot continue the updateRun: failed to validate the updateRun: failed to process the request due to a client error: " +
		"strategy example-strategy is invalid: spec.stages[1].maxConcurrency: Invalid value: 0: maxConcurrency must be at least 1 (strategy.yaml:21)"
	if c := meta.FindStatusCondition(run.Status.Conditions, fleet.StagedUpdateRunConditionInitialized); c == nil || c.Message != want {
		t.Errorf("Initialized condition %+v, want the message %q", c, want)
	}
}
