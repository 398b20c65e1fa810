package deploy

import (
	"os"
	"strings"
	"testing"
)

// Whoever sets up branch protection reads where gitfleet pushes: status/
// and approvals/ on the tracked branch, and rollbacks/ on its rollback
// branches (reconciler/rollback, gitsource/gitops's forge_rollback.go).
// Both READMEs must say so.
func TestTheREADMEsNameEveryFolderGitfleetWrites(t *testing.T) {
	for _, tc := range []struct{ file, from string }{
		{"README.md", "gitfleet writes only under"},
		{"../README.md", "| path | who writes it | what it is |"},
	} {
		data, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		i := strings.Index(string(data), tc.from)
		if i < 0 {
			t.Fatalf("%s no longer says %q", tc.file, tc.from)
		}
		part := string(data[i:min(len(data), i+6000)])
		if tc.file == "README.md" {
			part = part[:strings.Index(part, "\n\n")]
		}
		for _, want := range []string{"`status/", "`approvals/", "`rollbacks/", "`gitfleet/rollback/"} {
			if !strings.Contains(part, want) {
				t.Errorf("%s, from %q, does not name %s…", tc.file, tc.from, want)
			}
		}
	}
}
