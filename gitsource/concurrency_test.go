package gitsource

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// TestApplyReappliesOnMovedBranch: gitfleet's cached tip is stale because a
// person pushed after the last fetch; the first push is rejected and the
// change is re-applied on the new tip, keeping the person's commit.
func TestApplyReappliesOnMovedBranch(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	s := f.open(t)
	human := f.push(t, "human change", map[string]string{"workloads/app/cm.yaml": "kind: ConfigMap\nv: 2\n"})

	res, err := s.Apply(ctx, Change{Message: "status", Writes: map[string][]byte{"status/runs/r.yaml": []byte("r\n")}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 2 || !res.Created {
		t.Fatalf("Apply = %+v, want a commit on the second attempt", res)
	}
	if parent := runGit(t, f.bare, "rev-parse", "main^"); parent != human.String() {
		t.Fatalf("status commit's parent %s, want the human commit %s", parent, human)
	}
	if got := f.show(t, "main", "workloads/app/cm.yaml"); got != "kind: ConfigMap\nv: 2" {
		t.Fatalf("human change lost: %q", got)
	}
}

// TestApplyRacesHumans: while gitfleet pushes status, people push 50
// commits to the same branch. Every push of either side lands, no human
// commit is lost, and the branch only ever moves forward (checked by a
// post-receive hook that logs every ref update, and by the server refusing
// non-fast-forward updates).
func TestApplyRacesHumans(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	runGit(t, f.bare, "config", "receive.denyNonFastForwards", "true")
	runGit(t, f.bare, "config", "receive.denyDeletes", "true")
	updates := filepath.Join(f.root, "updates.log")
	hook := fmt.Sprintf("#!/bin/sh\nwhile read old new ref; do echo \"$old $new $ref\" >> %q; done\n", updates)
	if err := os.WriteFile(filepath.Join(f.bare, "hooks", "post-receive"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	start := f.remoteTip(t, "main")

	cfg := f.config(t)
	cfg.PushAttempts = 50
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// One push the cache has not seen: the first Apply is rejected and
	// re-applied whatever the timing, so the race is always exercised.
	early := filepath.Join(f.root, "early")
	runGit(t, f.root, "clone", "-q", f.bare, early)
	if err := humanPush(early, 999); err != nil {
		t.Fatal(err)
	}

	// Two people push 50 commits between them while gitfleet keeps writing
	// status, pass after pass, until they are done (and at least 25 times).
	const humans, people = 50, 2
	clones := []string{f.work}
	for p := 1; p < people; p++ {
		clone := filepath.Join(f.root, fmt.Sprintf("work%d", p))
		runGit(t, f.root, "clone", "-q", f.bare, clone)
		clones = append(clones, clone)
	}
	pushed := make(chan struct{}, humans)
	humanErrs := make(chan error, people)
	for p, clone := range clones {
		go func() {
			for i := p; i < humans; i += people {
				if err := humanPush(clone, i); err != nil {
					humanErrs <- err
					return
				}
				pushed <- struct{}{}
			}
			humanErrs <- nil
		}()
	}

	var results []Result
	running := people
	for i := 0; running > 0 || len(results) < 25; i++ {
		res, err := s.Apply(ctx, Change{
			Message: fmt.Sprintf("status: pass %d", i),
			Writes: map[string][]byte{
				"status/runs/r.yaml":                      []byte(fmt.Sprintf("pass: %d\n", i)),
				fmt.Sprintf("status/passes/%03d.yaml", i): []byte("done\n"),
			},
		})
		if err != nil {
			t.Fatalf("Apply %d: %v", i, err)
		}
		if !res.Created {
			t.Fatalf("Apply %d made no commit", i)
		}
		results = append(results, res)
		// Pace gitfleet by the people: its next pass starts after one of
		// their pushes landed, a random moment into their next cycle.
		// (Unpaced, the faster writer starves them: their pull+push takes
		// longer than gitfleet's push, as in real life.)
		for running > 0 {
			select {
			case <-pushed:
			case err := <-humanErrs:
				if err != nil {
					t.Fatal(err)
				}
				running--
				continue
			}
			break
		}
		time.Sleep(time.Duration(rand.IntN(15)) * time.Millisecond)
	}
	applies := len(results)

	final := f.remoteTip(t, "main")
	retries := 0
	for i, res := range results {
		retries += res.Attempts - 1
		if !isAncestor(t, f.bare, res.Commit, final) {
			t.Errorf("status commit %d (%s) is not in the final history", i, res.Commit)
		}
	}
	t.Logf("%d status commits needed %d re-applies", applies, retries)
	if retries == 0 {
		t.Errorf("no Apply was ever rejected: the test did not exercise the race")
	}

	// Every human commit is there, and every file of both sides.
	log := runGit(t, f.bare, "log", "--format=%s", start.String()+"..main")
	for i := range humans {
		if !strings.Contains(log, fmt.Sprintf("human %d\n", i)) && !strings.HasSuffix(log, fmt.Sprintf("human %d", i)) {
			t.Errorf("human commit %d missing", i)
		}
	}
	files := runGit(t, f.bare, "ls-tree", "-r", "--name-only", "main")
	for i := range humans {
		if !strings.Contains(files, fmt.Sprintf("workloads/human/%02d.yaml", i)) {
			t.Errorf("human file %d missing", i)
		}
	}
	for i := range applies {
		if !strings.Contains(files, fmt.Sprintf("status/passes/%03d.yaml", i)) {
			t.Errorf("status file %d missing", i)
		}
	}
	if got := f.show(t, "main", "status/runs/r.yaml"); got != fmt.Sprintf("pass: %d", applies-1) {
		t.Errorf("final status %q, want the last pass", got)
	}

	// The remote is whole: every object the pushes needed arrived.
	runGit(t, f.bare, "fsck", "--strict", "--no-progress")

	// History only moved forward.
	data, err := os.ReadFile(updates)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 1+humans+applies {
		t.Errorf("%d ref updates, want %d", len(lines), 1+humans+applies)
	}
	for _, line := range lines {
		var old, new, ref string
		fmt.Sscan(line, &old, &new, &ref)
		if ref != "refs/heads/main" || !isAncestorStr(t, f.bare, old, new) {
			t.Errorf("non-fast-forward update: %s", line)
		}
	}
}

// humanPush commits one workload file in a person's clone and pushes it,
// rebasing onto whatever gitfleet pushed meanwhile, as a person would.
func humanPush(work string, i int) error {
	p := filepath.Join(work, "workloads", "human", fmt.Sprintf("%02d.yaml", i))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(p, []byte(fmt.Sprintf("n: %d\n", i)), 0o644); err != nil {
		return err
	}
	if _, err := gitErr(work, "add", "-A"); err != nil {
		return err
	}
	if _, err := gitErr(work, "commit", "-q", "-m", fmt.Sprintf("human %d", i)); err != nil {
		return err
	}
	var err error
	for try := 0; try < 100; try++ {
		if _, err = gitErr(work, "push", "-q", "origin", "HEAD:main"); err == nil {
			return nil
		}
		if _, err := gitErr(work, "pull", "-q", "--rebase", "origin", "main"); err != nil {
			return err
		}
	}
	return fmt.Errorf("human %d could not push: %w", i, err)
}

func isAncestor(t *testing.T, repo string, a, b fmt.Stringer) bool {
	return isAncestorStr(t, repo, a.String(), b.String())
}

func isAncestorStr(t *testing.T, repo, a, b string) bool {
	t.Helper()
	if strings.Trim(a, "0") == "" {
		return true // branch creation
	}
	_, err := gitErr(repo, "merge-base", "--is-ancestor", a, b)
	return err == nil
}

// TestConcurrentUse: every method may be called from many goroutines, and
// the commits and trees handed out stay usable while the cache is being
// written. Run with -race.
func TestConcurrentUse(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	s := f.open(t)
	head, _ := s.Head(ctx)
	tree, err := s.Tree(ctx, head.Commit)
	if err != nil {
		t.Fatal(err)
	}

	errs := make(chan error, 64)
	done := make(chan struct{})
	var workers sync.WaitGroup
	work := func(fn func(i int) error) {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				if err := fn(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	work(func(int) error { _, err := s.Fetch(ctx); return err })
	work(func(int) error {
		file, err := tree.File("workloads/app/cm.yaml")
		if err != nil {
			return err
		}
		_, err = file.Contents()
		return err
	})
	work(func(int) error {
		h, err := s.Head(ctx)
		if err != nil {
			return err
		}
		commits, err := s.FirstParentHistory(ctx, plumbing.ZeroHash, h.Commit)
		if err != nil {
			return err
		}
		_, err = commits[len(commits)-1].Tree()
		return err
	})
	work(func(int) error {
		h, err := s.Head(ctx)
		if err != nil {
			return err
		}
		_, err = s.ReadTree(ctx, h.Commit, "")
		return err
	})

	for i := range 10 {
		if _, err := s.Apply(ctx, Change{Writes: map[string][]byte{"status/n.yaml": fmt.Appendf(nil, "%d\n", i)}}); err != nil {
			t.Fatal(err)
		}
		if err := humanPush(f.work, 1000+i); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	workers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
