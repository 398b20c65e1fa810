package forge_test

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"code.gitea.io/sdk/gitea"

	"github.com/gitfleet/gitfleet/gitsource/forge"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/internal/testing/giteatest"
	"github.com/gitfleet/gitfleet/internal/testing/gittest"
)

// giteaRepo is a repository on a real Gitea, owned by "owner", with
// "gitfleet" (the bot whose token gitfleet uses) and "alice" (a person who
// reviews) as collaborators with write access, and a main branch.
type giteaRepo struct {
	srv                  *giteatest.Server
	owner, bot, reviewer giteatest.User
	name                 string
	work                 string // a clone, for pushing branches
	forge                forge.Forge
}

func newGiteaRepo(t *testing.T) *giteaRepo {
	t.Helper()
	srv := giteatest.Start(t)
	r := &giteaRepo{srv: srv, name: "fleet",
		owner: srv.CreateUser("owner", false), bot: srv.CreateUser("gitfleet", false), reviewer: srv.CreateUser("alice", false)}
	remote := srv.CreateRepo(r.owner, r.name)
	write := gitea.AccessModeWrite
	for _, u := range []giteatest.User{r.bot, r.reviewer} {
		if _, err := srv.Client(r.owner).AddCollaborator(r.owner.Name, r.name, u.Name, gitea.AddCollaboratorOption{Permission: &write}); err != nil {
			t.Fatalf("add collaborator %s: %v", u.Name, err)
		}
	}
	r.work = t.TempDir()
	gittest.Must(t, r.work, "init", "-q", "-b", "main")
	r.commit(t, "README.md", "fleet\n")
	gittest.Must(t, r.work, "push", "-q", srv.PushURL(r.owner, r.owner.Name, r.name), "main")

	tokenFile := writeToken(t, r.bot.Token)
	f, err := forge.New(forge.Config{Kind: forge.Gitea, Remote: remote, TokenFile: tokenFile})
	if err != nil {
		t.Fatal(err)
	}
	r.forge = f
	return r
}

func (r *giteaRepo) commit(t *testing.T, file, content string) string {
	t.Helper()
	writeFile(t, r.work, file, content)
	gittest.Must(t, r.work, "add", file)
	gittest.Must(t, r.work, "commit", "-q", "-m", "change "+file)
	return gittest.Must(t, r.work, "rev-parse", "HEAD")
}

// pushBranch commits on a new branch from main and pushes it as the bot.
func (r *giteaRepo) pushBranch(t *testing.T, branch, file string) string {
	t.Helper()
	gittest.Must(t, r.work, "checkout", "-q", "-b", branch, "main")
	sha := r.commit(t, file, branch+"\n")
	gittest.Must(t, r.work, "push", "-q", r.srv.PushURL(r.bot, r.owner.Name, r.name), branch)
	gittest.Must(t, r.work, "checkout", "-q", "main")
	return sha
}

func TestGiteaApprovalPullRequest(t *testing.T) {
	ctx := await.Context(t)
	r := newGiteaRepo(t)
	head := "gitfleet/approve/web-canary"
	// alice's fork has a branch of the same name, with a pull request open
	// into main: it is not gitfleet's.
	alice := r.srv.Client(r.reviewer)
	if _, _, err := alice.CreateFork(r.owner.Name, r.name, gitea.CreateForkOption{}); err != nil {
		t.Fatal(err)
	}
	gittest.Must(t, r.work, "checkout", "-q", "-b", "fork-"+head, "main")
	r.commit(t, "approvals/web-canary.yaml", "alice's own\n")
	gittest.Must(t, r.work, "push", "-q", r.srv.PushURL(r.reviewer, r.reviewer.Name, r.name), "HEAD:refs/heads/"+head)
	gittest.Must(t, r.work, "checkout", "-q", "main")
	forkPR, _, err := alice.CreatePullRequest(r.owner.Name, r.name, gitea.CreatePullRequestOption{
		Head: r.reviewer.Name + ":" + head, Base: "main", Title: "my own approval"})
	if err != nil {
		t.Fatal(err)
	}

	sha := r.pushBranch(t, head, "approvals/web-canary.yaml")
	pr, created, err := forge.EnsurePR(ctx, r.forge, head, "main", "Approve web: stage canary", "first body")
	if err != nil || !created {
		t.Fatalf("EnsurePR = %+v, created %v, %v; want a new pull request", pr, created, err)
	}
	if pr.Head != head || pr.Base != "main" || pr.HeadSHA != sha || pr.Number == 0 || pr.URL == "" {
		t.Errorf("opened %+v; want head %s at %s into main", pr, head, sha)
	}
	again, created, err := forge.EnsurePR(ctx, r.forge, head, "main", "other title", "other body")
	if err != nil || created || again.Number != pr.Number {
		t.Fatalf("EnsurePR again = #%d created %v, %v; want #%d found, not opened", again.Number, created, err, pr.Number)
	}
	prs, err := r.forge.OpenPRs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	forks := map[int]bool{}
	for _, p := range prs {
		forks[p.Number] = p.Fork
	}
	if want := map[int]bool{int(forkPR.Index): true, pr.Number: false}; !reflect.DeepEqual(forks, want) {
		t.Fatalf("open pull requests (number: from a fork) = %v; want %v", forks, want)
	}

	if err := r.forge.EditPR(ctx, pr.Number, "Approve web: stage canary (2 clusters)", "new body"); err != nil {
		t.Fatal(err)
	}
	got, _, err := r.srv.Client(r.owner).GetPullRequest(r.owner.Name, r.name, int64(pr.Number))
	if err != nil || got.Title != "Approve web: stage canary (2 clusters)" || got.Body != "new body" {
		t.Fatalf("after EditPR Gitea has %q / %q (%v)", got.Title, got.Body, err)
	}

	// People's comments stay, even one quoting the marker; gitfleet's
	// marked comment is updated, not repeated.
	quote := "gitfleet finds its comment by " + forge.PlanMarker
	for _, body := range []string{"looks good", quote} {
		if _, _, err := r.srv.Client(r.reviewer).CreateIssueComment(r.owner.Name, r.name, int64(pr.Number), gitea.CreateIssueCommentOption{Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	for _, body := range []string{"plan v1", "plan v2", "plan v2"} {
		if err := forge.UpsertComment(ctx, r.forge, pr.Number, forge.PlanMarker, body); err != nil {
			t.Fatal(err)
		}
	}
	comments, _, err := r.srv.Client(r.owner).ListIssueComments(r.owner.Name, r.name, int64(pr.Number), gitea.ListIssueCommentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, c := range comments {
		bodies = append(bodies, c.Poster.UserName+": "+c.Body)
	}
	want := []string{"alice: looks good", "alice: " + quote, "gitfleet: " + forge.PlanMarker + "\nplan v2"}
	if strings.Join(bodies, "|") != strings.Join(want, "|") {
		t.Errorf("comments = %q; want %q", bodies, want)
	}

	// Statuses: pending, then success, on the head commit.
	for _, state := range []forge.State{forge.Pending, forge.Success} {
		st := forge.Status{Context: "gitfleet/web", State: state, Description: "stage 1/2 canary: 1 of 2 clusters", TargetURL: "https://fleet.example.com/runs/web"}
		if err := r.forge.SetStatus(ctx, sha, st); err != nil {
			t.Fatal(err)
		}
		cs, _, err := r.srv.Client(r.owner).GetCombinedStatus(r.owner.Name, r.name, sha)
		if err != nil {
			t.Fatal(err)
		}
		if len(cs.Statuses) != 1 || cs.Statuses[0].Context != "gitfleet/web" || string(cs.Statuses[0].State) != string(state) ||
			cs.Statuses[0].Description != st.Description || cs.Statuses[0].TargetURL != st.TargetURL || string(cs.State) != string(state) {
			t.Errorf("after %s, Gitea's combined status is %s with %+v", state, cs.State, cs.Statuses)
		}
	}
	// Another run's context does not overwrite it.
	if err := r.forge.SetStatus(ctx, sha, forge.Status{Context: "gitfleet/api", State: forge.Failure, Description: "stage 1/1 all: failed"}); err != nil {
		t.Fatal(err)
	}
	if cs, _, err := r.srv.Client(r.owner).GetCombinedStatus(r.owner.Name, r.name, sha); err != nil || len(cs.Statuses) != 2 {
		t.Errorf("combined status after a second context = %+v, %v; want both contexts", cs, err)
	}

	if merged, err := r.forge.Merged(ctx, pr.Number); err != nil || merged {
		t.Fatalf("Merged before merging = %v, %v", merged, err)
	}
}

func TestGiteaWithdrawClosesAndDeletesBranch(t *testing.T) {
	ctx := await.Context(t)
	r := newGiteaRepo(t)
	head := "gitfleet/approve/web-prod"
	r.pushBranch(t, head, "approvals/web-prod.yaml")
	pr, _, err := forge.EnsurePR(ctx, r.forge, head, "main", "Approve web: stage prod", "body")
	if err != nil {
		t.Fatal(err)
	}
	// What the daemon does with a pull request it no longer needs.
	if err := r.forge.CreateComment(ctx, pr.Number, "Approved with gitfleet approve --commit; this pull request is no longer needed."); err != nil {
		t.Fatal(err)
	}
	if err := r.forge.ClosePR(ctx, pr.Number); err != nil {
		t.Fatal(err)
	}
	if err := r.forge.DeleteBranch(ctx, pr.Head); err != nil {
		t.Fatal(err)
	}
	c := r.srv.Client(r.owner)
	got, _, err := c.GetPullRequest(r.owner.Name, r.name, int64(pr.Number))
	if err != nil || got.State != gitea.StateClosed || got.HasMerged {
		t.Fatalf("pull request after Withdraw: %+v, %v; want closed, not merged", got, err)
	}
	comments, _, err := c.ListIssueComments(r.owner.Name, r.name, int64(pr.Number), gitea.ListIssueCommentOptions{})
	if err != nil || len(comments) != 1 || !strings.Contains(comments[0].Body, "gitfleet approve --commit") {
		t.Errorf("comments after Withdraw = %+v, %v; want the reason", comments, err)
	}
	if _, resp, err := c.GetRepoBranch(r.owner.Name, r.name, head); err == nil || resp == nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("branch %s after Withdraw: %v; want 404", head, err)
	}
	if prs, err := r.forge.OpenPRs(ctx); err != nil || len(prs) != 0 {
		t.Errorf("OpenPRs after Withdraw = %+v, %v; want none", prs, err)
	}
	if merged, err := r.forge.Merged(ctx, pr.Number); err != nil || merged {
		t.Errorf("Merged of a closed pull request = %v, %v", merged, err)
	}
}

// TestGiteaRequiredReviewIsThePolicy: with one approving review required
// on main, the approval pull request gitfleet opened cannot be merged by
// its author alone; once a second person approves, merging it works and
// gitfleet sees it merged.
func TestGiteaRequiredReviewIsThePolicy(t *testing.T) {
	ctx := await.Context(t)
	r := newGiteaRepo(t)
	owner := r.srv.Client(r.owner)
	if _, _, err := owner.CreateBranchProtection(r.owner.Name, r.name, gitea.CreateBranchProtectionOption{
		RuleName: "main", RequiredApprovals: 1, BlockAdminMergeOverride: true,
	}); err != nil {
		t.Fatal(err)
	}
	head := "gitfleet/approve/web-canary"
	sha := r.pushBranch(t, head, "approvals/web-canary.yaml")
	pr, _, err := forge.EnsurePR(ctx, r.forge, head, "main", "Approve web: stage canary", "body")
	if err != nil {
		t.Fatal(err)
	}
	bot := r.srv.Client(r.bot)
	// Gitea checks mergeability in the background; a merge before it is
	// done is refused for that reason, not for the review.
	await.Until(t, "Gitea to finish checking the pull request", func() bool {
		p, _, err := bot.GetPullRequest(r.owner.Name, r.name, int64(pr.Number))
		return err == nil && p.Mergeable
	})
	if status, msg := r.srv.Merge(r.bot, r.owner.Name, r.name, pr.Number, sha); status != http.StatusMethodNotAllowed || !strings.Contains(msg, "enough approvals") {
		t.Fatalf("merge without an approving review: %d %s; want 405 for too few approvals", status, msg)
	}
	// The author approving their own pull request does not count.
	if _, _, err := bot.CreatePullReview(r.owner.Name, r.name, int64(pr.Number), gitea.CreatePullReviewOptions{State: gitea.ReviewStateApproved, Body: "self"}); err == nil {
		t.Errorf("the author approved their own pull request")
	}
	if merged, err := r.forge.Merged(ctx, pr.Number); err != nil || merged {
		t.Fatalf("Merged before the review = %v, %v", merged, err)
	}

	if _, _, err := r.srv.Client(r.reviewer).CreatePullReview(r.owner.Name, r.name, int64(pr.Number), gitea.CreatePullReviewOptions{State: gitea.ReviewStateApproved, Body: "go"}); err != nil {
		t.Fatal(err)
	}
	if status, msg := r.srv.Merge(r.bot, r.owner.Name, r.name, pr.Number, sha); status != http.StatusOK {
		t.Fatalf("merge after alice approved: %d %s", status, msg)
	}
	if merged, err := r.forge.Merged(ctx, pr.Number); err != nil || !merged {
		t.Fatalf("Merged after merging = %v, %v", merged, err)
	}
	if prs, err := r.forge.OpenPRs(ctx); err != nil || len(prs) != 0 {
		t.Errorf("OpenPRs after merging = %+v, %v; want none", prs, err)
	}
}

// TestGiteaTokenNotInErrors: a call Gitea refuses fails without the
// token in its error.
func TestGiteaTokenNotInErrors(t *testing.T) {
	srv := giteatest.Start(t)
	owner := srv.CreateUser("owner", false)
	remote := srv.CreateRepo(owner, "fleet")
	const token = "0123456789abcdef0123456789abcdef01234567"
	f, err := forge.New(forge.Config{Kind: forge.Gitea, Remote: remote, TokenFile: writeToken(t, token)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.OpenPRs(context.Background())
	if err == nil {
		t.Fatal("OpenPRs with a token Gitea does not know succeeded")
	}
	if strings.Contains(err.Error(), token) {
		t.Errorf("error contains the token: %v", err)
	}
}
