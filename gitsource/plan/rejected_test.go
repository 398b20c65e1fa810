package plan

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/gitfleet/gitfleet/internal/testing/gittest"
)

// A change that rejects the snapshot a run would roll out
// (gitfleet.io/rejected-snapshot-<index> on its placement) shows the run
// refusing to initialize, with the reason, in the plan and its text.
func TestPlanShowsARunRefusedForARejectedSnapshot(t *testing.T) {
	repo := quickstart(t)
	gittest.Must(t, repo, "checkout", "-q", "-b", "reject")
	replace(t, repo, "placement.yaml", "  name: example-placement\n",
		"  name: example-placement\n  annotations:\n    gitfleet.io/rejected-snapshot-0: \"crash loop in canary, incident 42\"\n")
	commit(t, repo, "reject snapshot 0")

	p, err := Compute(context.Background(), Options{Repo: repo, Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, r := range p.Runs {
		if r.Name != "example-run" {
			continue
		}
		found = true
		want := "resource snapshot index `0` of placement `example-placement` is rejected by its annotation gitfleet.io/rejected-snapshot-0: crash loop in canary, incident 42"
		if r.After != "InitFailed" || !strings.Contains(r.Detail, want) {
			t.Errorf("example-run: after %s, detail %q; want InitFailed with %q", r.After, r.Detail, want)
		}
	}
	if !found {
		t.Fatalf("no example-run in the plan: %+v", p.Runs)
	}
	var out bytes.Buffer
	if err := WriteText(&out, p); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "InitFailed: cannot continue the updateRun") || !strings.Contains(out.String(), "rejected by its annotation gitfleet.io/rejected-snapshot-0") {
		t.Errorf("the text does not show the refusal:\n%s", out.String())
	}
}
