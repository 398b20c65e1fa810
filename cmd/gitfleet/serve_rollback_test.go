package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"code.gitea.io/sdk/gitea"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/status"
)

// start runs `gitfleet serve` against the Gitea remote until stop is
// called (or the test ends).
func (g *giteaFleet) start(t *testing.T, extra ...string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	root := newRootCommand()
	root.SetArgs(g.serveArgs(t, extra...))
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	go func() { done <- root.ExecuteContext(ctx) }()
	var stopped bool
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// pullRequests are the repository's pull requests (open and closed) from
// the branch head.
func (g *giteaFleet) pullRequests(t *testing.T, head string) []*gitea.PullRequest {
	t.Helper()
	prs, _, err := g.client().ListRepoPullRequests(g.owner.Name, "fleet", gitea.ListPullRequestsOptions{State: gitea.StateAll})
	if err != nil {
		t.Fatal(err)
	}
	var out []*gitea.PullRequest
	for _, p := range prs {
		if p.Head != nil && p.Head.Ref == head {
			out = append(out, p)
		}
	}
	return out
}

// awaitPullRequest waits for the pull request from head and returns it.
func (g *giteaFleet) awaitPullRequest(t *testing.T, head string) *gitea.PullRequest {
	t.Helper()
	var pr *gitea.PullRequest
	await.Until(t, "the pull request from "+head, func() bool {
		prs, _, err := g.client().ListRepoPullRequests(g.owner.Name, "fleet", gitea.ListPullRequestsOptions{State: gitea.StateAll})
		if err != nil {
			return false
		}
		for _, p := range prs {
			if p.Head != nil && p.Head.Ref == head {
				pr = p
				return true
			}
		}
		return false
	})
	return pr
}

// merge merges the pull request as the reviewer, once Gitea finds it
// mergeable.
func (g *giteaFleet) merge(t *testing.T, pr *gitea.PullRequest) {
	t.Helper()
	await.Until(t, "Gitea to find the pull request mergeable", func() bool {
		p, _, err := g.client().GetPullRequest(g.owner.Name, "fleet", pr.Index)
		return err == nil && p.Mergeable
	})
	if code, msg := g.srv.Merge(g.reviewer, g.owner.Name, "fleet", int(pr.Index), pr.Head.Sha); code != http.StatusOK {
		t.Fatalf("merge %s: %d %s", pr.Head.Ref, code, msg)
	}
}

// run is the run name as the status tree on Gitea's main records it (nil
// until it does).
func (g *giteaFleet) run(name string) *fleet.UpdateRun {
	p := "status/runs/" + name + ".yaml"
	data, _, err := g.client().GetFile(g.owner.Name, "fleet", "main", p)
	if err != nil {
		return nil
	}
	obj, err := status.DecodeFile(p, data)
	if err != nil {
		return nil
	}
	return obj.(*fleet.UpdateRun)
}

func (g *giteaFleet) awaitPhase(t *testing.T, name, phase string) *fleet.UpdateRun {
	t.Helper()
	var r *fleet.UpdateRun
	await.Until(t, name+" "+phase, func() bool {
		r = g.run(name)
		return r != nil && r.Phase() == phase
	})
	return r
}

// End to end through serve against a real Gitea: example-run rolls
// snapshot 0 out; example-run-2 rolls snapshot 1 to staging and fails (its
// placement's applyStrategy changes under it). serve opens one pull request
// that rolls it back to 0, with the plan in its body; a restarted serve
// finds it again rather than opening another; merging it starts
// example-run-2-rollback, which goes through the strategy's approval like
// any run and succeeds.
func TestServeOpensARollbackPullRequestForAFailedRunOnGitea(t *testing.T) {
	g := newGiteaFleet(t)
	stop := g.start(t)
	g.merge(t, g.approvalPR(t))
	g.awaitPhase(t, forgeRun, fleet.PhaseSucceeded)

	g.push(t, func(clone string) {
		edit(t, clone, "workload.yaml", "key: value1", "key: value2")
		writeFile(t, clone, "run-2.yaml", strings.Replace(readFile(t, clone, "run.yaml"), "name: example-run\n", "name: example-run-2\n", 1))
		commitAll(t, clone, "value2, rolled out by example-run-2")
	})
	g.awaitPullRequest(t, "gitfleet/approve/example-run-2-before-canary") // staging is done: member2 has snapshot 1
	g.push(t, func(clone string) {
		edit(t, clone, "placement.yaml", "    type: External\n", "    type: External\n    applyStrategy:\n      whenToApply: IfNotDrifted\n")
		commitAll(t, clone, "apply only where nothing drifted")
	})
	g.awaitPhase(t, "example-run-2", fleet.PhaseFailed)

	const head = "gitfleet/rollback/example-run-2"
	pr := g.awaitPullRequest(t, head)
	if want := "Roll back example-run-2: placement example-placement to resource snapshot 0"; pr.Title != want {
		t.Errorf("title %q, want %q", pr.Title, want)
	}
	for _, want := range []string{
		"Run `example-run-2` rolled out resource snapshot 1 of placement `example-placement`, and it failed: ",
		"Merging this pull request adds `rollbacks/example-run-2.yaml`: run `example-run-2-rollback` rolls the placement back to resource snapshot **0**, " +
			"the last that succeeded on member2 (run `example-run`)",
		"### gitfleet plan",
		"example-run-2-rollback",
	} {
		if !strings.Contains(pr.Body, want) {
			t.Errorf("body lacks %q:\n%s", want, pr.Body)
		}
	}
	await.Until(t, "the failed run to name its rollback pull request", func() bool {
		r := g.run("example-run-2")
		return r != nil && r.Annotations[fleet.RollbackAnnotation] == "pull request "+pr.HTMLURL+" rolls back to resource snapshot 0"
	})

	// A restart finds the pull request again: serve --until-idle makes its
	// forge calls before it exits.
	stop()
	if out, errOut, code := gitfleet(t, g.serveArgs(t, "--until-idle")...); code != 0 {
		t.Fatalf("serve exited %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if prs := g.pullRequests(t, head); len(prs) != 1 {
		for _, p := range prs {
			t.Logf("pull request %d: %s, created %v, head %s", p.Index, p.State, p.Created, p.Head.Sha)
		}
		t.Fatalf("%d pull requests from %s after a restart, want 1", len(prs), head)
	}

	g.start(t)
	g.merge(t, pr)
	g.merge(t, g.awaitPullRequest(t, "gitfleet/approve/example-run-2-rollback-before-canary"))
	rb := g.awaitPhase(t, "example-run-2-rollback", fleet.PhaseSucceeded)
	if rb.Status.ResourceSnapshotIndexUsed != "0" || rb.Annotations[fleet.RollbackOfAnnotation] != "example-run-2" {
		t.Errorf("rollback run: index %s, annotations %v", rb.Status.ResourceSnapshotIndexUsed, rb.Annotations)
	}
	if prs := g.pullRequests(t, head); len(prs) != 1 {
		t.Errorf("%d pull requests from %s, want 1", len(prs), head)
	}
	if data, _, err := g.client().GetFile(g.owner.Name, "fleet", "main", "rollbacks/example-run-2.yaml"); err != nil ||
		!strings.Contains(string(data), `resourceSnapshotIndex: "0"`) {
		t.Errorf("rollbacks/example-run-2.yaml on main: %v\n%s", err, data)
	}
}

// A run that fails with nothing before it to roll back to gets no pull
// request: the run's gitfleet.io/rollback annotation says why.
func TestServeOpensNoRollbackPullRequestWithNothingToRollBackTo(t *testing.T) {
	g := newGiteaFleet(t)
	g.start(t)
	g.approvalPR(t) // staging is done: member2 has snapshot 0, the first
	g.push(t, func(clone string) {
		edit(t, clone, "placement.yaml", "    type: External\n", "    type: External\n    applyStrategy:\n      whenToApply: IfNotDrifted\n")
		commitAll(t, clone, "apply only where nothing drifted")
	})
	g.awaitPhase(t, forgeRun, fleet.PhaseFailed)
	want := "none: no run of placement `example-placement` succeeded with another resource snapshot than `0` " +
		"(not a rejected one, still recorded) on every cluster run `example-run` changed (member2)"
	await.Until(t, "the failed run to say why it gets no rollback", func() bool {
		r := g.run(forgeRun)
		return r != nil && r.Annotations[fleet.RollbackAnnotation] == want
	})
	if prs := g.pullRequests(t, "gitfleet/rollback/"+forgeRun); len(prs) != 0 {
		t.Errorf("%d rollback pull requests, want none", len(prs))
	}
}
