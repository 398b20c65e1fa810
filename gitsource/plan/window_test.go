package plan

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gitfleet/gitfleet/internal/testing/gittest"
)

// A change that puts the canary stage in an office-hours window: the plan
// names the window among the stage's gates, its START is the window's
// opening as seen from the instant the merge is assumed at (--at), and the
// timeline says what the stage waits for.
func TestPlanShowsEachStagesETAGivenItsWindows(t *testing.T) {
	repo := quickstart(t)
	gittest.Must(t, repo, "checkout", "-q", "-b", "change")
	write(t, repo, "window.yaml", `apiVersion: gitfleet.io/v1alpha1
kind: RolloutWindow
metadata: {name: office}
spec:
  timeZone: America/New_York
  windows: [{days: [Mon, Tue, Wed, Thu, Fri], start: "09:00", end: "17:00"}]
`)
	replace(t, repo, "strategy.yaml", "      sortingLabelKey: order\n", "      sortingLabelKey: order\n      windows: [office]\n")
	commit(t, repo, "canary in office hours")

	// Saturday 2026-03-07, noon UTC: the canary opens on Monday 09:00 EDT,
	// after New York's spring-forward.
	at := time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC)
	p, err := Compute(context.Background(), Options{Repo: repo, Base: "main", At: at, Until: 7 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Runs) != 1 || len(p.Runs[0].Stages) != 2 {
		t.Fatalf("runs %+v", p.Runs)
	}
	canary := p.Runs[0].Stages[1]
	if len(canary.Before) == 0 || canary.Before[0] != (Gate{Type: GateWindow, Window: "office"}) {
		t.Errorf("canary gates %+v, want the window first", canary.Before)
	}
	opens := time.Date(2026, 3, 9, 13, 0, 0, 0, time.UTC)
	if canary.Start == nil || canary.Start.Duration != opens.Sub(at) {
		t.Errorf("canary starts at %v, want %s (its window's opening)", canary.Start, opens.Sub(at))
	}
	var text bytes.Buffer
	if err := WriteText(&text, p); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Window office", "waiting for window office (opens 2026-03-09T13:00:00Z)", "+49h0m0s"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the plan lacks %q:\n%s", want, text.String())
		}
	}
}
