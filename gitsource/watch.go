package gitsource

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Watcher merges every way of learning that the repository may have changed
// into one "check now" signal. Signals coalesce: however many arrive while
// the consumer is busy, it sees one, which is all a fetch needs.
type Watcher struct {
	c   chan struct{}
	log *slog.Logger
}

// NewWatcher returns a Watcher logging to logger (slog.Default() if nil).
func NewWatcher(logger *slog.Logger) *Watcher {
	if logger == nil {
		logger = slog.Default()
	}
	return &Watcher{c: make(chan struct{}, 1), log: logger}
}

// C returns the signal channel.
func (w *Watcher) C() <-chan struct{} { return w.c }

// Trigger signals the consumer without ever blocking; reason is logged.
func (w *Watcher) Trigger(reason string) {
	select {
	case w.c <- struct{}{}:
		w.log.Debug("check triggered", "reason", reason)
	default: // a signal is already pending
	}
}

// Poll triggers every interval, made up to 10% longer at random
// (wait.Jitter) so a fleet of daemons does not poll a forge in lockstep,
// until ctx is done. Run it in a goroutine.
func (w *Watcher) Poll(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		return
	}
	for {
		if sleep(ctx, wait.Jitter(interval, 0.1)) != nil {
			return
		}
		w.Trigger("poll")
	}
}

// WatchLocal triggers when the refs of the local repository at path change
// (a commit in a working copy, or a push into a bare repository), using
// filesystem notifications. path may be a working copy, a linked worktree
// or a bare repository. It returns once watching has started; watching
// stops when ctx is done.
func (w *Watcher) WatchLocal(ctx context.Context, path string) error {
	gitDir, commonDir, err := findGitDir(path)
	if err != nil {
		return err
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("gitsource: watch %s: %w", path, err)
	}
	// HEAD lives in gitDir; packed-refs and refs/ in commonDir.
	dirs := []string{gitDir}
	if commonDir != gitDir {
		dirs = append(dirs, commonDir)
	}
	for _, d := range dirs {
		if err := fw.Add(d); err != nil {
			fw.Close()
			return fmt.Errorf("gitsource: watch %s: %w", d, err)
		}
	}
	if err := addTree(fw, filepath.Join(commonDir, "refs", "heads")); err != nil {
		fw.Close()
		return fmt.Errorf("gitsource: watch %s: %w", path, err)
	}
	refsDir := filepath.Join(commonDir, "refs") + string(filepath.Separator)
	go func() {
		defer fw.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case err, ok := <-fw.Errors:
				if !ok {
					return
				}
				w.log.Warn("filesystem watch error", "path", path, "err", err)
			case ev, ok := <-fw.Events:
				if !ok {
					return
				}
				name := filepath.Base(ev.Name)
				if strings.HasSuffix(name, ".lock") {
					continue // Git's write-then-rename; the rename follows
				}
				if ev.Has(fsnotify.Create) {
					if fi, err := os.Stat(ev.Name); err == nil && fi.IsDir() && strings.HasPrefix(ev.Name, refsDir) {
						_ = addTree(fw, ev.Name) // a new branch namespace, e.g. refs/heads/team/
					}
				}
				if name == "HEAD" || name == "packed-refs" || strings.HasPrefix(ev.Name, refsDir) {
					w.Trigger("fsnotify " + ev.Name)
				}
			}
		}
	}()
	return nil
}

// addTree watches dir and every directory below it.
func addTree(fw *fsnotify.Watcher, dir string) error {
	return filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return fw.Add(p)
		}
		return nil
	})
}

// findGitDir locates the Git directory of a working copy, linked worktree
// or bare repository, and the common directory holding its refs.
func findGitDir(path string) (gitDir, commonDir string, err error) {
	dotGit := filepath.Join(path, ".git")
	fi, err := os.Stat(dotGit)
	switch {
	case err == nil && fi.IsDir():
		gitDir = dotGit
	case err == nil:
		// A linked worktree or submodule: ".git" is "gitdir: <path>".
		b, err := os.ReadFile(dotGit)
		if err != nil {
			return "", "", fmt.Errorf("gitsource: %w", err)
		}
		target, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
		if !ok {
			return "", "", fmt.Errorf("gitsource: %s: not a gitdir file", dotGit)
		}
		gitDir = strings.TrimSpace(target)
		if !filepath.IsAbs(gitDir) {
			gitDir = filepath.Join(path, gitDir)
		}
	default:
		if _, err := os.Stat(filepath.Join(path, "HEAD")); err != nil {
			return "", "", fmt.Errorf("gitsource: %s is not a Git repository", path)
		}
		gitDir = path // bare
	}
	commonDir = gitDir
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		commonDir = strings.TrimSpace(string(b))
		if !filepath.IsAbs(commonDir) {
			commonDir = filepath.Join(gitDir, commonDir)
		}
	}
	if _, err := os.Stat(filepath.Join(commonDir, "refs", "heads")); err != nil {
		return "", "", fmt.Errorf("gitsource: %s is not a Git repository (no refs/heads)", path)
	}
	return filepath.Clean(gitDir), filepath.Clean(commonDir), nil
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
