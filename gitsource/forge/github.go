package forge

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-github/v92/github"
)

// gitHubForge talks to GitHub's REST API (or GitHub Enterprise's).
type gitHubForge struct {
	c           *github.Client
	owner, repo string
	token       secret
}

func newGitHub(baseURL, repoPath, token string, hc *http.Client) (Forge, error) {
	owner, repo, ok := strings.Cut(repoPath, "/")
	if !ok || strings.Contains(repo, "/") {
		return nil, fmt.Errorf("github: repository %q is not owner/name", repoPath)
	}
	opts := []github.ClientOptionsFunc{github.WithHTTPClient(hc), github.WithAuthToken(token)}
	if baseURL != "" && webRoot(baseURL) != "https://github.com" {
		// GitHub Enterprise: https://ghe.example.com serves the API under
		// /api/v3/.
		base := strings.TrimSuffix(baseURL, "/") + "/"
		opts = append(opts, github.WithEnterpriseURLs(base, base))
	}
	c, err := github.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("github: %w", secret(token).clean(err))
	}
	return &gitHubForge{c: c, owner: owner, repo: repo, token: secret(token)}, nil
}

func (g *gitHubForge) OpenPRs(ctx context.Context) ([]PR, error) {
	var out []PR
	opt := &github.PullRequestListOptions{State: "open", ListOptions: github.ListOptions{PerPage: 100}}
	for {
		prs, resp, err := g.c.PullRequests.List(ctx, g.owner, g.repo, opt)
		if err != nil {
			return nil, g.token.clean(err)
		}
		for _, p := range prs {
			out = append(out, gitHubPR(p))
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

func gitHubPR(p *github.PullRequest) PR {
	return PR{Number: p.GetNumber(), Head: p.GetHead().GetRef(), HeadSHA: p.GetHead().GetSHA(),
		Base: p.GetBase().GetRef(), Title: p.GetTitle(), Body: p.GetBody(), URL: p.GetHTMLURL(),
		// A deleted fork leaves no head repository: still not ours.
		Fork: p.GetHead().GetRepo().GetID() != p.GetBase().GetRepo().GetID()}
}

func (g *gitHubForge) CreatePR(ctx context.Context, head, base, title, body string) (PR, error) {
	p, _, err := g.c.PullRequests.Create(ctx, g.owner, g.repo, github.CreatePullRequest{Head: head, Base: base, Title: &title, Body: &body})
	if err != nil {
		return PR{}, g.token.clean(err)
	}
	return gitHubPR(p), nil
}

func (g *gitHubForge) EditPR(ctx context.Context, n int, title, body string) error {
	_, _, err := g.c.PullRequests.Edit(ctx, g.owner, g.repo, n, &github.PullRequest{Title: &title, Body: &body})
	return g.token.clean(err)
}

func (g *gitHubForge) ClosePR(ctx context.Context, n int) error {
	_, _, err := g.c.PullRequests.Edit(ctx, g.owner, g.repo, n, &github.PullRequest{State: github.Ptr("closed")})
	return g.token.clean(err)
}

func (g *gitHubForge) Merged(ctx context.Context, n int) (bool, error) {
	merged, _, err := g.c.PullRequests.IsMerged(ctx, g.owner, g.repo, n)
	return merged, g.token.clean(err)
}

// Comments are the pull request's issue comments (the conversation), not
// review comments on lines.
func (g *gitHubForge) Comments(ctx context.Context, n int) ([]Comment, error) {
	var out []Comment
	opt := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	for {
		cs, resp, err := g.c.Issues.ListComments(ctx, g.owner, g.repo, n, opt)
		if err != nil {
			return nil, g.token.clean(err)
		}
		for _, c := range cs {
			out = append(out, Comment{ID: c.GetID(), Author: c.GetUser().GetLogin(), Body: c.GetBody()})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

func (g *gitHubForge) CreateComment(ctx context.Context, n int, body string) error {
	_, _, err := g.c.Issues.CreateComment(ctx, g.owner, g.repo, n, github.IssueCommentRequest{Body: body})
	return g.token.clean(err)
}

func (g *gitHubForge) EditComment(ctx context.Context, _ int, id int64, body string) error {
	_, _, err := g.c.Issues.UpdateComment(ctx, g.owner, g.repo, id, github.IssueCommentRequest{Body: body})
	return g.token.clean(err)
}

func (g *gitHubForge) DeleteBranch(ctx context.Context, branch string) error {
	_, err := g.c.Git.DeleteRef(ctx, g.owner, g.repo, "heads/"+branch)
	return g.token.clean(err)
}

func (g *gitHubForge) Login(ctx context.Context) (string, error) {
	u, _, err := g.c.Users.Get(ctx, "")
	if err != nil {
		return "", g.token.clean(err)
	}
	return u.GetLogin(), nil
}

func (g *gitHubForge) SetStatus(ctx context.Context, sha string, s Status) error {
	st := github.RepoStatus{State: github.Ptr(string(s.State)), Context: &s.Context, Description: &s.Description}
	if s.TargetURL != "" {
		st.TargetURL = &s.TargetURL
	}
	_, _, err := g.c.Repositories.CreateStatus(ctx, g.owner, g.repo, sha, st)
	return g.token.clean(err)
}
