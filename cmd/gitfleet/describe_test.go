package main

import (
	"strings"
	"testing"

	"github.com/gitfleet/gitfleet/internal/testing/golden"
)

// describe run shows the demo the way `kubectl describe csur example-run`
// shows it in the seeds: stage by stage, waiting on the canary approval.
func TestDescribeRunPrintsTheDemoLikeKubectl(t *testing.T) {
	repo := demoRepo(t)
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"describe-run.txt", []string{"describe", "run", "example-run"}},
		{"describe-approval.txt", []string{"describe", "approval", "example-run-after-canary"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			out, errOut, code := gitfleet(t, append(tc.args, "--repo", repo)...)
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			golden.Assert(t, tc.golden, []byte(out))
		})
	}
}

// Without a name every object of the kind is described, separated by a
// blank line as kubectl does.
func TestDescribeWithoutNameDescribesEveryObject(t *testing.T) {
	out, errOut, code := gitfleet(t, "describe", "bindings", "--repo", demoRepo(t))
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if n := strings.Count(out, "\nName:  "); n != 2 || !strings.HasPrefix(out, "Name:  ") || strings.Count(out, "\n\n\nName:") != 2 {
		t.Errorf("want three bindings separated by blank lines, got\n%s", out)
	}
}

func TestDescribeNamesWhatIsMissing(t *testing.T) {
	repo := demoRepo(t)
	out, errOut, code := gitfleet(t, "describe", "run", "example-rnu", "--repo", repo)
	if code != 1 || out != "" || !strings.Contains(errOut, `clusterstagedupdaterun.placement.kubernetes-fleet.io "example-rnu" not found`) {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
