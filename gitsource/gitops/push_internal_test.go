package gitops

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gitfleet/gitfleet/internal/testing/gittest"
	"github.com/gitfleet/gitfleet/status"
)

// A status commit goes to two branches when the status branch is another
// one: approvals/ to the tracked branch, where people merge approvals,
// everything else to the status branch.
func TestSplitSendsApprovalsToTheTrackedBranch(t *testing.T) {
	ch := status.Changeset{
		Writes: map[string][]byte{
			"status/runs/r.yaml":         []byte("r"),
			"approvals/r-canary.yaml":    []byte("a"),
			"approvals/ns/r-canary.yaml": []byte("b"),
		},
		Deletes: []string{"approvals/old.yaml", "status/runs/old.yaml"},
	}
	rest, approvals := split(ch, "approvals/")
	if got := rest.WritePaths(); !slices.Equal(got, []string{"status/runs/r.yaml"}) || !slices.Equal(rest.Deletes, []string{"status/runs/old.yaml"}) {
		t.Errorf("status part writes %v, deletes %v", got, rest.Deletes)
	}
	if got := approvals.WritePaths(); !slices.Equal(got, []string{"approvals/ns/r-canary.yaml", "approvals/r-canary.yaml"}) ||
		!slices.Equal(approvals.Deletes, []string{"approvals/old.yaml"}) {
		t.Errorf("approvals part writes %v, deletes %v", got, approvals.Deletes)
	}
}

// The approval branch of a request file: gitfleet/approve/<name>, with the
// namespace of a namespaced request before a dot; anything else has none.
func TestApprovalBranchNameOfAFile(t *testing.T) {
	for p, want := range map[string]string{
		"approvals/run-canary.yaml":      "run-canary",
		"approvals/team/run-canary.yaml": "team.run-canary",
		"approvals/notes.txt":            "",
		"status/runs/run.yaml":           "",
	} {
		if got := approvalBranchName(p); got != want {
			t.Errorf("approvalBranchName(%q) = %q; want %q", p, got, want)
		}
	}
}

// The command serve prints for approving by merging makes the merge commit
// the person's, the change the first-parent walk (lastChange) finds, so
// gitfleet names them; a fast-forward (the old hint) leaves gitfleet's
// commit as the change.
func TestMergeCommandMakesThePersonTheApprover(t *testing.T) {
	gittest.Require(t, "git")
	const branch = "gitfleet/approve/example-run-after-canary"
	for _, tc := range []struct {
		name, command, want string
	}{
		{"MergeCommand", MergeCommand(branch), "person"},
		{"a fast-forward", "git fetch origin && git merge origin/" + branch + " && git push", "gitfleet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			remote, work, clone := filepath.Join(dir, "fleet.git"), filepath.Join(dir, "work"), filepath.Join(dir, "clone")
			gittest.Must(t, dir, "init", "-q", "--bare", remote)
			gittest.Must(t, dir, "clone", "-q", remote, work)
			write := func(content string) {
				if err := os.MkdirAll(filepath.Join(work, "approvals"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(work, "approvals", "r.yaml"), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
				gittest.Must(t, work, "add", "-A")
			}
			write("requested\n")
			gittest.Must(t, work, "commit", "-q", "-m", "status: approval request r updated")
			gittest.Must(t, work, "push", "-q", "origin", "HEAD:main")
			write("approved\n")
			gittest.Must(t, work, "commit", "-q", "--author", "gitfleet <gitfleet@example.com>", "-m", "approve r")
			gittest.Must(t, work, "push", "-q", "origin", "HEAD:"+branch)
			gittest.Must(t, dir, "clone", "-q", "-b", "main", remote, clone)

			sh := exec.Command("sh", "-c", tc.command)
			sh.Dir = clone
			sh.Env = append(gittest.Env(clone), "GIT_AUTHOR_NAME=person", "GIT_AUTHOR_EMAIL=person@example.com", "GIT_MERGE_AUTOEDIT=no")
			if out, err := sh.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", tc.command, err, out)
			}
			// The newest first-parent commit of main that changed the file.
			if got := gittest.Must(t, remote, "log", "-1", "--first-parent", "-m", "--format=%an", "main", "--", "approvals/r.yaml"); got != tc.want {
				t.Errorf("the change that approved is %q's, want %q's", got, tc.want)
			}
		})
	}
}
