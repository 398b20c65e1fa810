package gitsource

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitfleet/gitfleet/internal/testing/await"
)

// waitSignal fails the test unless w signals before the test's deadline
// (see internal/testing/await).
func waitSignal(t *testing.T, w *Watcher, what string) {
	t.Helper()
	select {
	case <-w.C():
	case <-time.After(time.Until(await.Deadline(t))):
		t.Fatalf("no signal after %s", what)
	}
}

// drain discards a pending signal, waiting a little for late events.
func drain(w *Watcher) {
	for {
		select {
		case <-w.C():
		case <-time.After(100 * time.Millisecond):
			return
		}
	}
}

func TestWatcherTriggerCoalesces(t *testing.T) {
	w := NewWatcher(testLogger(t))
	for range 10 {
		w.Trigger("test")
	}
	<-w.C()
	select {
	case <-w.C():
		t.Fatal("ten triggers left more than one signal")
	default:
	}
}

func TestWatcherPoll(t *testing.T) {
	w := NewWatcher(testLogger(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		w.Poll(ctx, 20*time.Millisecond)
		close(done)
	}()
	start := time.Now()
	for range 3 {
		waitSignal(t, w, "polling")
	}
	if elapsed := time.Since(start); elapsed < 3*20*time.Millisecond {
		t.Fatalf("3 polls in %s: faster than the interval (jitter only lengthens it)", elapsed)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(time.Until(await.Deadline(t))):
		t.Fatal("Poll did not stop with its context")
	}
}

func TestWatchLocalWorkingCopy(t *testing.T) {
	f := newFixture(t)
	w := NewWatcher(testLogger(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := w.WatchLocal(ctx, f.work); err != nil {
		t.Fatal(err)
	}
	drain(w)

	// Staging touches the index, not a ref: no signal.
	if err := os.WriteFile(filepath.Join(f.work, "new.yaml"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runGit(t, f.work, "add", "new.yaml")
	select {
	case <-w.C():
		t.Fatal("git add triggered")
	case <-time.After(200 * time.Millisecond):
	}

	runGit(t, f.work, "commit", "-q", "-m", "local commit")
	waitSignal(t, w, "a local commit")

	// A branch in a new ref namespace directory, then a commit on it.
	drain(w)
	runGit(t, f.work, "checkout", "-q", "-b", "team/feature")
	waitSignal(t, w, "creating team/feature")
	drain(w)
	f.commit(t, "on team branch", map[string]string{"t.yaml": "t\n"})
	waitSignal(t, w, "a commit on team/feature")
}

func TestWatchLocalBareRepository(t *testing.T) {
	f := newFixture(t)
	w := NewWatcher(testLogger(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := w.WatchLocal(ctx, f.bare); err != nil {
		t.Fatal(err)
	}
	drain(w)
	f.push(t, "pushed", map[string]string{"workloads/p.yaml": "p\n"})
	waitSignal(t, w, "a push into the bare repository")

	// Packing refs rewrites packed-refs and deletes loose refs.
	drain(w)
	runGit(t, f.bare, "pack-refs", "--all")
	waitSignal(t, w, "git pack-refs")
}

func TestWatchLocalLinkedWorktree(t *testing.T) {
	f := newFixture(t)
	wt := filepath.Join(f.root, "wt")
	runGit(t, f.work, "worktree", "add", "-q", "-b", "wt-branch", wt)
	w := NewWatcher(testLogger(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := w.WatchLocal(ctx, wt); err != nil {
		t.Fatal(err)
	}
	drain(w)
	if err := os.WriteFile(filepath.Join(wt, "w.yaml"), []byte("w\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runGit(t, wt, "add", "w.yaml")
	runGit(t, wt, "commit", "-q", "-m", "in worktree")
	waitSignal(t, w, "a commit in a linked worktree")
}

func TestWatchLocalNotARepository(t *testing.T) {
	w := NewWatcher(testLogger(t))
	if err := w.WatchLocal(context.Background(), t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a Git repository") {
		t.Fatalf("WatchLocal on an empty dir: %v", err)
	}
}

// Rejected pushes are re-applied after 100ms doubling to 5s, each wait up
// to 10% longer at random.
func TestDefaultPushBackoff(t *testing.T) {
	b := DefaultPushBackoff
	want := []time.Duration{100, 200, 400, 800, 1600, 3200, 5000, 5000}
	for i, w := range want {
		w *= time.Millisecond
		if d := b.Step(); d < w || d > w*11/10 {
			t.Fatalf("delay %d = %s, want %s to 10%% more", i, d, w)
		}
	}
	if DefaultPushBackoff.Duration != 100*time.Millisecond {
		t.Fatalf("stepping a copy changed the default: %+v", DefaultPushBackoff)
	}
}
