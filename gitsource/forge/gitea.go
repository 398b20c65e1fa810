package forge

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"code.gitea.io/sdk/gitea"
)

// giteaForge talks to Gitea's API through its SDK.
type giteaForge struct {
	url, owner, repo string
	token            secret
	http             *http.Client
}

func newGitea(baseURL, repoPath, token string, hc *http.Client) (Forge, error) {
	owner, repo, ok := strings.Cut(repoPath, "/")
	if !ok || strings.Contains(repo, "/") {
		return nil, fmt.Errorf("gitea: repository %q is not owner/name", repoPath)
	}
	return &giteaForge{url: strings.TrimSuffix(baseURL, "/"), owner: owner, repo: repo, token: secret(token), http: hc}, nil
}

// client is a new SDK client per call: the SDK holds one context per
// client, and the version check it makes is skipped (no call in New).
func (g *giteaForge) client(ctx context.Context) (*gitea.Client, error) {
	c, err := gitea.NewClient(g.url, gitea.SetToken(string(g.token)), gitea.SetHTTPClient(g.http),
		gitea.SetContext(ctx), gitea.SetGiteaVersion(""))
	return c, g.token.clean(err)
}

func (g *giteaForge) do(ctx context.Context, call func(*gitea.Client) error) error {
	c, err := g.client(ctx)
	if err != nil {
		return err
	}
	return g.token.clean(call(c))
}

func (g *giteaForge) OpenPRs(ctx context.Context) ([]PR, error) {
	var out []PR
	err := g.do(ctx, func(c *gitea.Client) error {
		opt := gitea.ListPullRequestsOptions{State: gitea.StateOpen, ListOptions: gitea.ListOptions{Page: 1, PageSize: 50}}
		for {
			prs, resp, err := c.ListRepoPullRequests(g.owner, g.repo, opt)
			if err != nil {
				return err
			}
			for _, p := range prs {
				out = append(out, giteaPR(p))
			}
			if resp == nil || resp.NextPage == 0 {
				return nil
			}
			opt.Page = resp.NextPage
		}
	})
	return out, err
}

func giteaPR(p *gitea.PullRequest) PR {
	pr := PR{Number: int(p.Index), Title: p.Title, Body: p.Body, URL: p.HTMLURL}
	if p.Head != nil {
		pr.Head, pr.HeadSHA = p.Head.Ref, p.Head.Sha
	}
	if p.Base != nil {
		pr.Base = p.Base.Ref
	}
	pr.Fork = p.Head == nil || p.Base == nil || p.Head.RepoID != p.Base.RepoID
	return pr
}

func (g *giteaForge) CreatePR(ctx context.Context, head, base, title, body string) (PR, error) {
	var pr PR
	err := g.do(ctx, func(c *gitea.Client) error {
		p, _, err := c.CreatePullRequest(g.owner, g.repo, gitea.CreatePullRequestOption{Head: head, Base: base, Title: title, Body: body})
		if err == nil {
			pr = giteaPR(p)
		}
		return err
	})
	return pr, err
}

func (g *giteaForge) EditPR(ctx context.Context, n int, title, body string) error {
	return g.do(ctx, func(c *gitea.Client) error {
		_, _, err := c.EditPullRequest(g.owner, g.repo, int64(n), gitea.EditPullRequestOption{Title: title, Body: &body})
		return err
	})
}

func (g *giteaForge) ClosePR(ctx context.Context, n int) error {
	closed := gitea.StateClosed
	return g.do(ctx, func(c *gitea.Client) error {
		_, _, err := c.EditPullRequest(g.owner, g.repo, int64(n), gitea.EditPullRequestOption{State: &closed})
		return err
	})
}

func (g *giteaForge) Merged(ctx context.Context, n int) (bool, error) {
	var merged bool
	err := g.do(ctx, func(c *gitea.Client) error {
		var err error
		merged, _, err = c.IsPullRequestMerged(g.owner, g.repo, int64(n))
		return err
	})
	return merged, err
}

func (g *giteaForge) Comments(ctx context.Context, n int) ([]Comment, error) {
	var out []Comment
	err := g.do(ctx, func(c *gitea.Client) error {
		opt := gitea.ListIssueCommentOptions{ListOptions: gitea.ListOptions{Page: 1, PageSize: 50}}
		for {
			cs, resp, err := c.ListIssueComments(g.owner, g.repo, int64(n), opt)
			if err != nil {
				return err
			}
			for _, cm := range cs {
				cmt := Comment{ID: cm.ID, Body: cm.Body}
				if cm.Poster != nil {
					cmt.Author = cm.Poster.UserName
				}
				out = append(out, cmt)
			}
			if resp == nil || resp.NextPage == 0 {
				return nil
			}
			opt.Page = resp.NextPage
		}
	})
	return out, err
}

func (g *giteaForge) CreateComment(ctx context.Context, n int, body string) error {
	return g.do(ctx, func(c *gitea.Client) error {
		_, _, err := c.CreateIssueComment(g.owner, g.repo, int64(n), gitea.CreateIssueCommentOption{Body: body})
		return err
	})
}

func (g *giteaForge) EditComment(ctx context.Context, _ int, id int64, body string) error {
	return g.do(ctx, func(c *gitea.Client) error {
		_, _, err := c.EditIssueComment(g.owner, g.repo, id, gitea.EditIssueCommentOption{Body: body})
		return err
	})
}

func (g *giteaForge) DeleteBranch(ctx context.Context, branch string) error {
	return g.do(ctx, func(c *gitea.Client) error {
		ok, _, err := c.DeleteRepoBranch(g.owner, g.repo, branch)
		if err == nil && !ok {
			err = fmt.Errorf("branch %s was not deleted", branch)
		}
		return err
	})
}

func (g *giteaForge) Login(ctx context.Context) (string, error) {
	var login string
	err := g.do(ctx, func(c *gitea.Client) error {
		u, _, err := c.GetMyUserInfo()
		if err == nil {
			login = u.UserName
		}
		return err
	})
	return login, err
}

func (g *giteaForge) SetStatus(ctx context.Context, sha string, s Status) error {
	return g.do(ctx, func(c *gitea.Client) error {
		_, _, err := c.CreateStatus(g.owner, g.repo, sha, gitea.CreateStatusOption{
			State: gitea.StatusState(s.State), Context: s.Context, Description: s.Description, TargetURL: s.TargetURL})
		return err
	})
}
