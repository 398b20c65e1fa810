package gitops

import (
	"slices"
	"testing"

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
