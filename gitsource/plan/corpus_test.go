package plan

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitfleet/gitfleet/internal/testing/gittest"
	"github.com/gitfleet/gitfleet/internal/testing/manifestcorpus"
)

// Every refused commit of render's corpus, as a change on top of the
// quickstart: plan says gitfleet would refuse the merge whole, names every
// problem the case expects at its file and line, plans no snapshot and no
// run, lists no deletion, and fails.
func TestPlanSaysEveryRefusedCommitOfTheCorpusIsRefusedWhole(t *testing.T) {
	cases, err := manifestcorpus.Load("../../render/testdata/corpus/refused")
	if err != nil || len(cases) == 0 {
		t.Fatalf("the corpus: %v (%d cases)", err, len(cases))
	}
	repo := quickstart(t)
	ctx := context.Background()
	for _, c := range cases {
		if c.MaxFileSize != 0 {
			continue // plan reads with serve's default limits
		}
		t.Run(c.Name, func(t *testing.T) {
			gittest.Must(t, repo, "checkout", "-q", "-B", "typo", "main")
			if err := os.Remove(filepath.Join(repo, "workload.yaml")); err != nil {
				t.Fatal(err)
			}
			if err := c.WriteTree(repo); err != nil {
				t.Fatal(err)
			}
			write(t, repo, "typo-run.yaml", "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterStagedUpdateRun\n"+
				"metadata: {name: typo-run}\nspec: {placementName: example-placement, stagedRolloutStrategyName: example-strategy, state: Run}\n")
			commit(t, repo, "typo: "+c.Name)
			p, err := Compute(ctx, Options{Repo: repo, Base: "main"})
			if err != nil {
				t.Fatal(err)
			}
			if !p.HeadRefused || !p.Failed() {
				t.Errorf("HeadRefused %v, Failed %v; want the merge refused", p.HeadRefused, p.Failed())
			}
			for _, w := range c.Want {
				found := false
				for _, e := range p.ManifestErrors {
					found = found || e.Position() == w.Location() && strings.Contains(e.Message, w.Text)
				}
				if !found {
					t.Errorf("no manifest error %s: %s in %+v", w.Location(), w.Text, p.ManifestErrors)
				}
			}
			for _, s := range p.Snapshots {
				if s.Commit == p.Head {
					t.Errorf("a snapshot of the refused head: %+v", s)
				}
			}
			for _, r := range p.Runs {
				if r.Name == "typo-run" {
					t.Errorf("typo-run planned: %+v", r)
				}
			}
			if len(p.Deletions) > 0 {
				t.Errorf("deletions %+v from a refused merge", p.Deletions)
			}
			var text strings.Builder
			if err := WriteText(&text, p); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text.String(), "gitfleet would refuse this merge whole") {
				t.Errorf("the plan does not say the merge is refused:\n%s", text.String())
			}
			if !strings.Contains(Comment(p), "gitfleet would refuse this merge whole") {
				t.Errorf("the pull request comment does not say the merge is refused:\n%s", Comment(p))
			}
			gittest.Must(t, repo, "checkout", "-q", "-f", "main")
			gittest.Must(t, repo, "clean", "-qfd")
		})
	}
}
