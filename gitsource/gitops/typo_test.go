package gitops_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/gitsource/simulate"
	"github.com/gitfleet/gitfleet/internal/testing/kubetest"
	"github.com/gitfleet/gitfleet/internal/testing/manifestcorpus"
)

// typoRun rolls out the latest snapshot, pushed in the same commit as a
// typo: a careless person's "ship it".
var typoRun = []byte(`apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateRun
metadata:
  name: typo-run
spec:
  placementName: example-placement
  stagedRolloutStrategyName: example-strategy
  state: Run
`)

// loadRefusedCorpus is render's corpus of commits that must be refused.
func loadRefusedCorpus(t testing.TB) []manifestcorpus.Case {
	t.Helper()
	cases, err := manifestcorpus.Load("../../render/testdata/corpus/refused")
	if err != nil || len(cases) == 0 {
		t.Fatalf("the corpus: %v (%d cases)", err, len(cases))
	}
	return cases
}

// checkRefused waits for serve's record of a commit that must not render
// and checks that it names every problem of the case at its file and line.
func checkRefused(t testing.TB, r *fleetRepo, commit string, c manifestcorpus.Case) {
	t.Helper()
	path := "status/commits/" + commit + ".yaml"
	eventually(t, fmt.Sprintf("the record of %s (%s)", path, c.Name), func() bool { return r.file(path) != nil })
	rec, ok := r.object(path).(*fleet.Commit)
	if !ok {
		t.Fatalf("%s holds %T", path, r.object(path))
	}
	cond := meta.FindStatusCondition(rec.Status.Conditions, fleet.CommitConditionRendered)
	if cond == nil || cond.Status != "False" || cond.Reason != fleet.RenderFailedReason {
		t.Fatalf("%s: Rendered %+v, want False/%s", c.Name, cond, fleet.RenderFailedReason)
	}
	// The message lists the first problems; every case's first is there.
	if w := c.Want[0]; !strings.Contains(cond.Message, w.Location()+": ") || !strings.Contains(cond.Message, w.Text) {
		t.Errorf("%s: recorded %q, want %s: %s", c.Name, cond.Message, w.Location(), w.Text)
	}
}

// corpusTree is the tree of a corpus case's commit: the fleet's files
// with workload.yaml (the Namespace and ConfigMap every case defines too)
// replaced by the case's tree, and typoRun.
func corpusTree(fleetFiles map[string][]byte, c manifestcorpus.Case) map[string][]byte {
	tree := maps.Clone(fleetFiles)
	delete(tree, "workload.yaml")
	tree["typo-run.yaml"] = typoRun
	maps.Copy(tree, c.Files)
	return tree
}

// Every refused commit of the corpus goes through serve's loop: each,
// pushed with a run for the latest snapshot on top of a fleet whose run
// waits for an approval, is recorded with its file and line and skipped;
// no snapshot lacking the workload is made, the new run is not created,
// and the waiting run finishes once approved, the tip still refused.
//
// The cases come as one push of one commit each, every commit's tree the
// fleet's with that case's files (corpusTree): the loop walks the
// branch's new commits one by one and renders each, so every case is
// refused on its own and costs one render, with no commit back to the
// fleet between cases and no fetch of its own. The daemon fetches when
// poked, as on a webhook: nothing waits on a poll interval. The corpus
// reaches the loop whole in -short mode too.
func TestEveryRefusedCommitOfTheCorpusIsRecordedAndNothingIsDeleted(t *testing.T) {
	var cases []manifestcorpus.Case
	for _, c := range loadRefusedCorpus(t) {
		if c.MaxFileSize == 0 { // serve's limit is not the case's; render's test has it
			cases = append(cases, c)
		}
	}
	files := timedFleet(t, "0s", "1s")
	r := newFleetRepo(t, files)
	src := gitsource.Config{URL: "file://" + r.remote, Branch: "main", CacheDir: t.TempDir()}
	d := startDaemonWithSource(t, src, 0)
	eventually(t, "the canary approval request", func() bool { return r.approval(approvalName) != nil })

	msgs, changes, tree := make([]string, len(cases)), make([]map[string][]byte, len(cases)), files
	for i, c := range cases {
		next := corpusTree(files, c)
		msgs[i], changes[i], tree = "typo: "+c.Name, treeChange(tree, next), next
	}
	commits := r.commitEach(msgs, changes)
	d.poke()
	for i, c := range cases {
		checkRefused(t, r, commits[i], c)
	}
	if p := "status/snapshots/example-placement/1.yaml"; r.file(p) != nil {
		t.Errorf("%s exists: a snapshot was made from a refused commit", p)
	}
	if r.run("typo-run") != nil {
		t.Error("typo-run exists: a run of a refused commit was created")
	}
	r.approve(approvalName)
	d.poke()
	r.waitPhase("example-run", fleet.PhaseSucceeded)
	if err := d.LastError(); err != nil {
		t.Errorf("the daemon reports %v; a refused commit is no error of the loop", err)
	}
}

// The scenario on three real clusters (API servers built from
// source): snapshot 0 is on every member; then each kind of typo a careless
// person pushes — with a run for the latest snapshot in the same commit —
// is refused whole: no snapshot lacks the workload, the run waits for a
// good commit (it is not even created), and every member keeps every object
// of snapshot 0, the Namespace never Terminating. A fix then renders and
// rolls out as usual.
func TestATypoNeverDeletesFromRealClusters(t *testing.T) {
	clusters := startClusters(t, "member1", "member2", "member3")
	files := kubeconfigFleet(t)
	r := newFleetRepo(t, files)
	startServe(t, "--repo", "file://"+r.remote, "--cache-dir", t.TempDir(), "--interval", "200ms",
		"--status-interval", "100ms", "--metrics-addr", "", "--kubeconfig", kubetest.Kubeconfig(t, clusters, nil))

	value := func(c *kubetest.Cluster) string { return c.ConfigMapValue("test-namespace", "test-cm", "key") }
	namespaceLive := func(c *kubetest.Cluster) bool {
		ns := c.Get("v1", "Namespace", "", "test-namespace")
		if ns == nil || ns.GetDeletionTimestamp() != nil {
			return false
		}
		phase, _, _ := unstructured.NestedString(ns.Object, "status", "phase")
		return phase == "Active"
	}
	eventually(t, "the canary stage's before-stage approval request", func() bool {
		return r.approval("example-run-before-canary") != nil
	})
	r.approve("example-run-before-canary")
	eventually(t, "the canary stage's after-stage approval request", func() bool {
		return r.approval("example-run-after-canary") != nil
	})
	r.approve("example-run-after-canary")
	r.waitPhase("example-run", fleet.PhaseSucceeded)
	for _, c := range clusters {
		if value(c) != "value1" || !namespaceLive(c) {
			t.Fatalf("%s after snapshot 0: test-cm %q, namespace live %v", c.Name, value(c), namespaceLive(c))
		}
	}

	// One case of each class of refusal the issue names.
	kinds := []string{"unterminated-quote", "tabs-for-indentation", "document-is-a-list", "empty-file",
		"missing-apiversion", "missing-name", "duplicate-across-files", "kind-typo", "uppercase-name", "values-file"}
	var cases []manifestcorpus.Case
	for _, c := range loadRefusedCorpus(t) {
		if slices.Contains(kinds, c.Name) {
			cases = append(cases, c)
		}
	}
	if len(cases) != len(kinds) {
		t.Fatalf("found %d of the %d corpus cases %v", len(cases), len(kinds), kinds)
	}
	// Each case's commit replaces the one before (corpusTree), with no
	// commit back to the fleet (and its render) between cases.
	tree := files
	for _, c := range cases {
		next := corpusTree(files, c)
		commit := r.commit("typo: "+c.Name, treeChange(tree, next))
		tree = next
		checkRefused(t, r, commit, c)
		if p := "status/snapshots/example-placement/1.yaml"; r.file(p) != nil {
			t.Fatalf("after %s: %s exists, a snapshot made from a refused commit", c.Name, p)
		}
		if r.run("typo-run") != nil {
			t.Fatalf("after %s: typo-run was created from a refused commit", c.Name)
		}
		for _, m := range clusters {
			if value(m) != "value1" || !namespaceLive(m) {
				t.Fatalf("after %s, %s: test-cm %q, namespace live %v; want snapshot 0 untouched", c.Name, m.Name, value(m), namespaceLive(m))
			}
		}
	}

	// The fix: the fleet with the value the person meant, and the run
	// still in the tree.
	fix := maps.Clone(files)
	fix["workload.yaml"] = []byte(strings.Replace(string(files["workload.yaml"]), "key: value1", "key: value2", 1))
	fix["typo-run.yaml"] = typoRun
	r.commit("value2, for real", treeChange(tree, fix))
	eventually(t, "typo-run's before-canary approval request", func() bool { return r.approval("typo-run-before-canary") != nil })
	r.approve("typo-run-before-canary")
	eventually(t, "typo-run's after-canary approval request", func() bool { return r.approval("typo-run-after-canary") != nil })
	r.approve("typo-run-after-canary")
	run := r.waitPhase("typo-run", fleet.PhaseSucceeded)
	if run.Status.ResourceSnapshotIndexUsed != "1" {
		t.Errorf("typo-run rolled out snapshot %q, want 1 (the fix)", run.Status.ResourceSnapshotIndexUsed)
	}
	for _, c := range clusters {
		if value(c) != "value2" || !namespaceLive(c) {
			t.Errorf("%s after the fix: test-cm %q, namespace live %v", c.Name, value(c), namespaceLive(c))
		}
	}
}

// A commit that changes no manifest on top of a refused one (a README, in a
// plain layout) is not rendered: the source stays not Ready, naming the
// refused commit, and `gitfleet simulate` of the same history agrees that
// the tip does not render.
func TestAReadmeCommitOnTopOfARefusedOneKeepsTheSourceNotReady(t *testing.T) {
	files := timedFleet(t, "0s", "1s")
	r := newFleetRepo(t, files)
	d := startDaemonWithSource(t, gitsource.Config{URL: "file://" + r.remote, Branch: "main", CacheDir: t.TempDir()}, 50*time.Millisecond)
	eventually(t, "the canary approval request", func() bool { return r.approval(approvalName) != nil })
	typo := r.commit("typo", map[string][]byte{"workload.yaml": []byte(strings.Replace(string(files["workload.yaml"]), "key: value1", `key: "value2`, 1))})
	readme := r.commit("docs", map[string][]byte{"README.md": []byte("# the fleet\n")})
	// The typo's render may go on beside the loop (a render longer than
	// the loop's patience): wait for its outcome, not only the fetch.
	eventually(t, "the source to have fetched the README commit and refused the typo", func() bool {
		src, ok := r.object("status/sources/main.yaml").(*fleet.GitSource)
		if !ok || src.Status.LastFetchedCommit != readme {
			return false
		}
		c := meta.FindStatusCondition(src.Status.Conditions, fleet.GitSourceConditionReady)
		return c != nil && c.Status == "False"
	})
	src := r.object("status/sources/main.yaml").(*fleet.GitSource)
	ready := meta.FindStatusCondition(src.Status.Conditions, fleet.GitSourceConditionReady)
	if ready == nil || ready.Status != "False" || !strings.Contains(ready.Message, typo[:7]) || !strings.Contains(ready.Message, "workload.yaml:") {
		t.Errorf("Ready %+v, want False naming the typo commit %s and its file", ready, typo[:7])
	}
	if r.file("status/commits/"+readme+".yaml") != nil {
		t.Error("the README commit was recorded as not rendering: it changes no manifest")
	}
	d.stop(t)

	res, err := simulate.Run(context.Background(), simulate.Options{Repo: r.work, Until: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TipRefused || len(res.ManifestErrors) == 0 || res.ManifestErrors[0].File != "workload.yaml" {
		t.Errorf("simulate: tip refused %v, errors %v; want the typo's workload.yaml", res.TipRefused, res.ManifestErrors)
	}
}
