package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource/plan"
)

// testRollbackCommand is TestPlan's "rollback command" on its recorded
// fleet (example-run rolled snapshot 0 out, example-run-2 snapshot 1):
// gitfleet rollback example-run-2 writes the run back to 0, which plan
// predicts to succeed; a placement that rejects snapshot 0 leaves nothing
// to roll back to, and --to 0 is refused naming the annotation.
func testRollbackCommand(t *testing.T, work string, planOf func(t *testing.T, args ...string) (*plan.Plan, string, int)) {
	branch(t, work, "rollback-command")
	file := filepath.Join(work, "rollbacks", "example-run-2.yaml")

	out, errOut, code := gitfleet(t, "rollback", "example-run-2", "--repo", work, "--dry-run")
	if code != 0 || !strings.Contains(out, "name: example-run-2-rollback\n") || !strings.Contains(out, `resourceSnapshotIndex: "0"`) ||
		!strings.Contains(out, "# Resource snapshot 0 is the last that succeeded on member2, member3, member1 (run example-run).") {
		t.Fatalf("--dry-run: exit %d, want the run back to 0:\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("--dry-run wrote %s", file)
	}

	out, errOut, code = gitfleet(t, "rollback", "example-run-2", "--repo", work)
	if code != 0 || !strings.HasPrefix(out, "wrote rollbacks/example-run-2.yaml: run example-run-2-rollback rolls placement example-placement back to resource snapshot 0 "+
		"(the last that succeeded on member2, member3, member1, in run example-run)\n") {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	commitAll(t, work, "roll back example-run-2")
	p, errOut, code := planOf(t)
	var rb *plan.Run
	for i := range p.Runs {
		if p.Runs[i].Name == "example-run-2-rollback" {
			rb = &p.Runs[i]
		}
	}
	if code != 0 || rb == nil || !rb.New || rb.Snapshot != "0" || rb.After != fleet.PhaseSucceeded {
		t.Fatalf("plan: exit %d, want example-run-2-rollback new, snapshot 0, Succeeded: %+v\n%s", code, p.Runs, errOut)
	}

	edit(t, work, "placement.yaml", "  name: example-placement\n", "  name: example-placement\n  annotations:\n    gitfleet.io/rejected-snapshot-0: broke the canary\n")
	_, errOut, code = gitfleet(t, "rollback", "example-run-2", "--repo", work, "--to", "0")
	if code == 0 || !strings.Contains(errOut, "--to 0: placement example-placement rejects resource snapshot 0 (annotation gitfleet.io/rejected-snapshot-0: broke the canary)") {
		t.Errorf("--to a rejected index: exit %d: %s", code, errOut)
	}
	_, errOut, code = gitfleet(t, "rollback", "example-run-2", "--repo", work)
	if code == 0 || !strings.Contains(errOut, "no rollback for example-run-2: no run of placement `example-placement` succeeded with another resource snapshot than `1`") {
		t.Errorf("only a rejected index to go back to: exit %d: %s", code, errOut)
	}
	gitCmd(t, work, "checkout", "-q", "--", "placement.yaml")
}
