package plan

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrConflict is a change that does not merge cleanly into the base.
var ErrConflict = errors.New("merge conflict")

// mergeBranch is the branch of the scratch repository holding the merge.
const mergeBranch = "gitfleet-plan"

// merge is the commit that merging head into base would make, built in a
// scratch repository: the person's repository is not written to.
type merge struct {
	// repo is the scratch repository (a local clone); mergeBranch is its
	// merge commit, whose first parent is base.
	repo            string
	base, head, tip string // full hashes; tip is the merge commit
	headSubject     string
}

// resolve returns the full hash of the commit rev names in repo.
func resolve(ctx context.Context, repo, rev string) (string, error) {
	out, err := git(ctx, repo, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("%q does not name a commit in %s", rev, repo)
	}
	return out, nil
}

// prepareMerge clones repo into dir and commits there what a forge's merge
// of head into base would: the merged tree with parents base and head. A
// merge that conflicts is an error naming the files: the person resolves
// it (rebase) before the plan means anything. The merge commit's dates and
// author are head's, so the same inputs always make the same commit.
func prepareMerge(ctx context.Context, repo, dir, base, head string) (*merge, error) {
	clone := filepath.Join(dir, "plan.git")
	repo, err := filepath.Abs(repo)
	if err != nil {
		return nil, err
	}
	// A local clone hard-links (or copies) the whole object store, so
	// commits no branch names (a detached HEAD, origin/main) are there.
	if _, err := git(ctx, dir, nil, "clone", "--quiet", "--bare", "--local", "--", repo, clone); err != nil {
		return nil, err
	}
	m := &merge{repo: clone, base: base, head: head}
	tree := head + "^{tree}"
	if _, err := git(ctx, clone, nil, "merge-base", "--is-ancestor", base, head); err != nil {
		out, err := git(ctx, clone, nil, "merge-tree", "--write-tree", "--name-only", "--no-messages", base, head)
		if err != nil {
			var conflict *exec.ExitError
			if errors.As(err, &conflict) && conflict.ExitCode() == 1 {
				lines := strings.Split(out, "\n")
				return nil, fmt.Errorf("%w: merging %s into %s conflicts in %s: rebase the change on the base first", ErrConflict, short(head), short(base), strings.Join(lines[1:], ", "))
			}
			return nil, err
		}
		tree, _, _ = strings.Cut(out, "\n")
	}
	info, err := git(ctx, clone, nil, "show", "--no-patch", "--format=%an%n%ae%n%aI%n%cI%n%s", head)
	if err != nil {
		return nil, err
	}
	f := strings.SplitN(info, "\n", 5)
	if len(f) < 5 {
		return nil, fmt.Errorf("reading commit %s: unexpected %q", head, info)
	}
	m.headSubject = f[4]
	env := []string{
		"GIT_AUTHOR_NAME=" + f[0], "GIT_AUTHOR_EMAIL=" + f[1], "GIT_AUTHOR_DATE=" + f[2],
		"GIT_COMMITTER_NAME=" + f[0], "GIT_COMMITTER_EMAIL=" + f[1], "GIT_COMMITTER_DATE=" + f[3],
	}
	msg := fmt.Sprintf("Merge %s into %s (gitfleet plan)", short(head), short(base))
	if m.tip, err = git(ctx, clone, env, "commit-tree", "-p", base, "-p", head, "-m", msg, tree); err != nil {
		return nil, err
	}
	if _, err := git(ctx, clone, nil, "update-ref", "refs/heads/"+mergeBranch, m.tip); err != nil {
		return nil, err
	}
	return m, nil
}

// git runs the git CLI in dir with the person's configuration (and extra
// environment), returning its trimmed standard output. Output is returned
// with the error too: merge-tree reports conflicts on standard output.
func git(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := strings.TrimSpace(stdout.String())
	if err != nil {
		return out, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}
