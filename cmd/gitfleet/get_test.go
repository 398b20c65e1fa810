package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource/simulate"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/internal/testing/golden"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/render/renderproc"
	"github.com/gitfleet/gitfleet/status"
)

// testNow is the pinned clock: 30 minutes into the simulation, which
// starts at 2026-01-01T00:00:00Z, so AGE columns are stable.
var testNow = time.Date(2026, 1, 1, 0, 30, 0, 0, time.UTC)

func TestMain(m *testing.M) {
	renderproc.Main() // validate, simulate and plan render in a child process of this binary
	if os.Getenv(asGitfleet) != "" {
		main() // the command itself, signals and exit code included
		os.Exit(0)
	}
	flag.Parse()
	now = func() time.Time { return testNow }
	os.Exit(m.Run())
}

// gitEnv is a fixed identity and date, so commit hashes (and the golden
// files that show them) are reproducible, and no user configuration leaks in.
var gitEnv = []string{"GIT_AUTHOR_NAME=dev", "GIT_AUTHOR_EMAIL=dev@example.com",
	"GIT_COMMITTER_NAME=dev", "GIT_COMMITTER_EMAIL=dev@example.com",
	"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z",
	"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"}

// gitCmd runs git in dir as the fixed test identity.
func gitCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gitEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// copyTree copies the regular files below src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// quickstartRepo is a Git repository holding examples/quickstart in one
// commit, as a person would push it.
func quickstartRepo(t *testing.T, extra ...string) string {
	t.Helper()
	dir := t.TempDir()
	copyTree(t, "../../examples/quickstart", dir)
	for _, e := range extra {
		copyTree(t, e, dir)
	}
	gitCmd(t, dir, "init", "-q", "-b", "main")
	gitCmd(t, dir, "add", ".")
	gitCmd(t, dir, "commit", "-q", "-m", "quickstart")
	return dir
}

// demoRepo is the seed demo after gitfleet has run it: the quickstart
// repository plus, in a second commit, the status tree and approval requests
// of the real engine's simulation, which stops waiting on the canary
// approval. Every hub object is written where the daemon writes it. extra
// folders are copied into the first commit.
func demoRepo(t *testing.T, extra ...string) string {
	t.Helper()
	dir := quickstartRepo(t, extra...)
	ctx := context.Background()
	res, err := simulate.Run(ctx, simulate.Options{Repo: dir, Store: embedded.NewMemoryStore()})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := res.Hub.Store().Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ch := status.Changeset{Writes: map[string][]byte{}}
	for _, o := range objs {
		p, err := status.PathFor(o)
		if err != nil {
			t.Fatal(err)
		}
		if ch.Writes[p], err = status.Encode(o); err != nil {
			t.Fatal(err)
		}
	}
	if err := status.Dir(dir).Commit(ctx, ch, "", false); err != nil {
		t.Fatal(err)
	}
	gitCmd(t, dir, "add", ".")
	gitCmd(t, dir, "commit", "-q", "-m", "status: example-run stage canary waiting for approval")
	return dir
}

// statusLine is get's note on stderr of which commit the status is from.
var statusLine = regexp.MustCompile(`(?m)^status from [0-9a-f]{7,} \(.*\)\n`)

// gitfleet runs the CLI as main does and returns what it printed and its
// exit code. get's status line is left out of stderr (gitfleetRaw keeps
// it), so tests can insist on an otherwise empty stderr.
func gitfleet(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	stdout, stderr, code = gitfleetRaw(t, args...)
	return stdout, statusLine.ReplaceAllString(stderr, ""), code
}

// gitfleetRaw is gitfleet with stderr as printed.
func gitfleetRaw(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRootCommand()
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errOut)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(&errOut, "Error:", err)
		code = exitCode(err)
	}
	return out.String(), errOut.String(), code
}

// The seed demo, listed as a KubeFleet user would with kubectl get: the
// golden files are the tables of the real engine's state.
func TestGetPrintsTheDemoLikeKubectl(t *testing.T) {
	repo := demoRepo(t)
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"get-runs.txt", []string{"get", "runs"}},
		{"get-runs-wide.txt", []string{"get", "runs", "-o", "wide"}},
		{"get-approvals.txt", []string{"get", "approvals"}},
		{"get-snapshots.txt", []string{"get", "snapshots"}},
		{"get-snapshots-labels.txt", []string{"get", "snapshots", "--show-labels", "-L", "kubernetes-fleet.io/parent-CRP"}},
		{"get-placements.txt", []string{"get", "placements"}},
		{"get-bindings.txt", []string{"get", "bindings"}},
		{"get-clusters.txt", []string{"get", "clusters"}},
		{"get-run-yaml.yaml", []string{"get", "csur", "example-run", "-o", "yaml"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			out, errOut, code := gitfleet(t, append(tc.args, "--repo", repo)...)
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			golden.Assert(t, tc.golden, []byte(out))
		})
	}
}

// The quickstart with examples/overrides: get lists the override snapshots
// the run froze, both kinds in one table or one kind by its KubeFleet name.
func TestGetOverrides(t *testing.T) {
	repo := demoRepo(t, "../../examples/overrides")
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"get-overrides.txt", []string{"get", "overrides"}},
		{"get-overrides-cluster.txt", []string{"get", "clusterresourceoverridesnapshots"}},
		{"get-overrides-yaml.yaml", []string{"get", "resourceoverridesnapshot", "config-per-env-0", "-n", "test-namespace", "-o", "yaml"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			out, errOut, code := gitfleet(t, append(tc.args, "--repo", repo)...)
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			golden.Assert(t, tc.golden, []byte(out))
		})
	}
}

// Every alias the brief and KubeFleet's short names promise reaches the
// same table; the scoped names narrow to their scope, as kubectl does.
func TestGetAcceptsKubeFleetNames(t *testing.T) {
	repo := demoRepo(t)
	want, _, _ := gitfleet(t, "get", "runs", "--repo", repo)
	for _, word := range []string{"run", "csur", "ClusterStagedUpdateRun", "clusterstagedupdateruns"} {
		if got, errOut, code := gitfleet(t, "get", word, "--repo", repo); got != want || code != 0 {
			t.Errorf("get %s: exit %d, stderr %q, output\n%s", word, code, errOut, got)
		}
	}
	for _, words := range [][]string{
		{"approvals", "careq", "clusterapprovalrequest"},
		{"snapshots", "crs"},
		{"placements", "crp"},
		{"bindings", "crb"},
		{"clusters", "membercluster", "memberclusters"},
	} {
		want, _, _ := gitfleet(t, "get", words[0], "--repo", repo)
		for _, w := range words[1:] {
			if got, _, _ := gitfleet(t, "get", w, "--repo", repo); got != want {
				t.Errorf("get %s differs from get %s:\n%s", w, words[0], got)
			}
		}
	}
	// The demo is cluster-scoped: namespaced names find nothing.
	for _, word := range []string{"sur", "areq", "rs", "rp", "rb", "approvalrequests"} {
		out, errOut, code := gitfleet(t, "get", word, "--repo", repo)
		if out != "" || errOut != "No resources found\n" || code != 0 {
			t.Errorf("get %s: exit %d, stdout %q, stderr %q; want only No resources found", word, code, out, errOut)
		}
	}
}

func TestGetFiltersByNameAndReportsMissingNames(t *testing.T) {
	repo := demoRepo(t)
	out, errOut, code := gitfleet(t, "get", "approvals", "example-run-after-canary", "--repo", repo)
	if code != 0 || !strings.Contains(out, "example-run-after-canary") || strings.Count(out, "\n") != 2 {
		t.Errorf("exit %d, stderr %q, output\n%s", code, errOut, out)
	}
	out, errOut, code = gitfleet(t, "get", "runs", "example-run", "nope", "--repo", repo)
	if code != 1 || !strings.Contains(out, "example-run") ||
		!strings.Contains(errOut, `clusterstagedupdaterun.placement.kubernetes-fleet.io "nope" not found in `+filepath.Join(repo, "status", "runs")) {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestGetSaysNoResourcesFound(t *testing.T) {
	for _, tc := range []struct {
		name, wantErr string
		args          []string
	}{
		{"without a status tree", "No resources found (%s has no status/ folder: is it a checkout of the branch gitfleet writes status to?)\n",
			[]string{"get", "runs"}},
		{"without approvals", "No resources found\n", []string{"get", "approvals"}},
		{"in a namespace", "No resources found in my-app-namespace namespace.\n", []string{"get", "approvals", "-n", "my-app-namespace"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := quickstartRepo(t)
			out, errOut, code := gitfleet(t, append(tc.args, "--repo", repo)...)
			want := tc.wantErr
			if strings.Contains(want, "%s") {
				want = fmt.Sprintf(want, repo)
			}
			if out != "" || errOut != want || code != 0 {
				t.Errorf("exit %d, stdout %q, stderr %q, want stderr %q", code, out, errOut, want)
			}
		})
	}
}

// Before gitfleet has recorded any cluster, get clusters shows the ones the
// manifests declare.
func TestGetClustersFallsBackToTheManifests(t *testing.T) {
	out, errOut, code := gitfleet(t, "get", "clusters", "-o", "wide", "--repo", quickstartRepo(t))
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	golden.Assert(t, "get-clusters-declared.txt", []byte(out))
}

// A status file that does not decode is named, the others still print,
// and the exit code says something was wrong.
func TestGetNamesTheFileItCannotRead(t *testing.T) {
	repo := demoRepo(t)
	bad := filepath.Join(repo, "status", "runs", "broken.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterStagedUpdateRun\nmetadata:\n  name: broken\nspec:\n  stat: Run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := gitfleet(t, "get", "runs", "--repo", repo)
	if code != 1 || !strings.Contains(out, "example-run") || !strings.Contains(errOut, "error: status/runs/broken.yaml: ") ||
		!strings.Contains(errOut, `unknown field "spec.stat"`) {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestGetRejectsUnknownResourcesAndOutputs(t *testing.T) {
	for _, args := range [][]string{
		{"get", "deployments"},
		{"get", "runs", "-o", "xml"},
		{"get", "runs", "-o", "jsonpath"},
		{"get", "runs", "-A", "-n", "x"},
	} {
		if _, errOut, code := gitfleet(t, args...); code != 1 || !strings.HasPrefix(errOut, "Error: ") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
}

func TestNaturalCompareOrdersNumbersByValue(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		less bool
	}{
		{"p/9.yaml", "p/10.yaml", true},
		{"p/10.yaml", "p/9.yaml", false},
		{"p/1-2.yaml", "p/1-10.yaml", true},
		{"a", "b", true},
		{"p/010.yaml", "p/9.yaml", false},
		{"p", "p/0.yaml", true},
	} {
		if got := naturalCompare(tc.a, tc.b) < 0; got != tc.less {
			t.Errorf("naturalCompare(%q, %q) < 0 = %v, want %v", tc.a, tc.b, got, tc.less)
		}
	}
}

// Shell completion offers the resource words, then the recorded names.
func TestGetCompletesResourcesAndNames(t *testing.T) {
	repo := demoRepo(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"get", ""}, "runs\napprovals\nsnapshots\noverrides\nplacements\nbindings\nevictions\nclusters\nstrategies\nsources\n:4\n"},
		{[]string{"get", "clusters", "--repo", repo, ""}, "member1\nmember2\nmember3\n:4\n"},
		{[]string{"get", "clusters", "member2", "--repo", repo, ""}, "member1\nmember3\n:4\n"},
		{[]string{"describe", "csur", "--repo", repo, ""}, "example-run\n:4\n"},
		{[]string{"describe", "sur", "--repo", repo, ""}, ":4\n"},
	} {
		out, _, _ := gitfleet(t, append([]string{"__complete"}, tc.args...)...)
		if !strings.HasPrefix(out, tc.want) {
			t.Errorf("%v: completion %q, want %q", tc.args, out, tc.want)
		}
	}
}

// From a subfolder of a clone, get finds the repository's top as git does;
// a binding is found by its cluster's name (its file's name) when that
// names one binding.
func TestGetFromASubfolderAndBindingsByCluster(t *testing.T) {
	repo := demoRepo(t)
	sub := filepath.Join(repo, "status", "runs")
	out, errOut, code := gitfleet(t, "get", "runs", "--repo", sub)
	if code != 0 || !strings.Contains(out, "example-run") {
		t.Errorf("get runs from %s: exit %d\n%s%s", sub, code, out, errOut)
	}
	out, errOut, code = gitfleet(t, "get", "bindings", "member1", "--repo", repo)
	if code != 0 || strings.Count(out, "\n") != 2 || !strings.Contains(out, "example-placement-member1-") {
		t.Errorf("get bindings member1: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := gitfleet(t, "get", "bindings", "member9", "--repo", repo); code == 0 || !strings.Contains(errOut, `"member9" not found`) {
		t.Errorf("get bindings member9: exit %d, %s", code, errOut)
	}
	if out, _, code := gitfleet(t, "get"); code != 0 || !strings.Contains(out, "SHORTNAMES") || !strings.Contains(out, "csur") {
		t.Errorf("get with no kind: exit %d\n%s", code, out)
	}
}

// A run too large for one file is stored split (status.SplitThreshold);
// get prints it whole, as KubeFleet would, and tables count its clusters.
func TestGetAssemblesASplitRun(t *testing.T) {
	repo := t.TempDir()
	run := &fleet.UpdateRun{
		ObjectMeta: metav1.ObjectMeta{Name: "big-run", Generation: 1},
		Spec:       fleet.UpdateRunSpec{PlacementName: "app", StagedUpdateStrategyName: "s", State: fleet.StateRun},
	}
	for s, n := range []int{3, 70} {
		st := fleet.StageUpdatingStatus{StageName: fmt.Sprintf("stage-%d", s)}
		for i := range n {
			st.Clusters = append(st.Clusters, fleet.ClusterUpdatingStatus{ClusterName: fmt.Sprintf("member-%d-%03d", s, i),
				Conditions: []metav1.Condition{{Type: "Started", Status: "True", Reason: "ClusterUpdatingStarted",
					Message: "Cluster update started", ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(testNow)}}})
		}
		run.Status.StagesStatus = append(run.Status.StagesStatus, st)
	}
	store := status.NewTreeStore(status.Dir(repo), status.Dir(repo), clock.NewFake(testNow))
	store.Put(embedded.ObjectRef{Kind: fleet.KindClusterStagedUpdateRun, Key: types.NamespacedName{Name: run.Name}}, run)
	if err := store.Flush(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(repo, "status", "runs", "big-run.clusters", "stage-1", "00060.yaml")); err != nil {
		t.Fatalf("the run was not stored split: %v", err)
	}
	want, err := status.Encode(run)
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := gitfleet(t, "get", "run", "big-run", "--repo", repo, "-o", "yaml")
	if code != 0 || out != string(want) {
		t.Errorf("exit %d, stderr %q, printed:\n%s\nwant:\n%s", code, errOut, out, want)
	}
}

// get and describe in a folder that is neither in a Git repository nor a
// copy of a checkout fail naming the folder, instead of finding nothing.
func TestGetOutsideARepositoryFailsNamingTheFolder(t *testing.T) {
	for _, args := range [][]string{{"get", "runs"}, {"get", "runs,approvals", "-o", "yaml"}, {"describe", "run", "example-run"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			dir := t.TempDir()
			out, errOut, code := gitfleet(t, append(args, "--repo", dir)...)
			if code == 0 || out != "" || !strings.Contains(errOut, dir+" is not in a Git repository") {
				t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
		})
	}
}
