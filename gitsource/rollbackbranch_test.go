package gitsource

import (
	"errors"
	"testing"
)

// PushRollbackBranch pushes gitfleet/rollback/<name> from the tracked tip,
// idempotently, writing only below the folder it is given (a rollback run
// is hub content, which Apply and PushBranch may never write).
func TestPushRollbackBranch(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	s := f.open(t)
	tip := f.remoteTip(t, "main")
	ch := Change{Message: "roll back r2", Writes: map[string][]byte{"fleet/rollbacks/r2.yaml": []byte("kind: ClusterStagedUpdateRun\n")}}

	res, err := s.PushRollbackBranch(ctx, "r2", "fleet/rollbacks", ch)
	if err != nil || !res.Created {
		t.Fatalf("PushRollbackBranch = %+v, %v", res, err)
	}
	branch := "gitfleet/rollback/r2"
	if got := f.remoteTip(t, branch); got != res.Commit {
		t.Fatalf("branch tip %s, want %s", got, res.Commit)
	}
	if parent := runGit(t, f.bare, "rev-parse", branch+"^"); parent != tip.String() {
		t.Fatalf("rollback commit's parent %s, want tracked tip %s", parent, tip)
	}
	again, err := f.open(t).PushRollbackBranch(ctx, "r2", "fleet/rollbacks", ch)
	if err != nil || again.Created || again.Commit != res.Commit {
		t.Fatalf("repeated from a fresh cache = %+v, %v; want nothing new", again, err)
	}
	if _, err := s.PushRollbackBranch(ctx, "r2", "fleet/rollbacks", Change{Writes: map[string][]byte{"fleet/run.yaml": nil}}); !errors.Is(err, ErrPathNotAllowed) {
		t.Errorf("outside its folder: %v, want ErrPathNotAllowed", err)
	}
	if _, err := s.PushBranch(ctx, "x", Change{Writes: map[string][]byte{"fleet/rollbacks/r2.yaml": nil}}); !errors.Is(err, ErrPathNotAllowed) {
		t.Errorf("an approval branch writing a rollback: %v, want ErrPathNotAllowed", err)
	}
}
