// Package gittest runs real git for tests: the git CLI as a person would
// use it, and git servers on 127.0.0.1 (git daemon, git http-backend behind
// HTTP basic auth and TLS, and an SSH endpoint running git-upload-pack and
// git-receive-pack), as Flux's gittestserver does. Every server and process
// it starts is stopped when the test ends.
package gittest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Require skips the test when the program is not installed, except under
// CI (CI=true), where a missing tool is a broken CI setup and fails it.
func Require(tb testing.TB, program string) {
	tb.Helper()
	if _, err := exec.LookPath(program); err != nil {
		Missing(tb, fmt.Sprintf("%s is not installed", program))
	}
}

// Missing skips the test for reason, or fails it under CI (CI=true).
func Missing(tb testing.TB, reason string) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatalf("%s; CI must install it (see .ci/run)", reason)
	}
	tb.Skip(reason)
}

// Env is the environment of a git process: isolated from the user's and
// the system's configuration, with a fixed author, and from a repository
// the tests themselves run in (a hook or `git rebase -x` exports GIT_DIR,
// which would aim a test's `git init` at that repository instead).
func Env(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		switch name, _, _ := strings.Cut(kv, "="); name {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY", "GIT_NAMESPACE", "GIT_PREFIX":
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"HOME="+home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=dev", "GIT_AUTHOR_EMAIL=dev@example.com",
		"GIT_COMMITTER_NAME=dev", "GIT_COMMITTER_EMAIL=dev@example.com",
		"GIT_TERMINAL_PROMPT=0",
	)
}

// Run runs git in dir and returns its trimmed standard output; an error
// carries git's standard error.
func Run(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-c", "init.defaultBranch=main", "-c", "protocol.file.allow=always"}, args...)...)
	cmd.Dir = dir
	cmd.Env = Env(dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// Must is Run that fails the test on error.
func Must(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	out, err := Run(dir, args...)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// AwaitGC makes the test's end wait for a `git gc --auto` that git
// detached in one of repos: a push's git-receive-pack or a pull starts one
// once enough objects pile up, and it goes on writing there after the
// command that started it exited, so t.TempDir's removal fails on what it
// writes meanwhile. Call it after the TempDir the repositories live in, so
// that its cleanup runs first.
func AwaitGC(tb testing.TB, repos ...string) {
	tb.Cleanup(func() {
		if err := WaitGC(2*time.Minute, repos...); err != nil {
			tb.Log(err)
		}
	})
}

// WaitGC waits until no git gc runs in repos (bare or not): a gc holds
// gc.pid, naming its process, while it runs. A detached gc lets go of
// the file for a moment while it moves to the background, so the repos
// must be free on three looks 100 ms apart.
func WaitGC(timeout time.Duration, repos ...string) error {
	deadline := time.Now().Add(timeout)
	for free := 0; free < 3; time.Sleep(100 * time.Millisecond) {
		busy := runningGC(repos)
		if busy == "" {
			free++
			continue
		}
		free = 0
		if time.Now().After(deadline) {
			return fmt.Errorf("git gc still running in %s after %s", busy, timeout)
		}
	}
	return nil
}

// runningGC is a repository of repos where a live process holds gc.pid.
func runningGC(repos []string) string {
	for _, r := range repos {
		for _, lock := range []string{filepath.Join(r, "gc.pid"), filepath.Join(r, ".git", "gc.pid")} {
			data, err := os.ReadFile(lock)
			if err != nil {
				continue
			}
			pid, _, _ := strings.Cut(string(data), " ")
			if n, err := strconv.Atoi(pid); err == nil && syscall.Kill(n, 0) == nil {
				return r
			}
		}
	}
	return ""
}
