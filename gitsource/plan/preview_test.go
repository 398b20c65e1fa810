package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"code.gitea.io/sdk/gitea"

	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/gitsource/forge"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/internal/testing/giteatest"
	"github.com/gitfleet/gitfleet/internal/testing/gittest"
)

// Against a real Gitea: a pull request adding a run gets one preview
// comment; a new push to it edits that comment (never a second one); a
// pull request that changes no hub content gets none; an approval pull
// request gets none either.
func TestPreviewCommentOnPullRequests(t *testing.T) {
	ctx := await.Context(t)
	srv := giteatest.Start(t)
	owner, bot := srv.CreateUser("owner", false), srv.CreateUser("gitfleet", false)
	remote := srv.CreateRepo(owner, "fleet")
	writeAccess := gitea.AccessModeWrite
	if _, err := srv.Client(owner).AddCollaborator(owner.Name, "fleet", bot.Name, gitea.AddCollaboratorOption{Permission: &writeAccess}); err != nil {
		t.Fatal(err)
	}
	work := quickstart(t)
	push := srv.PushURL(owner, owner.Name, "fleet")
	gittest.Must(t, work, "push", "-q", push, "main")
	branchWith := func(name, file, content string) {
		t.Helper()
		gittest.Must(t, work, "checkout", "-q", "-B", name, "main")
		if err := os.MkdirAll(filepath.Dir(filepath.Join(work, file)), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, work, file, content)
		commit(t, work, "change "+file)
		gittest.Must(t, work, "push", "-q", "-f", push, name)
	}
	branchWith("add-run", "run-2.yaml", "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterStagedUpdateRun\n"+
		"metadata: {name: example-run-2}\nspec: {placementName: example-placement, stagedRolloutStrategyName: example-strategy, state: Run}\n")
	branchWith("docs", "NOTES.md", "not hub content\n")
	branchWith(gitsource.ApproveBranchPrefix+"example-run-after-canary", "approvals/example-run-after-canary.yaml", "kind: nothing\n")

	tokenFile := filepath.Join(t.TempDir(), "token")
	write(t, filepath.Dir(tokenFile), "token", bot.Token)
	f, err := forge.New(forge.Config{Kind: forge.Gitea, Remote: remote, TokenFile: tokenFile})
	if err != nil {
		t.Fatal(err)
	}
	prs := map[string]forge.PR{}
	for _, b := range []string{"add-run", "docs", gitsource.ApproveBranchPrefix + "example-run-after-canary"} {
		pr, err := f.CreatePR(ctx, b, "main", "change "+b, "")
		if err != nil {
			t.Fatal(err)
		}
		prs[b] = pr
	}

	src, err := gitsource.Open(ctx, gitsource.Config{URL: remote, AllowInsecureHTTP: true, Branch: "main", CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	head, err := src.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := &Previewer{Forge: f, Source: src, Path: "."}
	previews := func(pr forge.PR) []forge.Comment {
		t.Helper()
		cs, err := f.Comments(ctx, pr.Number)
		if err != nil {
			t.Fatal(err)
		}
		var out []forge.Comment
		for _, c := range cs {
			if strings.Contains(c.Body, forge.PlanMarker) {
				out = append(out, c)
			}
		}
		return out
	}

	if err := p.Sync(ctx, head); err != nil {
		t.Fatal(err)
	}
	first := previews(prs["add-run"])
	if len(first) != 1 || !strings.Contains(first[0].Body, "**example-run-2** starts") || first[0].Author != bot.Name {
		t.Fatalf("add-run: %d preview(s) %+v, want one by %s saying example-run-2 starts", len(first), first, bot.Name)
	}
	for _, b := range []string{"docs", gitsource.ApproveBranchPrefix + "example-run-after-canary"} {
		if got := previews(prs[b]); len(got) != 0 {
			t.Errorf("%s: %d preview(s), want none", b, len(got))
		}
	}

	// A new push: the same comment now shows the new snapshot too.
	gittest.Must(t, work, "checkout", "-q", "add-run")
	replace(t, work, "workload.yaml", "key: value1", "key: value2")
	commit(t, work, "value2")
	gittest.Must(t, work, "push", "-q", push, "add-run")
	if err := p.Sync(ctx, head); err != nil {
		t.Fatal(err)
	}
	second := previews(prs["add-run"])
	if len(second) != 1 || second[0].ID != first[0].ID || !strings.Contains(second[0].Body, "changed ConfigMap test-namespace/test-cm") {
		t.Fatalf("after a push: %+v, want comment %d edited to show the config map change", second, first[0].ID)
	}
}
