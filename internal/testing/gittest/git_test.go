package gittest

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// A `git gc --auto` that git moved to the background is still repacking
// when the command returns; WaitGC returns only once it is done, so the
// repository can be removed.
func TestWaitGCWaitsForADetachedGC(t *testing.T) {
	Require(t, "git")
	dir := t.TempDir()
	Must(t, dir, "init", "-q")
	for i := range 3 {
		if err := os.WriteFile(filepath.Join(dir, "f"), []byte(strconv.Itoa(i)), 0o644); err != nil {
			t.Fatal(err)
		}
		Must(t, dir, "add", "f")
		Must(t, dir, "commit", "-q", "-m", strconv.Itoa(i))
		Must(t, dir, "repack", "-q") // one more pack: gc --auto repacks past gc.autoPackLimit
	}
	Must(t, dir, "-c", "gc.autoPackLimit=2", "-c", "gc.autoDetach=true", "gc", "--auto", "--quiet")

	if err := WaitGC(time.Minute, dir); err != nil {
		t.Fatal(err)
	}
	if runningGC([]string{dir}) != "" {
		t.Fatal("a gc still holds gc.pid after WaitGC")
	}
	packs, err := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.pack"))
	if err != nil {
		t.Fatal(err)
	}
	if len(packs) != 1 {
		t.Fatalf("%d packs after WaitGC, want the detached gc's one: it had not finished", len(packs))
	}
}
