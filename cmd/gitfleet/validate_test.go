package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitfleet/gitfleet/internal/testing/golden"
)

// One broken repository per error class (render's corpus): validate names
// the file of every problem, one line each, and exits 1. The golden file
// shows the exact lines a pull-request check prints.
func TestValidateReportsEveryBrokenRepository(t *testing.T) {
	var all strings.Builder
	for _, tc := range []struct {
		dir   string
		files []string // the files the lines name, in order
		args  []string
	}{
		{dir: "yaml-syntax", files: []string{"bad.yaml:7"}},
		{dir: "unknown-kind", files: []string{"work.yaml:2"}},
		{dir: "override-unknown-field", files: []string{"cro.yaml:15"}},
		{dir: "override-forbidden-path", files: []string{"ro.yaml:21"}},
		{dir: "override-selected-twice", files: []string{"a.yaml:7", "b.yaml:7"}},
		{dir: "missing-field", files: []string{"nokind.yaml:1", "noname.yaml:3", "run.yaml:1", "run.yaml:5"}},
		{dir: "invalid-strategy", files: []string{"strategy.yaml:11", "waittime.yaml:11"}},
		{dir: "invalid-state", files: []string{"run.yaml:1", "run.yaml:8"}},
		{dir: "bad-label-selector", files: []string{"placement.yaml:10"}},
		{dir: "duplicate-names", files: []string{"b/cm.yaml:2"}},
		{dir: "unknown-field", files: []string{"strategy.yaml:9"}},
		{dir: "approval-outside", files: []string{"approval.yaml:2"}},
		{dir: "old-version", files: []string{"run.yaml:1"}},
		{dir: "no-namespace", files: []string{"cm.yaml:3"}},
		{dir: "kustomize-syntax", files: []string{"kustomization.yaml:2"}},
		{dir: "remote-base", files: []string{"kustomization.yaml:3"}},
		{dir: "kustomize-escape", files: []string{"kustomization.yaml:3"}},
		{dir: "kustomize-root-only", files: []string{"app/kustomization.yaml:2"}, args: []string{"--path", "app"}},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			repo := filepath.Join("..", "..", "render", "testdata", "broken", tc.dir)
			out, errOut, code := gitfleet(t, append([]string{"validate", "--repo", repo}, tc.args...)...)
			if code != 1 || !strings.HasPrefix(errOut, "Error: ") {
				t.Errorf("exit %d, stderr %q; want 1 and an error", code, errOut)
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != len(tc.files) {
				t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(tc.files), out)
			}
			for i, f := range tc.files {
				if !strings.HasPrefix(lines[i], f+": ") {
					t.Errorf("line %d = %q, want it to start with %q", i+1, lines[i], f+": ")
				}
			}
			all.WriteString("== " + tc.dir + "\n" + out)
		})
	}
	if !t.Failed() {
		golden.Assert(t, "validate-broken.txt", []byte(all.String()))
	}
}

func TestValidatePassesGoodRepositories(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		repo       func(*testing.T) string
	}{
		{"the quickstart", "8 manifests OK\n", func(*testing.T) string { return "../../examples/quickstart" }},
		// The approval request counts; status files are checked, not counted.
		{"the demo after a rollout", "9 manifests OK\n", func(t *testing.T) string { return demoRepo(t) }},
		// Override objects count; their snapshots' status files are checked.
		{"the demo with overrides", "11 manifests OK\n", func(t *testing.T) string { return demoRepo(t, "../../examples/overrides") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := gitfleet(t, "validate", "--repo", tc.repo(t))
			if code != 0 || errOut != "" || out != tc.want {
				t.Errorf("exit %d, stdout %q, stderr %q, want %q", code, out, errOut, tc.want)
			}
		})
	}
}

// What gitfleet reads besides manifests is checked too, and changes the API
// server would refuse are caught against the spec gitfleet accepted.
func TestValidateChecksApprovalsStatusAndAdmission(t *testing.T) {
	for _, tc := range []struct {
		name  string
		file  string
		edit  func(string) string
		wants []string
	}{
		{"an approval file with a typo", "approvals/example-run-after-canary.yaml",
			func(s string) string { return strings.Replace(s, "targetStage:", "targetStag:", 1) },
			[]string{"approvals/example-run-after-canary.yaml:", `spec.targetStag`}},
		{"a status file that does not decode", "status/runs/example-run.yaml",
			func(s string) string { return strings.Replace(s, "state: Run", "stat: Run", 1) },
			[]string{`status/runs/example-run.yaml: unknown field "spec.stat"`}},
		{"an immutable field of an accepted run", "run.yaml",
			func(s string) string {
				return strings.Replace(s, "placementName: example-placement", "placementName: other", 1)
			},
			[]string{`run.yaml:9: ClusterStagedUpdateRun example-run: spec.placementName: Invalid value: "other": placementName is immutable (compared with the accepted spec in status/runs/example-run.yaml)`}},
		{"a forbidden state transition", "run.yaml",
			func(s string) string { return strings.Replace(s, "state: Run", "state: Initialize", 1) },
			[]string{`run.yaml:8: ClusterStagedUpdateRun example-run: spec: Invalid value: invalid state transition: cannot transition from Run to Initialize (compared with the accepted spec in status/runs/example-run.yaml)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := demoRepo(t)
			p := filepath.Join(repo, tc.file)
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			edited := tc.edit(string(data))
			if edited == string(data) {
				t.Fatal("the edit changed nothing")
			}
			if err := os.WriteFile(p, []byte(edited), 0o644); err != nil {
				t.Fatal(err)
			}
			out, errOut, code := gitfleet(t, "validate", "--repo", repo)
			if code != 1 {
				t.Errorf("exit %d, stderr %q", code, errOut)
			}
			for _, w := range tc.wants {
				if !strings.Contains(out, w) {
					t.Errorf("output does not contain %q:\n%s", w, out)
				}
			}
		})
	}
}

// A run whose resourceSnapshotIndex is not an integer >= 0 would fail its
// initialization for good once pushed: validate says so first, with the
// message initialization gives, naming the file and line.
func TestValidateRefusesARunIndexThatIsNotAnIndex(t *testing.T) {
	out, _, code := gitfleet(t, "validate", "--repo", filepath.Join("testdata", "invalid-index"))
	want := "runs.yaml:7: ClusterStagedUpdateRun rollback: spec.resourceSnapshotIndex: invalid resource snapshot index `abc` provided, expected an integer >= 0\n" +
		"runs.yaml:16: ClusterStagedUpdateRun rollback-2: spec.resourceSnapshotIndex: invalid resource snapshot index `-1` provided, expected an integer >= 0\n"
	if code != 1 || out != want {
		t.Errorf("exit %d, output:\n%s\nwant exit 1 and:\n%s", code, out, want)
	}
}

// The README's rollback snippet, copied next to the quickstart as a user
// would, validates.
func TestTheReadmeRollbackSnippetValidates(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "## Rolling back")
	if !ok {
		t.Fatal("README has no Rolling back section")
	}
	_, rest, _ = strings.Cut(rest, "```yaml\n")
	snippet, _, ok := strings.Cut(rest, "```")
	if !ok || !strings.Contains(snippet, "resourceSnapshotIndex") {
		t.Fatalf("no rollback snippet in the Rolling back section:\n%s", rest)
	}
	repo := t.TempDir()
	copyTree(t, "../../examples/quickstart", repo)
	if err := os.WriteFile(filepath.Join(repo, "rollback.yaml"), []byte(snippet), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := gitfleet(t, "validate", "--repo", repo); code != 0 {
		t.Errorf("validate of the README's rollback snippet: exit %d\n%s%s", code, out, errOut)
	}
}

// A binary built with the commit stamped (make build) prints it.
func TestVersionPrintsTheStampedCommit(t *testing.T) {
	old := commit
	commit = "0123456789abcdef0123456789abcdef01234567"
	defer func() { commit = old }()
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, _, code := gitfleet(t, args...)
		if code != 0 || !strings.Contains(out, "(commit 0123456789abcdef0123456789abcdef01234567,") {
			t.Errorf("%v: exit %d, %q", args, code, out)
		}
	}
}

func TestValidateWarnsAboutContextsMissingFromTheKubeconfig(t *testing.T) {
	repo := t.TempDir()
	members := `apiVersion: cluster.kubernetes-fleet.io/v1beta1
kind: MemberCluster
metadata:
  name: east
  annotations: {gitfleet.io/driver: "kubeconfig:east"}
---
apiVersion: cluster.kubernetes-fleet.io/v1beta1
kind: MemberCluster
metadata:
  name: west
  annotations: {gitfleet.io/driver: "kubeconfig:prod-west"}
`
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	config := `apiVersion: v1
kind: Config
clusters: [{name: east, cluster: {server: "https://east.invalid"}}]
users: [{name: east, user: {token: secret-token}}]
contexts: [{name: east, context: {cluster: east, user: east}}]
`
	if err := os.WriteFile(filepath.Join(repo, "members.yaml"), []byte(members), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kubeconfig, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := gitfleet(t, "validate", "--repo", repo, "--kubeconfig", kubeconfig)
	if code != 0 {
		t.Fatalf("exit %d (stderr %q): a missing context is a warning, not a problem", code, errOut)
	}
	want := `members.yaml:11: MemberCluster west: metadata.annotations[gitfleet.io/driver]: warning: kubeconfig context "prod-west" is not in ` +
		kubeconfig + " (it has: east)\n2 manifests OK\n"
	if out != want {
		t.Errorf("validate printed\n%s\nwant\n%s", out, want)
	}
	if strings.Contains(out+errOut, "secret-token") {
		t.Error("validate printed a credential from the kubeconfig")
	}
}

// A run whose placement or strategy names no object of the tree fails its
// initialization for good once pushed, and both fields are immutable:
// validate refuses it, naming the file, the field and the field's line
// (not the document's first line). A namespaced run looks in its own
// namespace.
func TestValidateRefusesRunsThatNameNoPlacementOrStrategy(t *testing.T) {
	repo := t.TempDir()
	copyTree(t, "../../examples/quickstart", repo)
	runs := `apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateRun
metadata:
  name: typo
spec:
  placementName: example-placacement
  stagedRolloutStrategyName: example-stratgy
  state: Run
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: StagedUpdateRun
metadata:
  name: web
  namespace: team-a
spec:
  placementName: example-placement
  stagedRolloutStrategyName: example-strategy
`
	if err := os.WriteFile(filepath.Join(repo, "runs.yaml"), []byte(runs), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code := gitfleet(t, "validate", "--repo", repo)
	want := "runs.yaml:6: ClusterStagedUpdateRun typo: spec.placementName: parent placement not found: no ClusterResourcePlacement \"example-placacement\" in the repository; the run would fail its initialization, and the field cannot be changed afterwards\n" +
		"runs.yaml:7: ClusterStagedUpdateRun typo: spec.stagedRolloutStrategyName: referenced updateStrategy not found: `/example-stratgy`: no ClusterStagedUpdateStrategy \"example-stratgy\" in the repository; the run would fail its initialization, and the field cannot be changed afterwards\n" +
		"runs.yaml:16: StagedUpdateRun team-a/web: spec.placementName: parent placement not found: no ResourcePlacement \"example-placement\" in namespace team-a in the repository; the run would fail its initialization, and the field cannot be changed afterwards\n" +
		"runs.yaml:17: StagedUpdateRun team-a/web: spec.stagedRolloutStrategyName: referenced updateStrategy not found: `team-a/example-strategy`: no StagedUpdateStrategy \"example-strategy\" in namespace team-a in the repository; the run would fail its initialization, and the field cannot be changed afterwards\n"
	if code != 1 || out != want {
		t.Errorf("exit %d, output:\n%s\nwant exit 1 and:\n%s", code, out, want)
	}
}

// An index that no recorded snapshot has is a warning (status/ may lag the
// remote): the exit code stays 0. The next index, which the push itself may
// record, is not warned about.
func TestValidateWarnsAboutAnIndexNoRecordedSnapshotHas(t *testing.T) {
	repo := demoRepo(t)
	rollback := `apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateRun
metadata:
  name: rollback
spec: {placementName: example-placement, resourceSnapshotIndex: "%s", stagedRolloutStrategyName: example-strategy}
`
	for _, tc := range []struct{ index, want string }{
		{"0", "10 manifests OK\n"},
		{"1", "10 manifests OK\n"},
		{"5", "rollback.yaml:5: ClusterStagedUpdateRun rollback: spec.resourceSnapshotIndex: warning: no resource snapshot of placement example-placement has index 5 in status/ (recorded: 0); unless one is recorded first, the run fails with: no resourceSnapshots with index `5` found for placement `/example-placement`\n10 manifests OK\n"},
	} {
		if err := os.WriteFile(filepath.Join(repo, "rollback.yaml"), fmt.Appendf(nil, rollback, tc.index), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, errOut, code := gitfleet(t, "validate", "--repo", repo); code != 0 || out != tc.want {
			t.Errorf("index %s: exit %d, stderr %q, output:\n%s\nwant:\n%s", tc.index, code, errOut, out, tc.want)
		}
	}
}

// Overrides are checked like every fleet object; one limited to a placement
// the tree does not have is a warning (it would apply nowhere), and the
// exit code stays 0.
func TestValidateChecksOverridesAndWarnsAboutTheirPlacement(t *testing.T) {
	good := "../../render/testdata/overrides"
	if out, errOut, code := gitfleet(t, "validate", "--repo", good); code != 0 || out != "5 manifests OK\n" {
		t.Errorf("exit %d, stderr %q, output %q; want 5 manifests OK", code, errOut, out)
	}
	repo := t.TempDir()
	copyTree(t, good, repo)
	typos := `apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourceOverride
metadata:
  name: typo
spec:
  placement: {name: ap}
  clusterResourceSelectors: [{group: "", version: v1, kind: Namespace, name: other}]
  policy: {overrideRules: [{clusterSelector: {clusterSelectorTerms: []}, overrideType: Delete}]}
---
apiVersion: placement.kubernetes-fleet.io/v1alpha1
kind: ResourceOverride
metadata:
  name: namespaced
  namespace: app
spec:
  placement: {name: app, scope: Namespaced}
  resourceSelectors: [{group: "", version: v1, kind: ConfigMap, name: other}]
  policy: {overrideRules: [{clusterSelector: {clusterSelectorTerms: []}, overrideType: Delete}]}
`
	if err := os.WriteFile(filepath.Join(repo, "typos.yaml"), []byte(typos), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := gitfleet(t, "validate", "--repo", repo)
	want := `typos.yaml:6: ClusterResourceOverride typo: spec.placement.name: warning: no ClusterResourcePlacement "ap" in the repository; the override applies to that placement only, so it changes nothing until one exists
typos.yaml:16: ResourceOverride app/namespaced: spec.placement.name: warning: no ResourcePlacement "app" in namespace app in the repository; the override applies to that placement only, so it changes nothing until one exists
7 manifests OK
`
	if code != 0 || out != want {
		t.Errorf("exit %d, stderr %q, output:\n%s\nwant:\n%s", code, errOut, out, want)
	}
}

// A strategy that is in the tree but refused makes its runs say it is
// invalid, with its first error, not that it does not exist. Without a
// version gitfleet accepted before, the run would fail its initialization
// (an error); with one in status/, the run starts on that one (a warning).
func TestValidateSaysARunsStrategyIsInvalidRatherThanMissing(t *testing.T) {
	const strategyErr = "strategy.yaml:21: ClusterStagedUpdateStrategy example-strategy: spec.stages[1].maxConcurrency: Invalid value: 0: maxConcurrency must be at least 1\n"
	for _, tc := range []struct {
		name string
		repo func(t *testing.T) string
		want string
	}{
		{"never accepted", func(t *testing.T) string { return quickstartRepo(t) },
			"run.yaml:10: ClusterStagedUpdateRun example-run: spec.stagedRolloutStrategyName: strategy example-strategy is invalid: spec.stages[1].maxConcurrency: Invalid value: 0: maxConcurrency must be at least 1 (strategy.yaml:21); the run would fail its initialization, and the field cannot be changed afterwards\n" +
				strategyErr},
		{"accepted before", func(t *testing.T) string { return demoRepo(t) },
			"run.yaml:10: ClusterStagedUpdateRun example-run: spec.stagedRolloutStrategyName: warning: strategy example-strategy is invalid: spec.stages[1].maxConcurrency: Invalid value: 0: maxConcurrency must be at least 1 (strategy.yaml:21); the run would start on the version gitfleet accepted before (status/strategies/example-strategy.yaml)\n" +
				strategyErr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := tc.repo(t)
			p := filepath.Join(repo, "strategy.yaml")
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			edited := strings.Replace(string(data), "      sortingLabelKey: order\n", "      sortingLabelKey: order\n      maxConcurrency: 0\n", 1)
			if edited == string(data) {
				t.Fatal("the edit changed nothing")
			}
			if err := os.WriteFile(p, []byte(edited), 0o644); err != nil {
				t.Fatal(err)
			}
			out, errOut, code := gitfleet(t, "validate", "--repo", repo)
			if code != 1 || out != tc.want {
				t.Errorf("exit %d, stderr %q, output:\n%s\nwant exit 1 and:\n%s", code, errOut, out, tc.want)
			}
		})
	}
}

// Every object the tree takes out of a placement's selection, compared
// with the latest snapshot recorded in status/, is a warning line; the
// exit code does not change, and a broken tree still fails. Without
// status/ there is nothing to compare with.
func TestValidateWarnsAboutObjectsThatLeaveAPlacement(t *testing.T) {
	const leaves = "Warning: %s leaves placement example-placement: resource snapshot 0 in status/ has it and this tree does not select it; a run that rolls out the next snapshot deletes it from the placement's clusters\n"
	dropCM := func(t *testing.T, repo string) {
		namespaceOnly, _, _ := strings.Cut(readFile(t, repo, "workload.yaml"), "---")
		writeFile(t, repo, "workload.yaml", namespaceOnly)
	}
	demo := func(t *testing.T) string { return demoRepo(t) }
	for _, tc := range []struct {
		name   string
		repo   func(*testing.T) string
		change func(*testing.T, string)
		want   string
		code   int
	}{
		{"nothing removed", demo, func(*testing.T, string) {}, "9 manifests OK\n", 0},
		{"a config map deleted", demo, dropCM,
			fmt.Sprintf(leaves, "ConfigMap test-namespace/test-cm") + "8 manifests OK\n", 0},
		{"the selector changed", demo, func(t *testing.T, repo string) {
			edit(t, repo, "placement.yaml", "name: test-namespace", "name: other-namespace")
		}, fmt.Sprintf(leaves, "ConfigMap test-namespace/test-cm") + fmt.Sprintf(leaves, "Namespace test-namespace") + "9 manifests OK\n", 0},
		{"with a broken manifest", demo, func(t *testing.T, repo string) {
			dropCM(t, repo)
			writeFile(t, repo, "broken.yaml", "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterStagedUpdateRun\nmetadata: {name: broken}\nspec: {bogus: 1}\n")
		}, fmt.Sprintf(leaves, "ConfigMap test-namespace/test-cm"), 1},
		{"no status recorded", func(t *testing.T) string { return quickstartRepo(t) }, dropCM, "7 manifests OK\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := tc.repo(t)
			tc.change(t, repo)
			out, errOut, code := gitfleet(t, "validate", "--repo", repo)
			if code != tc.code || !strings.HasPrefix(out, tc.want) {
				t.Errorf("exit %d, stderr %q, output:\n%s\nwant exit %d and output starting with:\n%s", code, errOut, out, tc.code, tc.want)
			}
		})
	}
}
