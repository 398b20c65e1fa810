package gitsource

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitfleet/gitfleet/internal/testing/await"
)

func TestApply(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	s := f.open(t)
	before := f.remoteTip(t, "main")

	res, err := s.Apply(ctx, Change{
		Message: "status: run r1 progressing",
		Writes: map[string][]byte{
			"status/runs/r1.yaml":            []byte("phase: Progressing\n"),
			"status/placements/p.yaml":       []byte("ok: true\n"),
			"approvals/r1-after-canary.yaml": []byte("approved: false\n"),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || res.Attempts != 1 {
		t.Fatalf("Apply = %+v, want a new commit on the first attempt", res)
	}
	if tip := f.remoteTip(t, "main"); tip != res.Commit {
		t.Fatalf("remote tip %s, want the applied commit %s", tip, res.Commit)
	}
	if got := f.show(t, "main", "status/runs/r1.yaml"); got != "phase: Progressing" {
		t.Fatalf("remote status file = %q", got)
	}
	if got := f.show(t, "main", "workloads/app/cm.yaml"); got != "kind: ConfigMap" {
		t.Fatalf("workload lost: %q", got)
	}
	if parent := runGit(t, f.bare, "rev-parse", "main^"); parent != before.String() {
		t.Fatalf("parent %s, want previous tip %s", parent, before)
	}
	if author := runGit(t, f.bare, "log", "-1", "--format=%an <%ae>", "main"); author != "gitfleet <gitfleet@localhost>" {
		t.Fatalf("author %q", author)
	}
	if trailer := runGit(t, f.bare, "log", "-1", "--format=%(trailers:key=Gitfleet-Commit,valueonly)", "main"); trailer != "true" {
		t.Fatalf("git sees trailer %q", trailer)
	}
	// git fsck agrees the objects we wrote are well-formed.
	runGit(t, f.bare, "fsck", "--strict", "--no-progress")

	c, err := s.Commit(ctx, res.Commit)
	if err != nil {
		t.Fatal(err)
	}
	if !IsOwnCommit(c) {
		t.Fatalf("IsOwnCommit false for %q", c.Message)
	}
	human, _ := s.Commit(ctx, before)
	if IsOwnCommit(human) {
		t.Fatal("IsOwnCommit true for a human commit")
	}

	t.Run("no-op makes no commit", func(t *testing.T) {
		again, err := s.Apply(ctx, Change{Writes: map[string][]byte{"status/runs/r1.yaml": []byte("phase: Progressing\n")}})
		if err != nil {
			t.Fatal(err)
		}
		if again.Created || again.Commit != res.Commit || f.remoteTip(t, "main") != res.Commit {
			t.Fatalf("no-op Apply = %+v, remote %s", again, f.remoteTip(t, "main"))
		}
		// Deleting what is not there is a no-op too.
		again, err = s.Apply(ctx, Change{Deletes: []string{"status/runs/ghost.yaml", "status/nothing"}})
		if err != nil || again.Created {
			t.Fatalf("no-op delete = %+v, %v", again, err)
		}
	})

	t.Run("deletes, directory replacement", func(t *testing.T) {
		res, err := s.Apply(ctx, Change{
			Message: "status: replace placements",
			Deletes: []string{"status/placements", "approvals/r1-after-canary.yaml"},
			Writes:  map[string][]byte{"status/placements/q.yaml": []byte("q\n")},
		})
		if err != nil || !res.Created {
			t.Fatalf("Apply = %+v, %v", res, err)
		}
		files := runGit(t, f.bare, "ls-tree", "-r", "--name-only", "main")
		want := "README.md\nfleet/placement.yaml\nstatus/placements/q.yaml\nstatus/runs/r1.yaml\nworkloads/app/cm.yaml"
		if files != want {
			t.Fatalf("tree after delete:\n%s\nwant:\n%s", files, want)
		}
		runGit(t, f.bare, "fsck", "--strict", "--no-progress")
	})
}

func TestApplyRejectsBadChanges(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	cfg := f.config(t)
	cfg.MaxFileSize = 16
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	before := f.remoteTip(t, "main")
	for _, tc := range []struct {
		name string
		ch   Change
		want error
	}{
		{"workload", Change{Writes: map[string][]byte{"workloads/app/cm.yaml": nil}}, ErrPathNotAllowed},
		{"root file", Change{Writes: map[string][]byte{"README.md": nil}}, ErrPathNotAllowed},
		{"prefix lookalike", Change{Writes: map[string][]byte{"statusx/a": nil}}, ErrPathNotAllowed},
		{"prefix itself", Change{Deletes: []string{"status"}}, ErrPathNotAllowed},
		{"one bad among good", Change{Writes: map[string][]byte{"status/ok": nil, "fleet/x.yaml": nil}}, ErrPathNotAllowed},
		{"dotdot", Change{Writes: map[string][]byte{"status/../workloads/x": nil}}, ErrInvalid},
		{"absolute", Change{Writes: map[string][]byte{"/status/x": nil}}, ErrInvalid},
		{"dot git", Change{Writes: map[string][]byte{"status/.git/config": nil}}, ErrInvalid},
		{"double slash", Change{Writes: map[string][]byte{"status//x": nil}}, ErrInvalid},
		{"write and delete", Change{Writes: map[string][]byte{"status/a": nil}, Deletes: []string{"status/a"}}, ErrInvalid},
		{"file and dir", Change{Writes: map[string][]byte{"status/a": nil, "status/a/b": nil}}, ErrInvalid},
		{"empty", Change{}, ErrInvalid},
		{"other branch", Change{Branch: "release", Writes: map[string][]byte{"status/a": nil}}, ErrInvalid},
	} {
		_, err := s.Apply(ctx, tc.ch)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	if tip := f.remoteTip(t, "main"); tip != before {
		t.Fatalf("a rejected change reached the remote: %s", tip)
	}
}

func TestApplyStatusBranch(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	cfg := f.config(t)
	cfg.StatusBranch = "gitfleet-status"
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := s.Head(ctx); !h.Status.IsZero() {
		t.Fatalf("status tip %s before the branch exists", h.Status)
	}
	main := f.remoteTip(t, "main")

	res, err := s.Apply(ctx, Change{Branch: s.StatusBranch(), Message: "status", Writes: map[string][]byte{"status/runs/r.yaml": []byte("a\n")}})
	if err != nil || !res.Created {
		t.Fatalf("Apply = %+v, %v", res, err)
	}
	if f.remoteTip(t, "main") != main {
		t.Fatal("status write moved the tracked branch")
	}
	if files := runGit(t, f.bare, "ls-tree", "-r", "--name-only", "gitfleet-status"); files != "status/runs/r.yaml" {
		t.Fatalf("new status branch holds %q, want only gitfleet's file", files)
	}
	if parents := runGit(t, f.bare, "log", "-1", "--format=%P", "gitfleet-status"); parents != "" {
		t.Fatalf("status branch root has parents %q", parents)
	}

	// A second instance (fresh cache) finds the branch and builds on it.
	s2, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := s2.Head(ctx); h.Status != res.Commit || h.Commit != main {
		t.Fatalf("Head = %+v, want status %s and main %s", h, res.Commit, main)
	}
	res2, err := s2.Apply(ctx, Change{Branch: "gitfleet-status", Writes: map[string][]byte{"status/runs/s.yaml": []byte("b\n")}})
	if err != nil || !res2.Created {
		t.Fatalf("Apply = %+v, %v", res2, err)
	}
	if parent := runGit(t, f.bare, "rev-parse", "gitfleet-status^"); parent != res.Commit.String() {
		t.Fatalf("second status commit's parent %s, want %s", parent, res.Commit)
	}
}

func TestPushBranch(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	s := f.open(t)
	tip := f.remoteTip(t, "main")
	ch := Change{Message: "approve r1-after-canary", Writes: map[string][]byte{"approvals/r1-after-canary.yaml": []byte("approved: true\n")}}

	res, err := s.PushBranch(ctx, "r1-after-canary", ch)
	if err != nil || !res.Created {
		t.Fatalf("PushBranch = %+v, %v", res, err)
	}
	branch := "gitfleet/approve/r1-after-canary"
	if got := f.remoteTip(t, branch); got != res.Commit {
		t.Fatalf("branch tip %s, want %s", got, res.Commit)
	}
	if parent := runGit(t, f.bare, "rev-parse", branch+"^"); parent != tip.String() {
		t.Fatalf("approve commit's parent %s, want tracked tip %s", parent, tip)
	}
	if f.remoteTip(t, "main") != tip {
		t.Fatal("PushBranch moved the tracked branch")
	}

	// Idempotent: the same change again, even from a fresh cache, adds nothing.
	s2 := f.open(t)
	again, err := s2.PushBranch(ctx, "r1-after-canary", ch)
	if err != nil || again.Created || again.Commit != res.Commit {
		t.Fatalf("repeated PushBranch = %+v, %v", again, err)
	}

	// Merging the branch (what a reviewer does) lands the approval.
	runGit(t, f.work, "fetch", "-q", "origin")
	runGit(t, f.work, "merge", "-q", "--no-ff", "-m", "Merge approval", "origin/"+branch)
	runGit(t, f.work, "push", "-q", "origin", "HEAD:main")
	if got := f.show(t, "main", "approvals/r1-after-canary.yaml"); got != "approved: true" {
		t.Fatalf("after merge: %q", got)
	}

	for _, bad := range []string{"", "../x", "a/b", "-x", "a b", strings.Repeat("a", 201)} {
		if _, err := s.PushBranch(ctx, bad, ch); !errors.Is(err, ErrInvalid) {
			t.Errorf("PushBranch(%q): %v, want ErrInvalid", bad, err)
		}
	}
	if _, err := s.PushBranch(ctx, "x", Change{Writes: map[string][]byte{"workloads/x": nil}}); !errors.Is(err, ErrPathNotAllowed) {
		t.Errorf("PushBranch outside the allow-list: %v", err)
	}
}

// A push refused by the server for a reason other than a moved branch is
// reported at once, not retried.
func TestApplyDeclinedByHook(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	s := f.open(t)
	hook := filepath.Join(f.bare, "hooks", "pre-receive")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho 'protected branch' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := s.Apply(ctx, Change{Writes: map[string][]byte{"status/a": []byte("a")}})
	if err == nil {
		t.Fatal("Apply succeeded against a declining hook")
	}
	if errors.Is(err, ErrRejected) || res.Attempts != 1 {
		t.Fatalf("declined push was retried: %+v, %v", res, err)
	}
	if !strings.Contains(err.Error(), "declined") {
		t.Errorf("error does not say why: %v", err)
	}
}

func TestWithTrailer(t *testing.T) {
	for in, want := range map[string]string{
		"":                                    "gitfleet: update\n\nGitfleet-Commit: true\n",
		"status: x\n":                         "status: x\n\nGitfleet-Commit: true\n",
		"status: x\n\nbody text":              "status: x\n\nbody text\n\nGitfleet-Commit: true\n",
		"status: x\n\nSigned-off-by: a <b>\n": "status: x\n\nSigned-off-by: a <b>\nGitfleet-Commit: true\n",
	} {
		if got := withTrailer(in); got != want {
			t.Errorf("withTrailer(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIsOwnCommit(t *testing.T) {
	for msg, want := range map[string]bool{
		withTrailer("status"):                               true,
		"status\n\ngitfleet-commit:  TRUE\n":                true,
		"status\n\nSigned-off-by: a\nGitfleet-Commit: true": true,
		"Gitfleet-Commit: true\n":                           false, // a subject, not a trailer
		"status\n\nGitfleet-Commit: true\n\nmore text\n":    false, // not the last paragraph
		"status\n\nGitfleet-Commit: false\n":                false,
		"fix things\n":                                      false,
	} {
		if got := IsOwnCommit(&object.Commit{Message: msg}); got != want {
			t.Errorf("IsOwnCommit(%q) = %v, want %v", msg, got, want)
		}
	}
	if IsOwnCommit(nil) {
		t.Error("IsOwnCommit(nil)")
	}
}

// A status branch deleted on the remote is forgotten and re-created.
func TestStatusBranchDeletedRemotely(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	cfg := f.config(t)
	cfg.StatusBranch = "status"
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(ctx, Change{Branch: "status", Writes: map[string][]byte{"status/a": []byte("a")}}); err != nil {
		t.Fatal(err)
	}
	runGit(t, f.bare, "branch", "-D", "status")
	h, err := s.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !h.Status.IsZero() {
		t.Fatalf("status tip %s after the branch was deleted", h.Status)
	}
	res, err := s.Apply(ctx, Change{Branch: "status", Writes: map[string][]byte{"status/b": []byte("b")}})
	if err != nil || !res.Created {
		t.Fatalf("Apply = %+v, %v", res, err)
	}
	if files := runGit(t, f.bare, "ls-tree", "-r", "--name-only", "status"); files != "status/b" {
		t.Fatalf("re-created status branch holds %q", files)
	}
}

// An approve branch that was merged and deleted is created afresh from the
// current tracked tip, not from its stale cached tip.
func TestPushBranchAfterMergeAndDelete(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	s := f.open(t)
	ch := func(v string) Change {
		return Change{Writes: map[string][]byte{"approvals/x.yaml": []byte(v)}}
	}
	if _, err := s.PushBranch(ctx, "x", ch("one\n")); err != nil {
		t.Fatal(err)
	}
	runGit(t, f.work, "pull", "-q", "origin", "gitfleet/approve/x")
	runGit(t, f.work, "push", "-q", "origin", "HEAD:main", ":gitfleet/approve/x")
	if _, err := s.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	main := f.remoteTip(t, "main")
	res, err := s.PushBranch(ctx, "x", ch("two\n"))
	if err != nil || !res.Created {
		t.Fatalf("PushBranch = %+v, %v", res, err)
	}
	if parent := runGit(t, f.bare, "rev-parse", "gitfleet/approve/x^"); parent != main.String() {
		t.Fatalf("re-created approve branch starts at %s, want main %s", parent, main)
	}
}

// An approval branch is deleted from the remote once settled; deleting one
// that is gone is no error; only approval branches can be named.
func TestDeleteBranch(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	s := f.open(t)
	if _, err := s.PushBranch(ctx, "a1", Change{Writes: map[string][]byte{"approvals/a1.yaml": []byte("ok\n")}}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteBranch(ctx, "a1"); err != nil {
		t.Fatal(err)
	}
	if _, err := gitErr(f.bare, "rev-parse", "--verify", "refs/heads/gitfleet/approve/a1"); err == nil {
		t.Fatal("the branch is still on the remote")
	}
	if err := s.DeleteBranch(ctx, "a1"); err != nil {
		t.Fatalf("deleting a deleted branch: %v", err)
	}
	if err := s.DeleteBranch(ctx, "../main"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("DeleteBranch(../main) = %v, want ErrInvalid", err)
	}
	if tip := f.remoteTip(t, "main"); tip.IsZero() {
		t.Fatal("main is gone")
	}
}

// A push that finds the ref locked by another writer (a push to another
// branch, git gc packing refs) fails with "failed to update ref" although
// the branch did not move: it is retried, not reported. The hook provokes
// it: on the first push it takes main's lock, on the second it lets go.
func TestApplyRetriesAPushThatLostTheRefLock(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	s := f.open(t)
	hook := filepath.Join(f.bare, "hooks", "pre-receive")
	script := `#!/bin/sh
if [ -e took-the-lock ]; then rm -f refs/heads/main.lock; else touch took-the-lock refs/heads/main.lock; fi
`
	if err := os.WriteFile(hook, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := s.Apply(ctx, Change{Writes: map[string][]byte{"status/a": []byte("a")}})
	if err != nil {
		t.Fatalf("Apply failed on a lock another writer held for a moment: %v", err)
	}
	if res.Attempts != 2 || f.remoteTip(t, "main") != res.Commit {
		t.Errorf("Apply = %+v, remote tip %s; want the commit pushed on the second attempt", res, f.remoteTip(t, "main"))
	}
}

// Stopping gitfleet while a push is updating the remote's ref must not kill
// git-receive-pack halfway: on a local remote that leaves refs/heads/main.lock
// behind, and every later push fails. The hook holds the ref transaction
// open (the ref is locked) until the test has cancelled the push.
func TestACancelledPushLeavesNoLockBehind(t *testing.T) {
	f := newFixture(t)
	s := f.open(t)
	hook := filepath.Join(f.bare, "hooks", "reference-transaction")
	script := `#!/bin/sh
if [ "$1" = prepared ] && [ ! -e released ]; then
  touch holding
  while [ ! -e released ]; do sleep 0.02; done
fi
`
	if err := os.WriteFile(hook, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctxT(t))
	done := make(chan error, 1)
	go func() {
		_, err := s.Apply(ctx, Change{Writes: map[string][]byte{"status/a": []byte("a")}})
		done <- err
	}()
	await.Until(t, "the push to hold main's lock", func() bool {
		_, err := os.Stat(filepath.Join(f.bare, "holding"))
		return err == nil
	})
	cancel()
	// A push that gives up on cancellation returns at once, with the lock
	// still held by the killed receive-pack; one that finishes its update
	// returns only after the hook lets go. Either way the hook is released
	// after a moment: the bound only decides how surely the test catches a
	// killed push, never whether a correct one passes.
	select {
	case err := <-done:
		done <- err
	case <-time.After(2 * time.Second):
	}
	if err := os.WriteFile(filepath.Join(f.bare, "released"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	<-done
	res, err := s.Apply(ctxT(t), Change{Writes: map[string][]byte{"status/b": []byte("b")}})
	if err != nil {
		t.Fatalf("the push after a cancelled one failed: %v", err)
	}
	if tip := f.remoteTip(t, "main"); tip != res.Commit {
		t.Errorf("remote main is %s, want the second push's %s", tip, res.Commit)
	}
}
