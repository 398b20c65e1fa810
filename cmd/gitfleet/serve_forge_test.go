package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"code.gitea.io/sdk/gitea"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/internal/testing/giteatest"
	"github.com/gitfleet/gitfleet/internal/testing/gittest"
	"github.com/gitfleet/gitfleet/status"
)

// giteaFleet is the quickstart fleet on a real Gitea, owned by "owner",
// with "gitfleet" (whose token serve uses for Git and the API) and "alice"
// (a reviewer) as collaborators with write access. Its strategy puts the
// approval before the canary stage, so the approval pull request releases
// clusters.
type giteaFleet struct {
	srv                  *giteatest.Server
	owner, bot, reviewer giteatest.User
	remote, botToken     string
	commit               string // the quickstart commit, which the run rolls out
}

const (
	forgeRun      = "example-run"
	forgeApproval = "example-run-before-canary"
	forgeBranch   = "gitfleet/approve/" + forgeApproval
)

func newGiteaFleet(t *testing.T) *giteaFleet {
	t.Helper()
	srv := giteatest.Start(t)
	g := &giteaFleet{srv: srv, owner: srv.CreateUser("owner", false), bot: srv.CreateUser("gitfleet", false), reviewer: srv.CreateUser("alice", false)}
	g.remote = srv.CreateRepo(g.owner, "fleet")
	write := gitea.AccessModeWrite
	for _, u := range []giteatest.User{g.bot, g.reviewer} {
		if _, err := srv.Client(g.owner).AddCollaborator(g.owner.Name, "fleet", u.Name, gitea.AddCollaboratorOption{Permission: &write}); err != nil {
			t.Fatalf("add collaborator %s: %v", u.Name, err)
		}
	}
	work := filepath.Join(t.TempDir(), "work")
	copyTree(t, "../../examples/quickstart", work)
	edit := func(name string, from, to string) {
		p := filepath.Join(work, name)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		s := strings.ReplaceAll(string(data), from, to)
		if s == string(data) {
			t.Fatalf("%s has no %q", name, from)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit("members.yaml", "gitfleet.io/sim-available-after: 10s", "gitfleet.io/sim-available-after: 0s")
	edit("strategy.yaml", "waitTime: 1m", "waitTime: 1s")
	edit("strategy.yaml", "      sortingLabelKey: order\n      afterStageTasks:\n        - type: Approval", "      sortingLabelKey: order\n      beforeStageTasks:\n        - type: Approval")
	gitCmd(t, work, "init", "-q", "-b", "main")
	gitCmd(t, work, "add", ".")
	gitCmd(t, work, "commit", "-q", "-m", "quickstart")
	g.commit = gitCmd(t, work, "rev-parse", "HEAD")
	gitCmd(t, work, "push", "-q", srv.PushURL(g.owner, g.owner.Name, "fleet"), "main")
	g.botToken = filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(g.botToken, []byte(g.bot.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return g
}

// serve runs `gitfleet serve` against the Gitea remote until the test
// ends.
func (g *giteaFleet) serve(t *testing.T, extra ...string) {
	t.Helper()
	args := g.serveArgs(t, extra...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	root := newRootCommand()
	root.SetArgs(args)
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	go func() { done <- root.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
}

// serveArgs are serve's arguments with gitfleet's forge token.
func (g *giteaFleet) serveArgs(t *testing.T, extra ...string) []string {
	return g.serveWithoutForge(t, append([]string{"--forge", "gitea", "--forge-token-file", g.botToken}, extra...)...)
}

func (g *giteaFleet) serveWithoutForge(t *testing.T, extra ...string) []string {
	return append([]string{"serve", "--repo", g.remote, "--username", g.bot.Name, "--password-file", g.botToken, "--allow-insecure-http",
		"--cache-dir", t.TempDir(), "--interval", "200ms", "--status-interval", "50ms", "--metrics-addr", "", "--log-level", "warn"}, extra...)
}

func (g *giteaFleet) client() *gitea.Client { return g.srv.Client(g.owner) }

// approvalPR waits for gitfleet's approval pull request and returns it.
func (g *giteaFleet) approvalPR(t *testing.T) *gitea.PullRequest {
	t.Helper()
	var pr *gitea.PullRequest
	await.Until(t, "the approval pull request", func() bool {
		prs, _, err := g.client().ListRepoPullRequests(g.owner.Name, "fleet", gitea.ListPullRequestsOptions{State: gitea.StateAll})
		if err != nil {
			return false
		}
		for _, p := range prs {
			if p.Head != nil && p.Head.Ref == forgeBranch {
				pr = p
				return true
			}
		}
		return false
	})
	return pr
}

// runStatus waits until the run's status on the quickstart commit is
// state with a description that starts with prefix.
func (g *giteaFleet) runStatus(t *testing.T, state gitea.StatusState, prefix string) {
	t.Helper()
	await.Until(t, fmt.Sprintf("commit status gitfleet/%s %s %q", forgeRun, state, prefix), func() bool {
		cs, _, err := g.client().GetCombinedStatus(g.owner.Name, "fleet", g.commit)
		if err != nil {
			return false
		}
		for _, s := range cs.Statuses {
			if s.Context == "gitfleet/"+forgeRun {
				return s.State == state && strings.HasPrefix(s.Description, prefix)
			}
		}
		return false
	})
}

// runPhase is the run's phase in the status tree on Gitea's main.
func (g *giteaFleet) runPhase() string {
	data, _, err := g.client().GetFile(g.owner.Name, "fleet", "main", "status/runs/"+forgeRun+".yaml")
	if err != nil {
		return ""
	}
	obj, err := status.DecodeFile("status/runs/"+forgeRun+".yaml", data)
	if err != nil {
		return ""
	}
	return obj.(*fleet.UpdateRun).Phase()
}

func (g *giteaFleet) branchGone(t *testing.T) {
	t.Helper()
	await.Until(t, "branch "+forgeBranch+" to be deleted", func() bool {
		_, resp, err := g.client().GetRepoBranch(g.owner.Name, "fleet", forgeBranch)
		return err != nil && resp != nil && resp.StatusCode == http.StatusNotFound
	})
}

// End to end through serve against a real Gitea whose main requires one
// approving review: the approval pull request appears with what approving
// releases; the run's commit status is pending while it waits; the merge is
// refused until a second person approves; merging finishes the run, the
// status turns success and the branch is deleted.
func TestServeOpensTheApprovalPullRequestOnGitea(t *testing.T) {
	g := newGiteaFleet(t)
	if _, _, err := g.client().CreateBranchProtection(g.owner.Name, "fleet", gitea.CreateBranchProtectionOption{
		RuleName: "main", RequiredApprovals: 1, BlockAdminMergeOverride: true,
		// gitfleet pushes its status and approval requests to main.
		EnablePush: true, EnablePushWhitelist: true, PushWhitelistUsernames: []string{g.bot.Name},
	}); err != nil {
		t.Fatal(err)
	}
	g.serve(t, "--forge-cluster-statuses")

	pr := g.approvalPR(t)
	if want := "Approve example-run: start stage canary"; pr.Title != want {
		t.Errorf("title %q; want %q", pr.Title, want)
	}
	for _, want := range []string{
		"approves `" + forgeApproval + "`",
		"### Stage 2/2 `canary`: 2 clusters, in this order\n\n1. member3\n2. member1\n",
		"Resource snapshot index 0 of placement `example-placement`, recorded from commit " + g.commit,
		"| staging | member2 | ",
		"member3, member1 have nothing of placement `example-placement` yet and get snapshot 0:",
		"| added | ConfigMap | test-namespace | test-cm |\n| added | Namespace | – | test-namespace |",
	} {
		if !strings.Contains(pr.Body, want) {
			t.Errorf("body lacks %q:\n%s", want, pr.Body)
		}
	}
	g.runStatus(t, gitea.StatusPending, "stage 2/2 canary: 0 of 2 clusters, waiting for approval "+forgeApproval)

	await.Until(t, "Gitea to find the pull request mergeable", func() bool {
		p, _, err := g.client().GetPullRequest(g.owner.Name, "fleet", pr.Index)
		return err == nil && p.Mergeable
	})
	if code, msg := g.srv.Merge(g.reviewer, g.owner.Name, "fleet", int(pr.Index), pr.Head.Sha); code != http.StatusMethodNotAllowed || !strings.Contains(msg, "enough approvals") {
		t.Fatalf("merge before any review: %d %s; want 405 for too few approvals", code, msg)
	}
	if g.runPhase() == fleet.PhaseSucceeded {
		t.Fatal("the run succeeded without the approval")
	}
	if _, _, err := g.srv.Client(g.reviewer).CreatePullReview(g.owner.Name, "fleet", pr.Index, gitea.CreatePullReviewOptions{State: gitea.ReviewStateApproved, Body: "go"}); err != nil {
		t.Fatal(err)
	}
	if code, msg := g.srv.Merge(g.reviewer, g.owner.Name, "fleet", int(pr.Index), pr.Head.Sha); code != http.StatusOK {
		t.Fatalf("merge after the review: %d %s", code, msg)
	}

	g.runStatus(t, gitea.StatusSuccess, "succeeded: stage 2/2 canary: 2 of 2 clusters")
	await.Until(t, "the run to succeed", func() bool { return g.runPhase() == fleet.PhaseSucceeded })
	g.branchGone(t)
	// Pending came first, then success, each once.
	statuses, _, err := g.client().ListStatuses(g.owner.Name, "fleet", g.commit, gitea.ListStatusesOption{ListOptions: gitea.ListOptions{PageSize: 50}})
	if err != nil {
		t.Fatal(err)
	}
	// Gitea lists by creation second, newest first, so two statuses posted
	// within one second come in either order; their IDs say which came first.
	slices.SortFunc(statuses, func(a, b *gitea.Status) int { return cmp.Compare(a.ID, b.ID) })
	var states []string
	for _, s := range statuses {
		if s.Context == "gitfleet/"+forgeRun {
			states = append(states, string(s.State))
		}
	}
	if len(states) < 2 || states[0] != "pending" || states[len(states)-1] != "success" || strings.Count(strings.Join(states, ","), "success") != 1 {
		t.Errorf("statuses of gitfleet/%s, oldest first: %v; want pending … success", forgeRun, states)
	}
	// --forge-cluster-statuses: one context per cluster, each success.
	await.Until(t, "a success status per cluster", func() bool {
		cs, _, err := g.client().GetCombinedStatus(g.owner.Name, "fleet", g.commit)
		if err != nil {
			return false
		}
		ok := 0
		for _, s := range cs.Statuses {
			if strings.HasPrefix(s.Context, "gitfleet/"+forgeRun+"/member") && s.State == gitea.StatusSuccess {
				ok++
			}
		}
		return ok == 3
	})
	merged, _, err := g.client().GetPullRequest(g.owner.Name, "fleet", pr.Index)
	if err != nil || !merged.HasMerged {
		t.Errorf("pull request after merging: %+v, %v", merged, err)
	}
	comments, _, _ := g.client().ListIssueComments(g.owner.Name, "fleet", pr.Index, gitea.ListIssueCommentOptions{})
	for _, c := range comments {
		if c.Poster != nil && c.Poster.UserName == g.bot.Name {
			t.Errorf("gitfleet commented on the merged pull request: %q", c.Body)
		}
	}
}

// CI's use: serve --until-idle exits once the run waits for its approval,
// and by then the approval pull request is open and the run's status says
// what it waits for: forge calls still pending are made on the way out.
func TestServeUntilIdleLeavesTheForgeUpToDate(t *testing.T) {
	g := newGiteaFleet(t)
	if out, errOut, code := gitfleet(t, g.serveArgs(t, "--until-idle")...); code != 0 {
		t.Fatalf("serve exited %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	prs, _, err := g.client().ListRepoPullRequests(g.owner.Name, "fleet", gitea.ListPullRequestsOptions{State: gitea.StateOpen})
	if err != nil || len(prs) != 1 || prs[0].Head.Ref != forgeBranch {
		t.Errorf("open pull requests after serve: %d, %v; want the approval's", len(prs), err)
	}
	cs, _, err := g.client().GetCombinedStatus(g.owner.Name, "fleet", g.commit)
	if err != nil || len(cs.Statuses) != 1 || cs.Statuses[0].State != gitea.StatusPending ||
		cs.Statuses[0].Description != "stage 2/2 canary: 0 of 2 clusters, waiting for approval "+forgeApproval {
		t.Errorf("statuses after serve: %+v, %v; want the run waiting for its approval", cs, err)
	}
}

// A run already waits for its approval when serve starts with --forge
// (turned on later, or a restart that lost the call): the pull request of
// its pushed branch is opened then.
func TestServeWithAForgeOpensThePullRequestOfARequestThatAlreadyWaits(t *testing.T) {
	g := newGiteaFleet(t)
	if out, errOut, code := gitfleet(t, g.serveWithoutForge(t, "--until-idle")...); code != 0 {
		t.Fatalf("serve without a forge exited %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if prs, _, err := g.client().ListRepoPullRequests(g.owner.Name, "fleet", gitea.ListPullRequestsOptions{State: gitea.StateAll}); err != nil || len(prs) != 0 {
		t.Fatalf("pull requests before --forge: %d, %v", len(prs), err)
	}
	if out, errOut, code := gitfleet(t, g.serveArgs(t, "--until-idle")...); code != 0 {
		t.Fatalf("serve exited %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	pr := g.approvalPR(t)
	if pr.State != gitea.StateOpen || !strings.Contains(pr.Body, "1. member3\n2. member1\n") {
		t.Errorf("pull request %s: %q", pr.State, pr.Body)
	}
}

// A request approved with `gitfleet approve --commit` instead: gitfleet
// says so on the pull request, closes it and deletes its branch.
func TestServeWithdrawsTheApprovalPullRequestOfARequestApprovedByCommit(t *testing.T) {
	g := newGiteaFleet(t)
	g.serve(t)
	pr := g.approvalPR(t)

	approveByCommit(t, g)
	await.Until(t, "the pull request to be closed", func() bool {
		p, _, err := g.client().GetPullRequest(g.owner.Name, "fleet", pr.Index)
		return err == nil && p.State == gitea.StateClosed
	})
	g.branchGone(t)
	p, _, err := g.client().GetPullRequest(g.owner.Name, "fleet", pr.Index)
	if err != nil || p.HasMerged {
		t.Errorf("pull request: %+v, %v; want closed without merging", p, err)
	}
	comments, _, err := g.client().ListIssueComments(g.owner.Name, "fleet", pr.Index, gitea.ListIssueCommentOptions{})
	if err != nil || len(comments) != 1 || comments[0].Poster.UserName != g.bot.Name ||
		!strings.Contains(comments[0].Body, "was approved without this pull request (commit ") ||
		!strings.Contains(comments[0].Body, "closes this pull request and deletes its branch") {
		for _, c := range comments {
			t.Logf("comment by %s: %s", c.Poster.UserName, c.Body)
		}
		t.Errorf("comments: %d, %v; want gitfleet's one saying why", len(comments), err)
	}
	await.Until(t, "the run to succeed", func() bool { return g.runPhase() == fleet.PhaseSucceeded })
	g.runStatus(t, gitea.StatusSuccess, "succeeded: stage 2/2 canary: 2 of 2 clusters")
}

// Deleting the run withdraws its approval pull request: gitfleet says
// why, closes it and deletes the branch.
func TestServeWithdrawsTheApprovalPullRequestOfADeletedRun(t *testing.T) {
	g := newGiteaFleet(t)
	g.serve(t)
	pr := g.approvalPR(t)

	g.push(t, func(clone string) {
		gitCmd(t, clone, "rm", "-q", "run.yaml")
		gitCmd(t, clone, "commit", "-q", "-m", "delete the run")
	})
	await.Until(t, "the pull request to be closed", func() bool {
		p, _, err := g.client().GetPullRequest(g.owner.Name, "fleet", pr.Index)
		return err == nil && p.State == gitea.StateClosed
	})
	g.branchGone(t)
	comments, _, err := g.client().ListIssueComments(g.owner.Name, "fleet", pr.Index, gitea.ListIssueCommentOptions{})
	if err != nil || len(comments) != 1 || !strings.Contains(comments[0].Body, "was deleted, and the request with it") {
		t.Errorf("comments: %d, %v; want gitfleet's one saying the run was deleted", len(comments), err)
	}
}

// A commit that does not render gets a failed commit status, context
// gitfleet, whose description names the file and the error; the commit the
// run rolls out keeps the run's own status.
func TestServeMarksACommitThatDoesNotRenderOnGitea(t *testing.T) {
	g := newGiteaFleet(t)
	g.serve(t)
	g.runStatus(t, gitea.StatusPending, "stage 2/2 canary")

	var refused string
	g.push(t, func(clone string) {
		kustomization := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - missing.yaml\n"
		if err := os.WriteFile(filepath.Join(clone, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
			t.Fatal(err)
		}
		gitCmd(t, clone, "add", "kustomization.yaml")
		gitCmd(t, clone, "commit", "-q", "-m", "a kustomization that does not build")
		refused = gitCmd(t, clone, "rev-parse", "HEAD")
	})
	var got *gitea.Status
	await.Until(t, "a failed status on the commit that does not render", func() bool {
		cs, _, err := g.client().GetCombinedStatus(g.owner.Name, "fleet", refused)
		if err != nil {
			return false
		}
		for _, s := range cs.Statuses {
			if s.Context == "gitfleet" {
				got = s
				return true
			}
		}
		return false
	})
	if got.State != gitea.StatusFailure || !strings.HasPrefix(got.Description, "does not render: kustomization.yaml:4: resources[0]: kustomize build failed") {
		t.Errorf("status of the refused commit: %s %q; want failure naming kustomization.yaml", got.State, got.Description)
	}
	g.runStatus(t, gitea.StatusPending, "stage 2/2 canary")
}

// approveByCommit approves the request as a person does with `gitfleet
// approve --commit` in a clone, and pushes.
func approveByCommit(t *testing.T, g *giteaFleet) {
	t.Helper()
	await.Until(t, "the approval request on main", func() bool {
		_, _, err := g.client().GetFile(g.owner.Name, "fleet", "main", "approvals/"+forgeApproval+".yaml")
		return err == nil
	})
	g.push(t, func(clone string) {
		if out, errOut, code := gitfleet(t, "approve", forgeApproval, "--repo", clone, "--commit"); code != 0 {
			t.Fatalf("approve exited %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
	})
}

// push makes a person's commit (change, in a clone as the owner) and
// pushes it to main, making it again on the new tip while gitfleet's
// pushes get in the way.
func (g *giteaFleet) push(t *testing.T, change func(clone string)) {
	t.Helper()
	clone := filepath.Join(t.TempDir(), "fleet")
	gitCmd(t, filepath.Dir(clone), "clone", "-q", g.srv.PushURL(g.owner, g.owner.Name, "fleet"), clone)
	for i := 0; ; i++ {
		change(clone)
		if _, err := gittest.Run(clone, "push", "-q", "origin", "HEAD:main"); err == nil {
			return
		} else if i == 20 {
			t.Fatal(err)
		}
		gitCmd(t, clone, "fetch", "-q", "origin")
		gitCmd(t, clone, "reset", "-q", "--hard", "origin/main")
	}
}

// A forge that fails every call does not hold up the rollout: the run
// waits for its approval, is approved by a commit and succeeds while every
// forge call fails, and the failures are counted. Once the forge answers
// again, the retries bring it up to date: the status turns success and the
// approval branch, whose pull request was never opened, is deleted.
func TestServeRollsOutWhileTheForgeIsDown(t *testing.T) {
	g := newGiteaFleet(t)
	var down atomic.Bool
	down.Store(true)
	target, _ := url.Parse(g.srv.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	forgeSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "maintenance", http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(forgeSrv.Close)
	metricsAddr := freeAddr(t)
	g.serve(t, "--forge-url", forgeSrv.URL, "--forge-retry-max", "2s", "--metrics-addr", metricsAddr)

	approveByCommit(t, g)
	await.Until(t, "the run to succeed while the forge is down", func() bool { return g.runPhase() == fleet.PhaseSucceeded })
	metric := `gitfleet_forge_api_errors_total{class="server_error",operation="commit_status"}`
	await.Until(t, "two failed status calls counted", func() bool { return scrape(t, metricsAddr, metric) >= 2 })
	if cs, _, err := g.client().GetCombinedStatus(g.owner.Name, "fleet", g.commit); err != nil || len(cs.Statuses) != 0 {
		t.Fatalf("statuses while the forge is down: %+v, %v; want none", cs, err)
	}
	if prs, _, err := g.client().ListRepoPullRequests(g.owner.Name, "fleet", gitea.ListPullRequestsOptions{State: gitea.StateAll}); err != nil || len(prs) != 0 {
		t.Fatalf("pull requests while the forge is down: %d, %v; want none", len(prs), err)
	}

	down.Store(false)
	g.runStatus(t, gitea.StatusSuccess, "succeeded: stage 2/2 canary: 2 of 2 clusters")
	g.branchGone(t)
}

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.Listener.Addr().String()
	srv.Close()
	return addr
}

// scrape returns the value of one series on serve's /metrics, 0 when it is
// not there (yet).
func scrape(t *testing.T, addr, series string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			var f float64
			fmt.Sscan(v, &f)
			return f
		}
	}
	return 0
}

// Wrong --forge flags end serve at once with an error naming the flag to
// fix, and never with the token.
func TestServeForgeFlagErrorsNameTheFlag(t *testing.T) {
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("s3cr3t-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GITFLEET_TEST_UNSET_TOKEN", "")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown forge", []string{"--repo", "https://git.example.com/o/fleet.git", "--forge", "bitbucket", "--forge-token-file", token}, `--forge "bitbucket": want github, gitlab or gitea`},
		{"no token", []string{"--repo", "https://github.com/o/fleet.git", "--forge", "github"}, "--forge needs an API token: set --forge-token-file or --forge-token-env"},
		{"two tokens", []string{"--repo", "https://github.com/o/fleet.git", "--forge-token-file", token, "--forge-token-env", "T"}, "--forge-token-file and --forge-token-env: set one, not both"},
		{"a self-hosted host is not guessed", []string{"--repo", "https://gitlab.example.com/o/fleet.git", "--forge-token-file", token}, "set --forge github|gitlab|gitea"},
		{"an empty token file", []string{"--repo", "https://github.com/o/fleet.git", "--forge-token-file", empty}, "--forge-token-file " + empty + " is empty"},
		{"an unset variable", []string{"--repo", "https://github.com/o/fleet.git", "--forge-token-env", "GITFLEET_TEST_UNSET_TOKEN"}, "--forge-token-env: $GITFLEET_TEST_UNSET_TOKEN is empty or unset"},
		{"a local repository", []string{"--repo", t.TempDir(), "--forge", "gitea", "--forge-token-file", token}, "--forge: "},
		{"cluster statuses without a forge", []string{"--repo", t.TempDir(), "--forge-cluster-statuses"}, "--forge-cluster-statuses needs a forge"},
		{"a retry cap under a second", []string{"--repo", "https://github.com/o/fleet.git", "--forge-token-file", token, "--forge-retry-max", "10ms"}, "--forge-retry-max 10ms: want at least 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"serve", "--metrics-addr", "", "--cache-dir", t.TempDir()}, tc.args...)
			_, errOut, code := gitfleet(t, args...)
			if code == 0 || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "s3cr3t") {
				t.Errorf("exit %d, stderr %q; want an error saying %q", code, errOut, tc.want)
			}
		})
	}
}
