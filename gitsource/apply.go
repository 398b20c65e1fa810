package gitsource

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// OwnCommitTrailer marks commits made by gitfleet (see IsOwnCommit).
const OwnCommitTrailer = "Gitfleet-Commit: true"

// ApproveBranchPrefix prefixes the branches PushBranch creates.
const ApproveBranchPrefix = "gitfleet/approve/"

// RollbackBranchPrefix prefixes the branches PushRollbackBranch creates.
const RollbackBranchPrefix = "gitfleet/rollback/"

// Change is a set of file writes and deletions to commit as one commit.
// Every path must lie under one of Config.AllowedPrefixes.
type Change struct {
	// Branch to commit to: empty for the tracked branch, or the status
	// branch. PushBranch ignores it.
	Branch string
	// Message is the commit message; OwnCommitTrailer is appended.
	Message string
	// Writes maps slash-separated repository paths to file content.
	Writes map[string][]byte
	// Deletes lists files or whole directories to remove; removing what is
	// not there is not an error. Deletes apply before Writes.
	Deletes []string
}

// Result describes what Apply or PushBranch did.
type Result struct {
	// Commit is the new commit, or the unchanged branch tip if the change
	// was already in place.
	Commit plumbing.Hash
	// Created is false when nothing had to be committed.
	Created bool
	// Attempts counts tries: each builds the commit on the branch tip
	// and, unless there is nothing to commit, pushes it.
	Attempts int
}

// Apply commits ch on top of the branch tip and pushes it. If the push is
// rejected because the branch moved (a person pushed meanwhile), Apply
// fetches and re-applies only ch on the new tip — recomputing the tree from
// the new tip, so concurrent human commits are kept — and tries again with
// backoff, up to Config.PushAttempts times. It never force-pushes, so
// history is never rewritten. A change that leaves the tree as it is makes
// no commit. A missing separate status branch is created as an orphan branch
// holding only gitfleet's files.
func (s *Source) Apply(ctx context.Context, ch Change) (Result, error) {
	branch := ch.Branch
	if branch == "" {
		branch = s.cfg.Branch
	}
	if branch != s.cfg.Branch && branch != s.cfg.StatusBranch {
		return Result{}, errorf("apply", ErrInvalid, fmt.Sprintf("branch %q is neither the tracked nor the status branch", branch))
	}
	ops, err := s.validate(ch, s.cfg.AllowedPrefixes)
	if err != nil {
		return Result{}, err
	}
	orphan := func() (plumbing.Hash, error) {
		if branch == s.cfg.Branch {
			return plumbing.ZeroHash, errorf("apply", ErrNotFound, fmt.Sprintf("branch %q not found", branch))
		}
		return plumbing.ZeroHash, nil
	}
	return s.commitAndPush(ctx, "apply", branch, ops, ch.Message, orphan, false)
}

// PushBranch pushes ch as one commit on a branch named
// ApproveBranchPrefix+name, created from the tracked tip; merging that
// branch is how a person approves. If the branch exists it gains a commit
// (or none, if it already holds the change); it is never rewritten. If the
// tracked tip already holds the change no branch is created.
func (s *Source) PushBranch(ctx context.Context, name string, ch Change) (Result, error) {
	return s.pushBranch(ctx, ApproveBranchPrefix, name, ch, s.cfg.AllowedPrefixes)
}

// PushRollbackBranch pushes ch as one commit on RollbackBranchPrefix+name,
// created from the tracked tip, as PushBranch does; its files must lie
// below dir (the hub content's rollbacks/ folder), where gitfleet writes
// nothing else: merging the branch adds a rollback run.
func (s *Source) PushRollbackBranch(ctx context.Context, name, dir string, ch Change) (Result, error) {
	return s.pushBranch(ctx, RollbackBranchPrefix, name, ch, []string{dir})
}

func (s *Source) pushBranch(ctx context.Context, prefix, name string, ch Change, allowed []string) (Result, error) {
	if !branchName.MatchString(name) {
		return Result{}, errorf("push-branch", ErrInvalid, fmt.Sprintf("branch name %q: want letters, digits, '.', '_' or '-'", name))
	}
	ops, err := s.validate(ch, allowed)
	if err != nil {
		return Result{}, err
	}
	fromTracked := func() (plumbing.Hash, error) {
		h, ok := s.tip(s.cfg.Branch)
		if !ok {
			return plumbing.ZeroHash, errorf("push-branch", ErrNotFound, fmt.Sprintf("branch %q not found", s.cfg.Branch))
		}
		return h, nil
	}
	return s.commitAndPush(ctx, "push-branch", prefix+name, ops, ch.Message, fromTracked, true)
}

// emptyTree is the hash of the tree with no entries.
var emptyTree = plumbing.NewHash("4b825dc642cb6eb9a060e54bf8d69288fbee4904")

var branchName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$`)

// validate checks ch against the allow-list of prefixes. No size limit applies: what
// gitfleet writes follows the fleet (a placement of 10,000 clusters is
// several MiB), and a limit here would stop every status push for good.
func (s *Source) validate(ch Change, allowed []string) (map[string]fileOp, error) {
	ops := make(map[string]fileOp, len(ch.Writes)+len(ch.Deletes))
	check := func(p string) error {
		if _, err := cleanPath(p); err != nil {
			return errorf("apply", ErrInvalid, fmt.Sprintf("path %q: %v", p, err))
		}
		if !underAny(p, allowed) {
			return errorf("apply", ErrPathNotAllowed, fmt.Sprintf("path %q is outside the allowed prefixes %v", p, allowed))
		}
		return nil
	}
	for _, p := range ch.Deletes {
		if err := check(p); err != nil {
			return nil, err
		}
		ops[p] = fileOp{del: true}
	}
	for p, data := range ch.Writes {
		if err := check(p); err != nil {
			return nil, err
		}
		if _, ok := ops[p]; ok {
			return nil, errorf("apply", ErrInvalid, fmt.Sprintf("path %q is both written and deleted", p))
		}
		ops[p] = fileOp{data: data}
	}
	if len(ops) == 0 {
		return nil, errorf("apply", ErrInvalid, "empty change")
	}
	return ops, nil
}

// commitAndPush runs the commit/push/re-apply loop. base says where a
// branch that does not exist yet starts. The first attempt builds on the
// cached tip (optimistically: a stale tip costs one rejected push) unless
// refresh asks to fetch the branch first.
func (s *Source) commitAndPush(ctx context.Context, op, branch string, ops map[string]fileOp, msg string, base func() (plumbing.Hash, error), refresh bool) (Result, error) {
	bo := s.cfg.PushBackoff // a copy: Step advances it
	msg = withTrailer(msg)
	for attempt := 1; ; attempt++ {
		if err := s.lock(ctx); err != nil {
			return Result{Attempts: attempt - 1}, s.wrap(op, err)
		}
		res, retry, err := s.attempt(ctx, op, branch, ops, msg, base, attempt == 1 && refresh)
		s.unlock()
		res.Attempts = attempt
		if !retry {
			return res, err
		}
		if attempt >= s.cfg.PushAttempts {
			return res, errorf(op, ErrRejected, fmt.Sprintf("%s: push to %q still rejected after %d attempts", s.safeURL, branch, attempt))
		}
		if attempt == 1 {
			// Most often the cached tip was just stale; the new tip is
			// fetched already, so re-apply at once.
			s.log.Debug("push rejected, branch moved; re-applying on the new tip", "branch", branch)
			continue
		}
		d := bo.Step()
		s.log.Info("push rejected again, branch moved; re-applying on the new tip", "branch", branch, "attempt", attempt, "retry_in", d)
		if err := sleep(ctx, d); err != nil {
			return res, s.wrap(op, err)
		}
	}
}

// attempt builds the commit on the branch tip as cached and pushes it. It
// reports retry when the push failed because the branch moved; the cache
// then already holds the new tip. The caller holds the lock.
func (s *Source) attempt(ctx context.Context, op, branch string, ops map[string]fileOp, msg string, base func() (plumbing.Hash, error), refresh bool) (res Result, retry bool, err error) {
	parent, exists := s.tip(branch)
	if !exists || refresh {
		// Never fetched (a new status branch), or asked to look.
		if err := s.fetchBranch(ctx, branch); err != nil {
			return res, false, err
		}
		parent, exists = s.tip(branch)
	}
	if !exists {
		if parent, err = base(); err != nil {
			return res, false, err
		}
	}

	defer s.built.discard() // a commit not pushed leaves nothing behind

	// Start the push session now; the commit is built meanwhile. Unused
	// (nothing to commit, an error), it is closed without waiting for it.
	opened := make(chan *pushSession, 1)
	go func() { opened <- s.openPush(ctx) }()
	pushing := false
	defer func() {
		if !pushing {
			go func() { _ = (<-opened).close() }()
		}
	}()

	var baseTree plumbing.Hash
	if !parent.IsZero() {
		if baseTree, err = s.treeOf(parent); err != nil {
			return res, false, s.wrap(op, err)
		}
	}
	tree, err := s.buildTree(baseTree, ops)
	if err != nil {
		return res, false, s.wrap(op, err)
	}
	if tree == baseTree && !parent.IsZero() || parent.IsZero() && tree == emptyTree {
		s.log.Debug("change already in place, nothing to commit", "branch", branch)
		return Result{Commit: parent}, false, nil
	}
	commit, err := s.writeCommit(tree, parent, msg)
	if err != nil {
		return res, false, s.wrap(op, err)
	}

	pushing = true
	sent, pushErr := s.push(ctx, <-opened, branch, commit, parent)
	if pushErr == nil {
		s.pushed(op, branch, commit, parent, sent)
		s.log.Info("pushed", "branch", branch, "commit", commit.String())
		return Result{Commit: commit, Created: true}, false, nil
	}
	if ctx.Err() != nil {
		return res, false, s.wrap(op, pushErr)
	}
	// Rather than parse the many spellings of "rejected" (client-side
	// fast-forward check, "fetch first", a lost ref-lock race on the
	// server), look at the branch: if it moved, it was a conflict.
	if err := s.fetchBranch(ctx, branch); err != nil {
		return res, false, s.wrap(op, pushErr)
	}
	now, _ := s.tip(branch)
	switch {
	case now == commit:
		// The push landed but its report was lost.
		s.pushed(op, branch, commit, parent, sentPack{})
		return Result{Commit: commit, Created: true}, false, nil
	case now != parent, lostRefLock(pushErr):
		// Moved: a conflict. Not moved but the server could not take the
		// ref's lock: another writer (a push to another branch, git gc
		// packing refs) held it for a moment; the same push will go in.
		return res, true, nil
	}
	return res, false, s.wrap("push", pushErr)
}

// lostRefLock reports whether a push failed because the server could not
// lock the ref, in git's spellings of it.
func lostRefLock(err error) bool {
	msg := err.Error()
	for _, s := range []string{"failed to update ref", "cannot lock ref", "Unable to create", ".lock': File exists"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

func (s *Source) writeCommit(tree, parent plumbing.Hash, msg string) (plumbing.Hash, error) {
	sig := object.Signature{Name: s.cfg.AuthorName, Email: s.cfg.AuthorEmail, When: time.Now()}
	c := &object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: tree}
	if !parent.IsZero() {
		c.ParentHashes = []plumbing.Hash{parent}
	}
	obj := s.built.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.built.SetEncodedObject(obj)
}

// pushed records that commit, built on parent, is now the remote's branch:
// its objects go into the cache, the cached tip moves there, and an Apply
// to the tracked branch is remembered for PushedItself. If the cache
// cannot take the objects, the tip stays behind and the next fetch brings
// the commit from the remote.
func (s *Source) pushed(op, branch string, commit, parent plumbing.Hash, sent sentPack) {
	if err := s.built.keep(commit, sent); err != nil {
		s.log.Warn("cannot write a pushed commit to the cache; the next fetch will bring it", "branch", branch, "commit", commit.String(), "err", s.red.scrub(err.Error()))
	} else {
		s.setTip(branch, commit)
		if branch == s.cfg.Branch {
			s.ownTip.set(commit)
		}
	}
	if op == "apply" && branch == s.cfg.Branch && !parent.IsZero() {
		s.own.add(commit, parent)
	}
}

func (s *Source) setTip(branch string, h plumbing.Hash) {
	if err := s.store.SetReference(plumbing.NewHashReference(trackingRef(branch), h)); err != nil {
		s.log.Warn("cannot record pushed tip; the next fetch will", "branch", branch, "err", s.red.scrub(err.Error()))
	}
}

// withTrailer appends OwnCommitTrailer to msg, joining an existing trailer
// block if the message ends with one.
func withTrailer(msg string) string {
	msg = strings.TrimRight(msg, " \t\r\n")
	if msg == "" {
		msg = "gitfleet: update"
	}
	sep := "\n\n"
	if paras := strings.Split(msg, "\n\n"); len(paras) > 1 && isTrailerBlock(paras[len(paras)-1]) {
		sep = "\n"
	}
	return msg + sep + OwnCommitTrailer + "\n"
}

var trailerLine = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]*: `)

func isTrailerBlock(p string) bool {
	for _, line := range strings.Split(strings.TrimSpace(p), "\n") {
		if !trailerLine.MatchString(line) {
			return false
		}
	}
	return true
}

// IsOwnCommit reports whether c carries OwnCommitTrailer in its trailer
// block, i.e. was made by gitfleet (Apply or PushBranch). The trailer is a
// convention, not a proof: anyone who can push can write it.
func IsOwnCommit(c *object.Commit) bool {
	if c == nil {
		return false
	}
	msg := strings.TrimRight(c.Message, " \t\r\n")
	paras := strings.Split(msg, "\n\n")
	last := paras[len(paras)-1]
	if len(paras) < 2 || !isTrailerBlock(last) {
		return false
	}
	for _, line := range strings.Split(last, "\n") {
		k, v, _ := strings.Cut(line, ":")
		if strings.EqualFold(strings.TrimSpace(k), "Gitfleet-Commit") && strings.EqualFold(strings.TrimSpace(v), "true") {
			return true
		}
	}
	return false
}
