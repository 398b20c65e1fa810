package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A stage or member naming a RolloutWindow the tree does not have is a
// warning (its clusters would wait for good), and a RolloutWindow that does
// not validate is an error naming its file, line and field.
func TestValidateChecksRolloutWindowsAndWarnsAboutMissingOnes(t *testing.T) {
	repo := t.TempDir()
	copyTree(t, "../../examples/quickstart", repo)
	strategy, err := os.ReadFile(filepath.Join(repo, "strategy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	withWindow := strings.Replace(string(strategy), "      sortingLabelKey: order\n", "      sortingLabelKey: order\n      windows: [ofice]\n", 1)
	if withWindow == string(strategy) {
		t.Fatal("the quickstart's strategy changed; the test no longer adds the window")
	}
	if err := os.WriteFile(filepath.Join(repo, "strategy.yaml"), []byte(withWindow), 0o644); err != nil {
		t.Fatal(err)
	}
	window := "apiVersion: gitfleet.io/v1alpha1\nkind: RolloutWindow\nmetadata:\n  name: office\nspec:\n  timeZone: Europe/Berlin\n" +
		"  windows:\n  - {days: [Mon], start: \"09:00\", end: \"17:00\"}\n"
	if err := os.WriteFile(filepath.Join(repo, "window.yaml"), []byte(window), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := gitfleet(t, "validate", "--repo", repo)
	if code != 0 || !strings.Contains(out, `: ClusterStagedUpdateStrategy example-strategy: spec.stages[1].windows[0]: warning: no RolloutWindow "ofice" in the repository; the stage's clusters would wait for it for good`) {
		t.Errorf("exit %d, stderr %q, output:\n%s", code, errOut, out)
	}

	broken := strings.Replace(window, "Europe/Berlin", "Europe/Atlantis", 1)
	if err := os.WriteFile(filepath.Join(repo, "window.yaml"), []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = gitfleet(t, "validate", "--repo", repo)
	if code == 0 || !strings.Contains(out+errOut, `window.yaml:6: RolloutWindow office: spec.timeZone: Invalid value: "Europe/Atlantis": not an IANA time zone`) {
		t.Errorf("exit %d, stderr %q, output:\n%s", code, errOut, out)
	}
}
