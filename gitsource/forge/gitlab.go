package forge

import (
	"context"
	"fmt"
	"net/http"

	gitlab "gitlab.com/gitlab-org/api/client-go/v2"
)

// gitLabForge talks to GitLab's REST API v4; pull requests are merge
// requests, numbered by their IID, and comments are notes.
type gitLabForge struct {
	c       *gitlab.Client
	project string // group/subgroup/name
	token   secret
}

func newGitLab(baseURL, repoPath, token string, hc *http.Client) (Forge, error) {
	// gitfleet retries failed forge calls itself (never blocking a
	// rollout); the client's own retries would only hide the failures.
	opts := []gitlab.ClientOptionFunc{gitlab.WithHTTPClient(hc), gitlab.WithoutRetries()}
	if baseURL != "" {
		// The client adds /api/v4/ unless the URL ends with it.
		opts = append(opts, gitlab.WithBaseURL(baseURL))
	}
	c, err := gitlab.NewClient(token, opts...)
	if err != nil {
		return nil, fmt.Errorf("gitlab: %w", secret(token).clean(err))
	}
	return &gitLabForge{c: c, project: repoPath, token: secret(token)}, nil
}

func (g *gitLabForge) OpenPRs(ctx context.Context) ([]PR, error) {
	var out []PR
	opt := &gitlab.ListProjectMergeRequestsOptions{State: gitlab.Ptr("opened"), ListOptions: gitlab.ListOptions{PerPage: 100}}
	for {
		mrs, resp, err := g.c.MergeRequests.ListProjectMergeRequests(g.project, opt, gitlab.WithContext(ctx))
		if err != nil {
			return nil, g.token.clean(err)
		}
		for _, m := range mrs {
			out = append(out, PR{Number: int(m.IID), Head: m.SourceBranch, HeadSHA: m.SHA, Base: m.TargetBranch,
				Title: m.Title, Body: m.Description, URL: m.WebURL, Fork: m.SourceProjectID != m.TargetProjectID})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

func (g *gitLabForge) CreatePR(ctx context.Context, head, base, title, body string) (PR, error) {
	m, _, err := g.c.MergeRequests.CreateMergeRequest(g.project, &gitlab.CreateMergeRequestOptions{
		SourceBranch: &head, TargetBranch: &base, Title: &title, Description: &body}, gitlab.WithContext(ctx))
	if err != nil {
		return PR{}, g.token.clean(err)
	}
	return PR{Number: int(m.IID), Head: m.SourceBranch, HeadSHA: m.SHA, Base: m.TargetBranch,
		Title: m.Title, Body: m.Description, URL: m.WebURL, Fork: m.SourceProjectID != m.TargetProjectID}, nil
}

func (g *gitLabForge) EditPR(ctx context.Context, n int, title, body string) error {
	_, _, err := g.c.MergeRequests.UpdateMergeRequest(g.project, int64(n),
		&gitlab.UpdateMergeRequestOptions{Title: &title, Description: &body}, gitlab.WithContext(ctx))
	return g.token.clean(err)
}

func (g *gitLabForge) ClosePR(ctx context.Context, n int) error {
	_, _, err := g.c.MergeRequests.UpdateMergeRequest(g.project, int64(n),
		&gitlab.UpdateMergeRequestOptions{StateEvent: gitlab.Ptr("close")}, gitlab.WithContext(ctx))
	return g.token.clean(err)
}

func (g *gitLabForge) Merged(ctx context.Context, n int) (bool, error) {
	m, _, err := g.c.MergeRequests.GetMergeRequest(g.project, int64(n), nil, gitlab.WithContext(ctx))
	if err != nil {
		return false, g.token.clean(err)
	}
	return m.State == "merged", nil
}

// Comments leaves out system notes ("added 1 commit"): people and bots
// write the others.
func (g *gitLabForge) Comments(ctx context.Context, n int) ([]Comment, error) {
	var out []Comment
	opt := &gitlab.ListMergeRequestNotesOptions{Sort: gitlab.Ptr("asc"), OrderBy: gitlab.Ptr("created_at"),
		ListOptions: gitlab.ListOptions{PerPage: 100}}
	for {
		notes, resp, err := g.c.Notes.ListMergeRequestNotes(g.project, int64(n), opt, gitlab.WithContext(ctx))
		if err != nil {
			return nil, g.token.clean(err)
		}
		for _, note := range notes {
			if !note.System {
				out = append(out, Comment{ID: note.ID, Author: note.Author.Username, Body: note.Body})
			}
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

func (g *gitLabForge) CreateComment(ctx context.Context, n int, body string) error {
	_, _, err := g.c.Notes.CreateMergeRequestNote(g.project, int64(n),
		&gitlab.CreateMergeRequestNoteOptions{Body: &body}, gitlab.WithContext(ctx))
	return g.token.clean(err)
}

func (g *gitLabForge) EditComment(ctx context.Context, n int, id int64, body string) error {
	_, _, err := g.c.Notes.UpdateMergeRequestNote(g.project, int64(n), id,
		&gitlab.UpdateMergeRequestNoteOptions{Body: &body}, gitlab.WithContext(ctx))
	return g.token.clean(err)
}

func (g *gitLabForge) DeleteBranch(ctx context.Context, branch string) error {
	_, err := g.c.Branches.DeleteBranch(g.project, branch, gitlab.WithContext(ctx))
	return g.token.clean(err)
}

func (g *gitLabForge) Login(ctx context.Context) (string, error) {
	u, _, err := g.c.Users.CurrentUser(gitlab.WithContext(ctx))
	if err != nil {
		return "", g.token.clean(err)
	}
	return u.Username, nil
}

// gitLabStates maps commit status states: GitLab has no "error".
var gitLabStates = map[State]gitlab.BuildStateValue{
	Pending: gitlab.Pending, Success: gitlab.Success, Failure: gitlab.Failed, Error: gitlab.Failed,
}

func (g *gitLabForge) SetStatus(ctx context.Context, sha string, s Status) error {
	state, ok := gitLabStates[s.State]
	if !ok {
		return fmt.Errorf("gitlab: unknown commit status state %q", s.State)
	}
	opt := &gitlab.SetCommitStatusOptions{State: state, Name: &s.Context, Description: &s.Description}
	if s.TargetURL != "" {
		opt.TargetURL = &s.TargetURL
	}
	_, _, err := g.c.Commits.SetCommitStatus(g.project, sha, opt, gitlab.WithContext(ctx))
	return g.token.clean(err)
}
