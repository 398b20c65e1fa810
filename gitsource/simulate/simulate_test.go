package simulate

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/internal/testing/golden"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/status"
)

// newRepo makes a Git repository (with the git CLI, as a person would)
// whose history is one commit per step; each step maps file names to
// contents (nil deletes the file).
func newRepo(t testing.TB, steps ...map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	step := 0
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		// Fixed identities and dates make commit hashes, and so the
		// golden files that show them, reproducible.
		date := fmt.Sprintf("2026-01-01T00:%02d:00Z", step)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=dev", "GIT_AUTHOR_EMAIL=dev@example.com",
			"GIT_COMMITTER_NAME=dev", "GIT_COMMITTER_EMAIL=dev@example.com",
			"GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date, "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	for i, files := range steps {
		step = i
		for name, data := range files {
			p := filepath.Join(dir, name)
			if data == nil {
				git("rm", "-q", name)
				continue
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			git("add", name)
		}
		git("commit", "-q", "-m", fmt.Sprintf("step %d", i+1))
	}
	return dir
}

// quickstart returns the files of examples/quickstart.
func quickstart(t testing.TB) map[string][]byte {
	t.Helper()
	return readDir(t, "../../examples/quickstart")
}

// readDir returns the files of a folder, as newRepo takes them.
func readDir(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = data
	}
	return files
}

func TestQuickstartWaitsOnCanaryApproval(t *testing.T) {
	repo := newRepo(t, quickstart(t))
	res, err := Run(context.Background(), Options{Repo: repo})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteTimeline(&out, res.Timeline); err != nil {
		t.Fatal(err)
	}
	out.WriteString("\n")
	if err := WriteSummary(context.Background(), &out, res); err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "quickstart.txt", out.Bytes())

	// The order the seed demo promises: member2, the wait, member3, member1,
	// then the canary approval.
	text := out.String()
	order := []string{
		"stage staging: cluster member2 started",
		"stage staging: wait time elapsed",
		"stage canary: cluster member3 started",
		"stage canary: cluster member1 started",
		"approval requested: example-run-after-canary",
	}
	at := 0
	for _, s := range order {
		i := strings.Index(text[at:], s)
		if i < 0 {
			t.Fatalf("timeline lacks %q after offset %d:\n%s", s, at, text)
		}
		at += i
	}
}

// The seed demo's status while it waits for the canary approval, in
// KubeFleet's shape (seed 003's example, with the newest strings).
func TestQuickstartWaitingStatusYAML(t *testing.T) {
	repo := newRepo(t, quickstart(t))
	res, err := Run(context.Background(), Options{Repo: repo})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteObjects(context.Background(), &out, res.Hub); err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "quickstart-waiting.yaml", out.Bytes())
	for _, want := range []string{
		"message: The updateRun is waiting for after-stage tasks in stage canary to complete",
		"approvalRequestName: example-run-after-canary",
		"reason: StageTaskApprovalRequestCreated",
		"reason: AfterStageTaskWaitTimeElapsed",
		"kubernetes-fleet.io/taskType: afterStage",
	} {
		if !bytes.Contains(out.Bytes(), []byte(want)) {
			t.Errorf("waiting status lacks %q", want)
		}
	}
}

func TestQuickstartApprovedSucceedsAndYAMLIsDeterministic(t *testing.T) {
	repo := newRepo(t, quickstart(t))
	render := func() []byte {
		res, err := Run(context.Background(), Options{Repo: repo, Approve: true})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := WriteObjects(context.Background(), &out, res.Hub); err != nil {
			t.Fatal(err)
		}
		return out.Bytes()
	}
	first, second := render(), render()
	if !bytes.Equal(first, second) {
		t.Fatal("two simulations of the same repository printed different YAML")
	}
	golden.Assert(t, "quickstart-approved.yaml", first)
	if !bytes.Contains(first, []byte("reason: UpdateRunSucceeded")) {
		t.Fatal("the approved run did not succeed")
	}
}

func TestRollbackPreviewUsesOlderSnapshot(t *testing.T) {
	files := quickstart(t)
	delete(files, "run.yaml")
	v2 := []byte(strings.Replace(string(files["workload.yaml"]), "key: value1", "key: value2", 1))
	rollback := []byte(`apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateRun
metadata:
  name: rollback-run
spec:
  placementName: example-placement
  resourceSnapshotIndex: "0"
  stagedRolloutStrategyName: example-strategy
  state: Run
`)
	repo := newRepo(t, files, map[string][]byte{"workload.yaml": v2}, map[string][]byte{"rollback.yaml": rollback})
	res, err := Run(context.Background(), Options{Repo: repo, Approve: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Commits != 3 {
		t.Fatalf("replayed %d commits, want 3", res.Commits)
	}
	snaps, err := res.Hub.ListResourceSnapshots(context.Background(), keyOf("example-placement"))
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 2 {
		t.Fatalf("got %d resource snapshots, want 2 (the run-only commit changes no resources)", len(snaps))
	}
	run, err := res.Hub.GetUpdateRun(context.Background(), keyOf("rollback-run"))
	if err != nil {
		t.Fatal(err)
	}
	if run.Status.ResourceSnapshotIndexUsed != "0" || run.Phase() != "Succeeded" {
		t.Fatalf("rollback run used index %q, phase %s", run.Status.ResourceSnapshotIndexUsed, run.Phase())
	}
}

// Replaying from scratch a history full of gitfleet's status commits
// renders only the commits that change the fleet (and the tip), with the
// same outcome as a history without them.
func TestReplaySkipsCommitsThatChangeOnlyStatus(t *testing.T) {
	files := quickstart(t)
	v2 := []byte(strings.Replace(string(files["workload.yaml"]), "key: value1", "key: value2", 1))
	statusOnly := func(i int) map[string][]byte {
		return map[string][]byte{
			fmt.Sprintf("status/runs/example-run-%d.yaml", i): []byte("# written by gitfleet\n"),
			fmt.Sprintf("approvals/example-run-%d.yaml", i):   []byte("# a request\n"),
		}
	}
	repo := newRepo(t, files, statusOnly(1), statusOnly(2), map[string][]byte{"workload.yaml": v2}, statusOnly(3), statusOnly(4))
	res, err := Run(context.Background(), Options{Repo: repo, Approve: true, FromStatus: FromScratch})
	if err != nil {
		t.Fatal(err)
	}
	if res.Commits != 6 || res.Rendered != 3 {
		t.Errorf("replayed %d commits and rendered %d; want 6 and 3 (the first, the workload change, the tip)", res.Commits, res.Rendered)
	}
	snaps, err := res.Hub.ListResourceSnapshots(context.Background(), keyOf("example-placement"))
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 2 {
		t.Errorf("got %d resource snapshots, want 2", len(snaps))
	}
}

func keyOf(name string) hub.Key { return hub.Key{Name: name} }

// A simulation starts from the state recorded in status/ (here written by
// a simulation through the same TreeStore serve uses, and committed): the
// run that finished stays finished on snapshot 0, only the commit made
// since is replayed, and it records snapshot 1. --from-status of a
// revision without status/ is an error that says how to start from
// scratch.
func TestFromStatusStartsFromTheRecordedState(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, quickstart(t))
	store := status.NewTreeStore(status.Dir(repo), status.Dir(repo), clock.Real{})
	store.Interval = -1
	if _, err := Run(ctx, Options{Repo: repo, Approve: true, Store: store, FromStatus: FromScratch}); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=dev", "GIT_AUTHOR_EMAIL=dev@example.com",
			"GIT_COMMITTER_NAME=dev", "GIT_COMMITTER_EMAIL=dev@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("add", "-A")
	git("commit", "-q", "-m", "status: example-run succeeded")
	data, err := os.ReadFile(filepath.Join(repo, "workload.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "workload.yaml"), bytes.Replace(data, []byte("key: value1"), []byte("key: value2"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	git("commit", "-q", "-am", "value2")
	tip := git("rev-parse", "HEAD") // status/ is on the branch: the tip has it

	res, err := Run(ctx, Options{Repo: repo})
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCommit.String() != tip || res.Commits != 1 || res.Restored == 0 {
		t.Errorf("restored %d object(s) from %s and replayed %d commit(s), want status from the tip %s and 1 commit", res.Restored, res.StatusCommit, res.Commits, tip)
	}
	if len(res.Recorded) != 1 || res.Recorded[0].Labels["kubernetes-fleet.io/resource-index"] != "1" {
		t.Errorf("recorded %d snapshot(s), want index 1 only", len(res.Recorded))
	}
	run, err := res.Hub.GetUpdateRun(ctx, hub.Key{Name: "example-run"})
	if err != nil {
		t.Fatal(err)
	}
	if run.Phase() != "Succeeded" || run.Status.ResourceSnapshotIndexUsed != "0" {
		t.Errorf("example-run is %s on snapshot %q, want Succeeded on 0 as recorded", run.Phase(), run.Status.ResourceSnapshotIndexUsed)
	}
	if len(res.Timeline) != 0 {
		t.Errorf("nothing should move (example-run finished), got %+v", res.Timeline)
	}

	_, err = Run(ctx, Options{Repo: repo, FromStatus: "HEAD~2"})
	if err == nil || !strings.Contains(err.Error(), "has no status/ tree; use --from-status none") {
		t.Errorf("err %v, want the revision named as having no status/", err)
	}
}
