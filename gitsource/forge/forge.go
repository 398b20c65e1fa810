// Package forge talks to the Git forge hosting gitfleet's repository
// (GitHub, GitLab or Gitea): approval pull requests, the rollout preview
// comment and commit statuses.
//
// Forge is the few primitives every forge has; the behaviour gitfleet
// relies on (find-or-open a pull request, upsert a marked comment, withdraw
// a request) is written once, on top of them, in this file.
package forge

import (
	"context"
	"fmt"
	"strings"
)

// Forge is one repository on one forge. Pull requests are numbered as the
// forge shows them to people (a GitLab merge request's IID).
type Forge interface {
	// OpenPRs lists the open pull requests of the repository.
	OpenPRs(ctx context.Context) ([]PR, error)
	// CreatePR opens a pull request from the branch head into base.
	CreatePR(ctx context.Context, head, base, title, body string) (PR, error)
	// EditPR replaces the title and body of pull request n.
	EditPR(ctx context.Context, n int, title, body string) error
	// ClosePR closes pull request n without merging it.
	ClosePR(ctx context.Context, n int) error
	// Merged says whether pull request n was merged.
	Merged(ctx context.Context, n int) (bool, error)
	// Comments lists the comments on pull request n, oldest first.
	Comments(ctx context.Context, n int) ([]Comment, error)
	// CreateComment adds a comment to pull request n.
	CreateComment(ctx context.Context, n int, body string) error
	// EditComment replaces the text of comment id on pull request n.
	EditComment(ctx context.Context, n int, id int64, body string) error
	// DeleteBranch deletes a branch of the repository.
	DeleteBranch(ctx context.Context, branch string) error
	// Login is the account name of the token's user: gitfleet's own
	// comments are the ones it wrote.
	Login(ctx context.Context) (string, error)
	// SetStatus sets a commit status on the commit sha; a later status
	// with the same context replaces it.
	SetStatus(ctx context.Context, sha string, s Status) error
}

// PR is an open or closed pull request (merge request on GitLab).
type PR struct {
	Number  int
	Head    string // branch the changes come from
	HeadSHA string // commit at the tip of Head
	Base    string // branch it merges into
	Title   string
	Body    string
	URL     string // the page people open
	// Fork: Head is a branch of another repository. gitfleet's pull
	// requests never are; someone's fork may have a branch of the same name.
	Fork bool
}

// Comment is a comment on a pull request.
type Comment struct {
	ID     int64
	Author string // account name
	Body   string
}

// State is a commit status's state. GitLab has no "error": it is reported
// there as failed.
type State string

const (
	Pending State = "pending"
	Success State = "success"
	Failure State = "failure"
	Error   State = "error"
)

// Status is a commit status: one check named Context on a commit.
type Status struct {
	Context     string // e.g. "gitfleet/<run>"
	State       State
	Description string // one line; forges cut it at 140 characters
	TargetURL   string // optional
}

// PlanMarker marks the rollout preview comment, so that gitfleet finds and
// updates its own comment instead of adding one per push.
const PlanMarker = "<!-- gitfleet:plan -->"

// EnsurePR returns the open pull request from head into base, opening it
// with title and body when there is none; an existing one is returned as
// it is (EditPR changes it). Calling it again never opens a second one.
func EnsurePR(ctx context.Context, f Forge, head, base, title, body string) (pr PR, created bool, err error) {
	if pr, ok, err := FindPR(ctx, f, head, base); err != nil || ok {
		return pr, false, err
	}
	pr, err = f.CreatePR(ctx, head, base, title, body)
	if err != nil {
		return PR{}, false, fmt.Errorf("open pull request %s into %s: %w", head, base, err)
	}
	return pr, true, nil
}

// FindPR finds the open pull request from the repository's branch head
// into base.
func FindPR(ctx context.Context, f Forge, head, base string) (PR, bool, error) {
	prs, err := f.OpenPRs(ctx)
	if err != nil {
		return PR{}, false, fmt.Errorf("list open pull requests: %w", err)
	}
	for _, pr := range prs {
		if pr.Head == head && pr.Base == base && !pr.Fork {
			return pr, true, nil
		}
	}
	return PR{}, false, nil
}

// UpsertComment makes the comment on pull request n that carries marker
// say body: it edits gitfleet's earlier comment (the first one with the
// marker written by gitfleet's account) or adds one. Anyone may quote the
// marker; their comments are left alone, never taken for gitfleet's. The
// marker is an HTML comment, invisible on the forge; it is put on the
// first line of the text.
func UpsertComment(ctx context.Context, f Forge, n int, marker, body string) error {
	text := marker + "\n" + body
	login, err := f.Login(ctx)
	if err != nil {
		return fmt.Errorf("who the forge token belongs to: %w", err)
	}
	comments, err := f.Comments(ctx, n)
	if err != nil {
		return fmt.Errorf("list comments of pull request %d: %w", n, err)
	}
	for _, c := range comments {
		if c.Author != login || !strings.Contains(c.Body, marker) {
			continue
		}
		if c.Body == text {
			return nil
		}
		if err := f.EditComment(ctx, n, c.ID, text); err != nil {
			return fmt.Errorf("update comment %d on pull request %d: %w", c.ID, n, err)
		}
		return nil
	}
	if err := f.CreateComment(ctx, n, text); err != nil {
		return fmt.Errorf("comment on pull request %d: %w", n, err)
	}
	return nil
}
