package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gitfleet/gitfleet/internal/testing/await"
)

// start runs the CLI until the test ends.
func start(t *testing.T, args ...string) {
	t.Helper()
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
			t.Errorf("gitfleet %s: %v", strings.Join(args, " "), err)
		}
	})
}

// page is the body of a page once it answers 200 and contains want.
func page(t *testing.T, url, want string) string {
	t.Helper()
	var body string
	await.Until(t, url+" showing "+want, func() bool {
		res, err := http.Get(url)
		if err != nil {
			return false
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		body = string(b)
		return err == nil && res.StatusCode == http.StatusOK && strings.Contains(body, want)
	})
	return body
}

// serve --ui-addr shows what serve pushed: the quickstart's run waiting
// on the canary's approval, with the command that approves it.
func TestServeUIShowsTheRunItPushes(t *testing.T) {
	remote := quickstartRemote(t, "0s", "1s")
	addr := freeAddr(t)
	start(t, serveArgs(remote, t, "--ui-addr", addr)...)
	body := page(t, "http://"+addr+"/runs/example-run", "waiting for approval")
	for _, want := range []string{"stage canary", "example-run-after-canary", "gitfleet approve example-run-after-canary --commit &amp;&amp; git push"} {
		if !strings.Contains(body, want) {
			t.Errorf("the run page lacks %q:\n%s", want, body)
		}
	}
	if !strings.Contains(body, "status: example-run stage canary waiting for approval") {
		t.Errorf("the timeline does not list serve's status commits:\n%s", body)
	}
	fleetPage := page(t, "http://"+addr+"/", `data-run="example-run"`)
	if !strings.Contains(fleetPage, `<a href="/snapshots/example-placement/0">0</a>`) {
		t.Errorf("the fleet page does not link the placement's latest snapshot:\n%s", fleetPage)
	}
}

// With --forge the run page links the approval's pull request and each
// status commit's page on the forge.
func TestServeUILinksTheApprovalPullRequestAndTheForgesCommits(t *testing.T) {
	g := newGiteaFleet(t)
	addr := freeAddr(t)
	g.serve(t, "--ui-addr", addr)
	pr := g.approvalPR(t)
	body := page(t, "http://"+addr+"/runs/example-run", `<a class="pr" href="`+pr.HTMLURL+`"`)
	commits := strings.TrimSuffix(g.remote, ".git") + "/commit/"
	if !strings.Contains(body, `<a href="`+commits) {
		t.Errorf("the timeline does not link to %s…:\n%s", commits, body)
	}
}

// gitfleet ui serves a clone's status tree and tells open pages when the
// clone moves.
func TestUIServesACloneAndFollowsItsCommits(t *testing.T) {
	repo := demoRepo(t)
	addr := freeAddr(t)
	start(t, "ui", "--repo", repo, "--addr", addr)
	page(t, "http://"+addr+"/runs/example-run", "stage canary")

	res, err := http.Get("http://" + addr + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	events := bufio.NewReader(res.Body)
	if line, err := events.ReadString('\n'); err != nil || !strings.HasPrefix(line, "retry:") {
		t.Fatalf("the event stream starts with %q (%v)", line, err)
	}
	gitCmd(t, repo, "commit", "-q", "--allow-empty", "-m", "someone's commit")
	for {
		line, err := events.ReadString('\n')
		if err != nil {
			t.Fatalf("the event stream ended before a change: %v", err)
		}
		if line == "event: change\n" {
			break
		}
	}
}

func TestUIListensOnLoopbackByDefault(t *testing.T) {
	if got := newUICommand().Flags().Lookup("addr").DefValue; got != "127.0.0.1:8081" {
		t.Errorf("ui --addr defaults to %q, want 127.0.0.1:8081", got)
	}
	if got := newServeCommand().Flags().Lookup("ui-addr").DefValue; got != "" {
		t.Errorf("serve --ui-addr defaults to %q, want off", got)
	}
}
