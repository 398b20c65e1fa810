package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The reading commands run the git CLI (git, in approve.go) for what
// concerns the person's clone (pulling, the history of a status file): it
// uses their remotes, credentials and configuration as 'git pull' at their
// prompt would.

// pull fast-forwards repo to its upstream branch. A fast-forward only adds
// commits on top of what the person has: git refuses it when they have
// commits of their own or edits the new commits would overwrite, and their
// work stays as it was.
func pull(ctx context.Context, repo string) error {
	if _, err := git(ctx, repo, "pull", "--ff-only", "--quiet"); err != nil {
		return fmt.Errorf("git pull --ff-only in %s failed, your commits and edits are untouched (pull or rebase them yourself, then try again): %w", repo, err)
	}
	return nil
}

// commitInfo is a commit as the reading commands show it.
type commitInfo struct {
	hash    string // abbreviated
	time    metav1.Time
	subject string
}

// statusCommit is the newest commit of repo's checked-out history that
// changed the status tree or an approval request: what get shows is as
// of that commit. ok is false outside a Git repository or before any.
func statusCommit(ctx context.Context, repo string) (commitInfo, bool) {
	cs, err := history(ctx, repo, 1, ":(top)status", ":(top)approvals")
	if err != nil || len(cs) == 0 {
		return commitInfo{}, false
	}
	return cs[0], true
}

// history is the newest n commits of the checked-out branch that changed
// a file any of pathspecs (git's, with their magic) matches, newest first.
func history(ctx context.Context, repo string, n int, pathspecs ...string) ([]commitInfo, error) {
	args := []string{"log", "-n", strconv.Itoa(n), "--format=%h%x00%ct%x00%s", "--"}
	args = append(args, pathspecs...)
	out, err := git(ctx, repo, args...)
	if err != nil {
		return nil, err
	}
	var cs []commitInfo
	for _, line := range strings.Split(out, "\n") {
		parts := strings.SplitN(line, "\x00", 3)
		if len(parts) != 3 {
			continue
		}
		secs, err := strconv.ParseInt(parts[1], 10, 64)
		if err != nil {
			continue
		}
		cs = append(cs, commitInfo{hash: parts[0], time: metav1.NewTime(time.Unix(secs, 0).UTC()), subject: parts[2]})
	}
	return cs, nil
}
