package simulate

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// budgetQuickstart is the quickstart with member3 never available
// (gitfleet.io/sim-unavailable) and a run with the given failurePolicy.
func budgetQuickstart(t *testing.T, policy string) map[string][]byte {
	t.Helper()
	files := quickstart(t)
	members := strings.Replace(string(files["members.yaml"]), `    gitfleet.io/sim-available-after: 10s
spec:
  identity:
    kind: ServiceAccount
    name: fleet-member-agent-member3`, `    gitfleet.io/sim-available-after: 10s
    gitfleet.io/sim-unavailable: "its API server is down"
spec:
  identity:
    kind: ServiceAccount
    name: fleet-member-agent-member3`, 1)
	if members == string(files["members.yaml"]) {
		t.Fatal("examples/quickstart/members.yaml changed: member3 not found")
	}
	files["members.yaml"] = []byte(members)
	files["run.yaml"] = []byte(string(files["run.yaml"]) + policy)
	return files
}

// simulate models a failure policy in virtual time: a member that never
// becomes available fails at its deadline, and the run ends partially
// succeeded within its budget, or failed over it, at the virtual time the
// deadline gives.
func TestSimulateModelsFailureBudgetsAndDeadlines(t *testing.T) {
	for _, tc := range []struct {
		name, policy string
		want         []string
	}{
		{"within the budget", "  failurePolicy:\n    maxAllowedClusterFailures: 1\n    maxWaitTimePerClusterMinutes: 2\n", []string{
			"+3m10s   example-run   stage canary: cluster member3 failed: the cluster `member3` in the stage `canary` did not finish updating within maxWaitTimePerClusterMinutes 2",
			"stage canary: cluster member1 started",
			"partially succeeded: All stages are completed, 1 cluster(s) failed within the failure budget: member3 (stage canary)",
		}},
		{"over the budget", "  failurePolicy:\n    maxAllowedClusterFailures: 0%\n    maxWaitTimePerClusterMinutes: 2\n", []string{
			"stage canary: cluster member3 failed",
			"the failure budget is exceeded: the stage `canary` has 1 failed cluster(s), more than maxAllowedClusterFailures 0 (0% of 2 clusters): member3",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Run(context.Background(), Options{Repo: newRepo(t, budgetQuickstart(t, tc.policy)), Approve: true})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := WriteTimeline(&out, res.Timeline); err != nil {
				t.Fatal(err)
			}
			text := out.String()
			at := 0
			for _, s := range tc.want {
				i := strings.Index(text[at:], s)
				if i < 0 {
					t.Fatalf("timeline lacks %q after offset %d:\n%s", s, at, text)
				}
				at += i
			}
			if tc.name == "over the budget" && strings.Contains(text, "cluster member1 started") {
				t.Errorf("a stage over its budget started another cluster:\n%s", text)
			}
		})
	}
}
