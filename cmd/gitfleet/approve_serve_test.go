package main

import (
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// The whole person-facing loop with the real commands: serve until the run
// waits, `gitfleet approve --commit` in a clone, push, serve again (a
// restart, from the same cache) until idle: the approval is accepted and
// the run succeeds.
func TestApproveThenServeAcceptsTheApproval(t *testing.T) {
	remote := quickstartRemote(t, "0s", "1s")
	cache := t.TempDir()
	serve := func() {
		t.Helper()
		args := []string{"serve", "--repo", "file://" + remote, "--cache-dir", cache, "--interval", "100ms",
			"--status-interval", "50ms", "--metrics-addr", "", "--log-level", "warn", "--until-idle", "--timeout", "20m"}
		if out, errOut, code := gitfleet(t, args...); code != 0 {
			t.Fatalf("serve exited %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
	}
	serve()

	clone := filepath.Join(t.TempDir(), "fleet")
	gitCmd(t, filepath.Dir(clone), "clone", "-q", remote, clone)
	if out, errOut, code := gitfleet(t, "approve", "example-run-after-canary", "--repo", clone, "--commit"); code != 0 {
		t.Fatalf("approve exited %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	gitCmd(t, clone, "push", "-q", "origin", "HEAD:main")
	serve()

	run := decodeFrom(t, remote, "main", "status/runs/example-run.yaml").(*fleet.UpdateRun)
	if run.Phase() != fleet.PhaseSucceeded {
		t.Fatalf("run is %s after the approval, want Succeeded: %v", run.Phase(), run.Status.Conditions)
	}
	ar := decodeFrom(t, remote, "main", "approvals/example-run-after-canary.yaml").(*fleet.ApprovalRequest)
	if !meta.IsStatusConditionTrue(ar.Status.Conditions, fleet.ApprovalRequestConditionApprovalAccepted) {
		t.Errorf("the approval was not accepted: %v", ar.Status.Conditions)
	}
}
