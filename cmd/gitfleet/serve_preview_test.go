package main

import (
	"path/filepath"
	"strings"
	"testing"

	"code.gitea.io/sdk/gitea"

	"github.com/gitfleet/gitfleet/gitsource/forge"
	"github.com/gitfleet/gitfleet/internal/testing/await"
)

// Through `gitfleet serve` against a real Gitea: a pull request that adds
// a run file gets the rollout preview as a comment, and a new push to it
// updates that comment — one comment, never a second.
func TestServePostsTheRolloutPreviewOnPullRequests(t *testing.T) {
	g := newGiteaFleet(t)
	g.serve(t)
	clone := filepath.Join(t.TempDir(), "fleet")
	gitCmd(t, filepath.Dir(clone), "clone", "-q", g.srv.PushURL(g.owner, g.owner.Name, "fleet"), clone)
	gitCmd(t, clone, "checkout", "-q", "-b", "add-run")
	writeFile(t, clone, "run-2.yaml", strings.Replace(readFile(t, clone, "run.yaml"), "name: example-run\n", "name: example-run-2\n", 1))
	commitAll(t, clone, "example-run-2")
	gitCmd(t, clone, "push", "-q", "origin", "add-run")
	pr, _, err := g.client().CreatePullRequest(g.owner.Name, "fleet", gitea.CreatePullRequestOption{Head: "add-run", Base: "main", Title: "Add example-run-2"})
	if err != nil {
		t.Fatal(err)
	}
	previews := func() []*gitea.Comment {
		cs, _, err := g.client().ListIssueComments(g.owner.Name, "fleet", pr.Index, gitea.ListIssueCommentOptions{})
		if err != nil {
			return nil
		}
		var out []*gitea.Comment
		for _, c := range cs {
			if strings.Contains(c.Body, forge.PlanMarker) {
				out = append(out, c)
			}
		}
		return out
	}
	var first *gitea.Comment
	await.Until(t, "the preview comment on the pull request", func() bool {
		got := previews()
		if len(got) == 1 && strings.Contains(got[0].Body, "**example-run-2** starts") {
			first = got[0]
			return true
		}
		return false
	})
	if first.Poster == nil || first.Poster.UserName != g.bot.Name {
		t.Errorf("the preview is by %+v, want gitfleet's account %s", first.Poster, g.bot.Name)
	}

	edit(t, clone, "workload.yaml", "key: value1", "key: value2")
	commitAll(t, clone, "value2")
	gitCmd(t, clone, "push", "-q", "origin", "add-run")
	await.Until(t, "the preview to show the new push", func() bool {
		got := previews()
		return len(got) == 1 && got[0].ID == first.ID && strings.Contains(got[0].Body, "changed ConfigMap test-namespace/test-cm")
	})
	if got := previews(); len(got) != 1 {
		t.Errorf("%d preview comments, want one", len(got))
	}
}
