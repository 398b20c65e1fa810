package web

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/gitfleet/gitfleet/status"
)

// Source is where the pages read the fleet from.
type Source interface {
	// Tree is the status tree and the approval requests as of now, and
	// the revision they are of ("" when not known).
	Tree(ctx context.Context) (status.Files, string, error)
	// History is the newest n commits up to rev that changed a file any
	// of pathspecs (git's) matches, newest first; none when the source
	// keeps no history.
	History(ctx context.Context, rev string, n int, pathspecs ...string) ([]Commit, error)
}

// Commit is a commit of the fleet repository as the timeline shows it.
type Commit struct {
	Hash, Subject, Author string
	Time                  time.Time
}

// Short is the commit's abbreviated hash.
func (c Commit) Short() string {
	if len(c.Hash) > 7 {
		return c.Hash[:7]
	}
	return c.Hash
}

// Checkout is a local clone of the fleet repository (`gitfleet ui`): the
// files of its working tree, the history of its checked-out branch.
type Checkout struct{ Dir string }

// Tree implements Source.
func (c Checkout) Tree(ctx context.Context) (status.Files, string, error) {
	rev, err := Git(ctx, []string{"-C", c.Dir}, "rev-parse", "--verify", "-q", "HEAD")
	if err != nil {
		rev = ""
	}
	return status.Dir(c.Dir), strings.TrimSpace(rev), nil
}

// History implements Source.
func (c Checkout) History(ctx context.Context, rev string, n int, pathspecs ...string) ([]Commit, error) {
	return GitLog(ctx, []string{"-C", c.Dir}, rev, n, pathspecs...)
}

// GitLog runs git log with the leading arguments where (-C dir, or
// --git-dir d) on rev (HEAD when empty).
func GitLog(ctx context.Context, where []string, rev string, n int, pathspecs ...string) ([]Commit, error) {
	if rev == "" {
		rev = "HEAD"
	}
	args := []string{"log", "-n", strconv.Itoa(n), "--format=%H%x00%ct%x00%an%x00%s", rev, "--"}
	out, err := Git(ctx, where, append(args, pathspecs...)...)
	if err != nil {
		return nil, err
	}
	var cs []Commit
	for _, line := range strings.Split(out, "\n") {
		f := strings.SplitN(line, "\x00", 4)
		if len(f) != 4 {
			continue
		}
		secs, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		cs = append(cs, Commit{Hash: f[0], Time: time.Unix(secs, 0).UTC(), Author: f[2], Subject: f[3]})
	}
	return cs, nil
}

// Git runs the git CLI with where, then args, and returns its output.
func Git(ctx context.Context, where []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append(where, args...)...)
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = strings.TrimSpace(string(ee.Stderr))
		}
		return "", fmt.Errorf("git %s: %w %s", strings.Join(args[:1], " "), err, msg)
	}
	return string(out), nil
}
