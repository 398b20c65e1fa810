package plan

import (
	"bytes"
	"context"
	"strings"
	"testing"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/gittest"
)

// A retry written in a change is previewed as the engine would take it:
// here refused, with the reason, since the run it retries is still under
// way (or has nothing left to retry) when the merge lands.
func TestPlanShowsARetry(t *testing.T) {
	repo := quickstart(t)
	gittest.Must(t, repo, "checkout", "-q", "-b", "change")
	write(t, repo, "retry.yaml", "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterStagedUpdateRun\n"+
		"metadata: {name: example-run-retry}\nspec: {placementName: example-placement, stagedRolloutStrategyName: example-strategy, state: Run, retryOf: example-run}\n")
	commit(t, repo, "retry example-run")

	p, err := Compute(context.Background(), Options{Repo: repo, Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	var retry *Run
	for i := range p.Runs {
		if p.Runs[i].Name == "example-run-retry" {
			retry = &p.Runs[i]
		}
	}
	if retry == nil || retry.RetryOf != "example-run" || retry.After != fleet.PhaseInitFailed ||
		!strings.Contains(retry.Detail, "the retried updateRun `example-run`") {
		t.Fatalf("retry run %+v, want refused naming example-run", retry)
	}
	var text bytes.Buffer
	if err := WriteText(&text, p); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "retries example-run: its resource snapshot and strategy") {
		t.Errorf("the plan does not say what the run retries:\n%s", text.String())
	}
}

// The plan says which clusters a run leaves out, leaves to the next run
// and skipped, in text and in the pull request comment.
func TestPlanSaysWhichClustersARunDoesNotUpdate(t *testing.T) {
	p := &Plan{Runs: []Run{{Name: "run", Placement: "app", Strategy: "s", Before: "New", After: fleet.PhaseSucceeded,
		Unmatched: []string{"m9"}, Pending: []string{"m7"}, Skipped: []string{"m3"}}}}
	var text bytes.Buffer
	if err := WriteText(&text, p); err != nil {
		t.Fatal(err)
	}
	comment := Comment(p)
	for _, want := range []string{"no stage selects 1 cluster(s): m9", "joined after initialization, left to the next run: m7",
		"left the placement, skipped (a run with retryOf: run takes them): m3"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text has no %q:\n%s", want, text.String())
		}
		if !strings.Contains(comment, want) {
			t.Errorf("comment has no %q:\n%s", want, comment)
		}
	}
}
