package ingest_test

import (
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitfleet/gitfleet/gitsource/ingest"
)

// A restart (and a simulation from a recorded state) ingests again the
// commits after the newest one a snapshot was recorded from: older
// recorded commits, and commits no longer on the branch, do not move it.
func TestResumePointIsTheNewestRecordedCommitOnTheBranch(t *testing.T) {
	c := func(n byte) plumbing.Hash { return plumbing.Hash{n} }
	history := []plumbing.Hash{c(1), c(2), c(3), c(4)}
	for _, tc := range []struct {
		name     string
		recorded []plumbing.Hash
		want     int
	}{
		{name: "nothing recorded: from the root", want: -1},
		{name: "the tip recorded: nothing again", recorded: []plumbing.Hash{c(4)}, want: 3},
		{name: "the newest recorded wins", recorded: []plumbing.Hash{c(1), c(3)}, want: 2},
		{name: "a commit of a rewritten branch counts for nothing", recorded: []plumbing.Hash{c(9)}, want: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recorded := map[string]bool{}
			for _, h := range tc.recorded {
				recorded[h.String()] = true
			}
			if got := ingest.ResumePoint(history, recorded); got != tc.want {
				t.Errorf("ResumePoint = %d; want %d", got, tc.want)
			}
		})
	}
}
