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
	"strings"
	"testing"
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
