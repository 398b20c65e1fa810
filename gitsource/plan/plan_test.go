package plan

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitfleet/gitfleet/gitsource/simulate"
	"github.com/gitfleet/gitfleet/internal/testing/gittest"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/status"
)

// quickstart is a work tree holding examples/quickstart in one commit on
// main, with no status/ recorded (serve never ran).
func quickstart(t *testing.T) string {
	t.Helper()
	gittest.Require(t, "git")
	dir := t.TempDir()
	entries, err := os.ReadDir("../../examples/quickstart")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("../../examples/quickstart", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		write(t, dir, e.Name(), string(data))
	}
	gittest.Must(t, dir, "init", "-q")
	commit(t, dir, "quickstart")
	return dir
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func replace(t *testing.T, dir, name, old, new string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s has no %q", name, old)
	}
	write(t, dir, name, strings.Replace(string(data), old, new, 1))
}

func commit(t *testing.T, dir, msg string) {
	t.Helper()
	gittest.Must(t, dir, "add", "-A")
	gittest.Must(t, dir, "commit", "-q", "-m", msg)
}

// A base that moved on since the change branched off is merged as the
// forge would merge it (git merge-tree): the plan has both sides — the
// change's new snapshot and the run added on the base meanwhile. Without a
// status/ tree it starts from an empty hub and says so.
func TestComputeMergesWithABaseThatMovedOn(t *testing.T) {
	repo := quickstart(t)
	gittest.Must(t, repo, "checkout", "-q", "-b", "change")
	replace(t, repo, "workload.yaml", "key: value1", "key: value2")
	commit(t, repo, "value2")
	gittest.Must(t, repo, "checkout", "-q", "main")
	write(t, repo, "run-2.yaml", "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterStagedUpdateRun\n"+
		"metadata: {name: example-run-2}\nspec: {placementName: example-placement, stagedRolloutStrategyName: example-strategy, state: Initialize}\n")
	commit(t, repo, "example-run-2, initialize only")
	gittest.Must(t, repo, "checkout", "-q", "change")

	p, err := Compute(context.Background(), Options{Repo: repo, Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != "" {
		t.Errorf("status %q, want none: main has no status/", p.Status)
	}
	var last *Snapshot
	for i := range p.Snapshots {
		if p.Snapshots[i].Commit == p.Head {
			last = &p.Snapshots[i]
		}
	}
	if last == nil || last.Index != "1" || last.Previous != "0" || len(last.Changes) != 1 ||
		last.Changes[0] != (ResourceChange{Change: "Changed", Resource: "ConfigMap test-namespace/test-cm"}) {
		t.Errorf("snapshots %+v, want index 1 from the change, the config map changed since 0", p.Snapshots)
	}
	runs := map[string]Run{}
	for _, r := range p.Runs {
		runs[r.Name] = r
	}
	if r, ok := runs["example-run-2"]; !ok || r.After != "Initialized" || len(r.Stages) != 2 {
		t.Errorf("example-run-2 from the base: %+v, want Initialized with its two stages planned", r)
	}
	if r := runs["example-run"]; r.Snapshot != "1" || r.After != "Succeeded" {
		t.Errorf("example-run: %+v, want snapshot 1 rolled out", r)
	}
	if p.Failed() {
		t.Errorf("the plan failed: %+v %+v", p.Refused, p.ManifestErrors)
	}
}

// A change that conflicts with the base cannot be previewed: the error
// names the file, and nothing is guessed.
func TestComputeRefusesAConflictingMerge(t *testing.T) {
	repo := quickstart(t)
	gittest.Must(t, repo, "checkout", "-q", "-b", "change")
	replace(t, repo, "workload.yaml", "key: value1", "key: value2")
	commit(t, repo, "value2")
	gittest.Must(t, repo, "checkout", "-q", "main")
	replace(t, repo, "workload.yaml", "key: value1", "key: other")
	commit(t, repo, "other")

	_, err := Compute(context.Background(), Options{Repo: repo, Base: "main", Head: "change"})
	if err == nil || !strings.Contains(err.Error(), "conflicts in workload.yaml") || !strings.Contains(err.Error(), "rebase") {
		t.Fatalf("err %v, want a conflict in workload.yaml and the advice to rebase", err)
	}
}

// Revisions that name nothing are reported as such.
func TestComputeNamesAnUnknownRevision(t *testing.T) {
	repo := quickstart(t)
	_, err := Compute(context.Background(), Options{Repo: repo, Base: "origin/nope"})
	if err == nil || !strings.Contains(err.Error(), `"origin/nope" does not name a commit`) {
		t.Fatalf("err %v, want origin/nope named", err)
	}
}

// Which changed paths make a pull request worth a preview: serve's rule
// for rendering a commit.
func TestTouchesHubContent(t *testing.T) {
	for _, tc := range []struct {
		name       string
		paths      []string
		dir        string
		kustomized bool
		want       bool
	}{
		{"a manifest", []string{"run.yaml"}, ".", false, true},
		{"a README in a plain layout", []string{"README.md"}, ".", false, false},
		{"any file of a kustomize build", []string{"config/app.properties"}, ".", true, true},
		{"only status and approvals", []string{"status/runs/a.yaml", "approvals/a.yaml"}, ".", true, false},
		{"a manifest outside --path", []string{"other/run.yaml"}, "fleet", false, false},
		{"a manifest inside --path", []string{"fleet/run.yml"}, "fleet", false, true},
		{"adding a kustomization", []string{"Kustomization"}, ".", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := touchesHubContent(tc.paths, tc.dir, func() bool { return tc.kustomized }); got != tc.want {
				t.Errorf("touchesHubContent(%q, %q) = %v, want %v", tc.paths, tc.dir, got, tc.want)
			}
		})
	}
}

// Text from Git (a commit subject, a message quoting a manifest) stays text
// in the comment: no table cell breaks, no HTML, no emphasis.
func TestCommentEscapesTextFromGit(t *testing.T) {
	p := &Plan{Base: strings.Repeat("b", 40), Head: strings.Repeat("h", 40), HeadSubject: "a|b <script>x</script> *bold* `code`",
		ManifestErrors: []ManifestError{{File: "run.yaml", Line: 3, Message: "spec.state: Unsupported value: \"Go|Now\""}}}
	got := Comment(p)
	for _, want := range []string{`a\|b &lt;script&gt;x&lt;/script&gt; \*bold\* 'code'`, "`run.yaml:3`: spec.state: Unsupported value: \"Go\\|Now\"", ":x:"} {
		if !strings.Contains(got, want) {
			t.Errorf("comment lacks %q:\n%s", want, got)
		}
	}
}

// A deletion is one line that names the object, the clusters in rollout
// order and what deletes it: a run, a run's deletion stage, or no run of
// the change.
func TestDeletionSaysWhatWhereAndWhen(t *testing.T) {
	for _, tc := range []struct {
		d    Deletion
		want string
	}{
		{Deletion{Placement: "example-placement", Resource: "ConfigMap test-namespace/test-cm", Snapshot: "2", Run: "example-run", Clusters: []string{"member2", "member3", "member1"}},
			"Deletes: ConfigMap test-namespace/test-cm from 3 clusters (member2, member3, member1) when run example-run reaches them"},
		{Deletion{Placement: "team-a/web", Resource: "Service team-a/web", Snapshot: "4", Run: "team-a/rollout", Clusters: []string{"member1"}},
			"Deletes: Service team-a/web from 1 cluster (member1) when run team-a/rollout reaches it"},
		{Deletion{Placement: "example-placement", Resource: "Namespace test-namespace", Snapshot: "2", Clusters: []string{"member1", "member2"}},
			"Deletes: Namespace test-namespace from 2 clusters (member1, member2) when a run of placement example-placement rolls out resource snapshot 2 (no run in this change does)"},
		{Deletion{Placement: "example-placement", Run: "example-run", Clusters: []string{"member4"}},
			"Deletes: every resource of placement example-placement from 1 cluster (member4) when run example-run reaches its deletion stage (the clusters leave the placement)"},
	} {
		if got := tc.d.String(); got != tc.want {
			t.Errorf("%+v:\n got %s\nwant %s", tc.d, got, tc.want)
		}
	}
}

// Deletions lead the comment and the text, before errors and snapshots;
// a plan without any says so.
func TestDeletionsComeFirst(t *testing.T) {
	p := &Plan{Base: strings.Repeat("b", 40), Head: strings.Repeat("h", 40), HeadSubject: "drop it",
		Deletions:      []Deletion{{Placement: "p", Resource: "ConfigMap a/b", Snapshot: "1", Run: "r", Clusters: []string{"m1"}}},
		ManifestErrors: []ManifestError{{File: "run.yaml", Line: 3, Message: "broken"}},
		Snapshots:      []Snapshot{{Placement: "p", Index: "1", Changes: []ResourceChange{{Change: "Removed", Resource: "ConfigMap a/b"}}}}}
	var text strings.Builder
	if err := WriteText(&text, p); err != nil {
		t.Fatal(err)
	}
	line := "Deletes: ConfigMap a/b from 1 cluster (m1) when run r reaches it"
	for name, out := range map[string]string{"comment": Comment(p), "text": text.String()} {
		i, j, k := strings.Index(out, line), strings.Index(out, "run.yaml:3"), strings.Index(out, "removed ConfigMap a/b")
		if i < 0 || j < i || k < i {
			t.Errorf("%s: the deletion is not first (at %d, error at %d, snapshot at %d):\n%s", name, i, j, k, out)
		}
	}
	p.Deletions = nil
	text.Reset()
	if err := WriteText(&text, p); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "Deletions: none") || !strings.Contains(Comment(p), "#### Deletions\n\nNone") {
		t.Errorf("a plan without deletions does not say so:\n%s\n%s", text.String(), Comment(p))
	}
}

// A plan of no change (HEAD is the base) while a run is in its soak, the
// base's status recorded by a simulation stopped mid-soak: the canary
// approval the run reaches is a person's, not assumed, and the run ends
// Waiting. A change that adds a run still has its own gates assumed.
func TestComputeAssumesOnlyTheApprovalsTheChangeOpens(t *testing.T) {
	repo := quickstart(t)
	res, err := simulate.Run(context.Background(), simulate.Options{Repo: repo, Until: 30 * time.Second, Store: embedded.NewMemoryStore()})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := res.Hub.Store().Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		p, err := status.PathFor(o)
		if err != nil {
			t.Fatal(err)
		}
		data, err := status.Encode(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(repo, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, repo, p, string(data))
	}
	commit(t, repo, "status: example-run stage staging waiting")
	for _, tc := range []struct {
		name   string
		change func()
		want   map[string]string // run → phase after the plan
	}{
		{"no change", func() {}, map[string]string{"example-run": "Waiting"}},
		{"a new run", func() {
			gittest.Must(t, repo, "checkout", "-q", "-b", "change")
			replace(t, repo, "workload.yaml", "key: value1", "key: value2")
			write(t, repo, "run-2.yaml", "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterStagedUpdateRun\n"+
				"metadata: {name: example-run-2}\nspec: {placementName: example-placement, stagedRolloutStrategyName: example-strategy, state: Run}\n")
			commit(t, repo, "example-run-2")
		}, map[string]string{"example-run": "Waiting", "example-run-2": "Succeeded"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.change()
			p, err := Compute(context.Background(), Options{Repo: repo, Base: "main"})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, r := range p.Runs {
				got[r.Name] = r.After
			}
			for name, want := range tc.want {
				if got[name] != want {
					t.Errorf("%s ends %s, want %s (runs %+v)", name, got[name], want, p.Runs)
				}
			}
		})
	}
}
