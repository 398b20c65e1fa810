package plan

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/gitfleet/gitfleet/internal/testing/gittest"
)

// A change that adds a run with a failure policy, on a fleet whose member3
// never becomes available: the plan models the deadline in virtual time
// and says which cluster may fail and what budget it uses — within the
// budget the run partially succeeds; over it, the plan fails the run.
func TestPlanShowsTheFailureBudgetAndWhatIsUsed(t *testing.T) {
	for _, tc := range []struct {
		name, budget, after string
		want                []string
	}{
		{"within", "50%", "Succeeded", []string{
			"member3 may fail without stopping the run: budget 1 of 50% in stage canary (2 cluster(s), 1 used, a cluster fails after 2m)",
			"failure budget 1 of 50% in stage staging (1 cluster(s), 0 used, a cluster fails after 2m)",
			"Succeeded: resource snapshot 0 on every cluster but the failed ones (All stages are completed, 1 cluster(s) failed within the failure budget: member3 (stage canary))",
		}},
		{"over", "0", "Failed", []string{
			"member3 fail the run: over the budget 0 in stage canary (2 cluster(s), 1 used, a cluster fails after 2m)",
			"the failure budget is exceeded",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := quickstart(t)
			gittest.Must(t, repo, "checkout", "-q", "-b", "change")
			replace(t, repo, "members.yaml", "    gitfleet.io/sim-available-after: 10s\nspec:\n  identity:\n    kind: ServiceAccount\n    name: fleet-member-agent-member3",
				"    gitfleet.io/sim-available-after: 10s\n    gitfleet.io/sim-unavailable: down\nspec:\n  identity:\n    kind: ServiceAccount\n    name: fleet-member-agent-member3")
			replace(t, repo, "run.yaml", "  state: Run\n", "  state: Run\n  failurePolicy:\n    maxAllowedClusterFailures: "+tc.budget+"\n    maxWaitTimePerClusterMinutes: 2\n")
			commit(t, repo, "a failure budget")

			p, err := Compute(context.Background(), Options{Repo: repo, Base: "main", Head: "change"})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := WriteText(&out, p); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("the plan lacks %q:\n%s", w, out.String())
				}
			}
			for _, r := range p.Runs {
				if r.Name == "example-run" && r.After != tc.after {
					t.Errorf("example-run ends %s, want %s", r.After, tc.after)
				}
			}
		})
	}
}
