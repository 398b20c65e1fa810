package main

import (
	"strings"
	"testing"

	"github.com/gitfleet/gitfleet/internal/testing/manifestcorpus"
)

// Every refused commit of render's corpus through validate: it exits 1 and
// prints every problem the case expects, at its file and line, first on
// its line as editors read it.
func TestValidateNamesEveryProblemOfTheCorpus(t *testing.T) {
	cases, err := manifestcorpus.Load("../../render/testdata/corpus/refused")
	if err != nil || len(cases) == 0 {
		t.Fatalf("the corpus: %v (%d cases)", err, len(cases))
	}
	for _, c := range cases {
		if c.MaxFileSize != 0 {
			continue // validate reads with serve's default limits
		}
		t.Run(c.Name, func(t *testing.T) {
			repo := t.TempDir()
			if err := c.WriteTree(repo); err != nil {
				t.Fatal(err)
			}
			out, errOut, code := gitfleet(t, "validate", "--repo", repo)
			if code != 1 {
				t.Errorf("exit %d, want 1; output:\n%s%s", code, out, errOut)
			}
			for _, w := range c.Want {
				found := false
				for _, line := range strings.Split(out, "\n") {
					found = found || strings.HasPrefix(line, w.Location()+": ") && strings.Contains(line, w.Text)
				}
				if !found {
					t.Errorf("no line %s: …%s… in:\n%s", w.Location(), w.Text, out)
				}
			}
		})
	}
}
