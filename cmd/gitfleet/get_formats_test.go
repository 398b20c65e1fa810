package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/golden"
	"github.com/gitfleet/gitfleet/status"
)

// -o json, name, jsonpath and go-template are kubectl's printers
// (k8s.io/cli-runtime): one named object prints as itself, a listing as a
// v1 List, and every object carries its apiVersion and kind.
func TestGetPrintsKubectlsMachineFormats(t *testing.T) {
	repo := demoRepo(t)
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"get-runs.json", []string{"get", "runs", "-o", "json"}},
		{"get-run.json", []string{"get", "csur", "example-run", "-o", "json"}},
		{"get-all-name.txt", []string{"get", "runs,approvals,placements", "-o", "name"}},
		{"get-run-jsonpath.txt", []string{"get", "run", "example-run", "-o", `jsonpath={.status.conditions[?(@.type=="Progressing")].reason}`}},
		{"get-bindings-jsonpath.txt", []string{"get", "bindings", "-o", `jsonpath={range .items[*]}{.spec.targetCluster}{"\t"}{.spec.state}{"\n"}{end}`}},
		{"get-clusters-template.txt", []string{"get", "clusters", "-o", `go-template={{range .items}}{{.metadata.name}}={{index .metadata.labels "environment"}} {{end}}`}},
		{"get-runs-approvals.txt", []string{"get", "runs,approvals"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			out, errOut, code := gitfleet(t, append(tc.args, "--repo", repo)...)
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			golden.Assert(t, tc.golden, []byte(out))
		})
	}
	// -o yaml keeps the status files' bytes: kubectl's YAML printer and
	// status.Encode agree.
	out, _, _ := gitfleet(t, "get", "csur", "example-run", "-o", "yaml", "--repo", repo)
	file, err := os.ReadFile(filepath.Join(repo, "status", "runs", "example-run.yaml"))
	if err != nil || out != string(file) {
		t.Errorf("-o yaml is not the status file (%v):\n%s", err, out)
	}
	var list struct {
		APIVersion, Kind string
		Items            []struct{ APIVersion, Kind string }
	}
	out, _, _ = gitfleet(t, "get", "approvals", "-o", "json", "--repo", repo)
	if err := json.Unmarshal([]byte(out), &list); err != nil || list.Kind != "List" || len(list.Items) != 1 ||
		list.Items[0].Kind != "ClusterApprovalRequest" || list.Items[0].APIVersion != "placement.kubernetes-fleet.io/v1beta1" {
		t.Errorf("approvals -o json: %v %+v", err, list)
	}
}

// -l selects by labels as kubectl's does, and is refused next to names.
func TestGetSelectsByLabel(t *testing.T) {
	repo := demoRepo(t)
	for _, tc := range []struct {
		selector, want string
	}{
		{"environment=canary", "membercluster.cluster.kubernetes-fleet.io/member1\nmembercluster.cluster.kubernetes-fleet.io/member3\n"},
		{"environment in (staging)", "membercluster.cluster.kubernetes-fleet.io/member2\n"},
		{"!environment", ""},
	} {
		out, _, code := gitfleet(t, "get", "clusters", "-l", tc.selector, "-o", "name", "--repo", repo)
		if code != 0 || out != tc.want {
			t.Errorf("-l %q: exit %d, got %q, want %q", tc.selector, code, out, tc.want)
		}
	}
	out, _, _ := gitfleet(t, "get", "approvals", "-l", "kubernetes-fleet.io/targetUpdateRun=example-run", "-o", "name", "--repo", repo)
	if out != "clusterapprovalrequest.placement.kubernetes-fleet.io/example-run-after-canary\n" {
		t.Errorf("approvals of example-run: %q", out)
	}
	for _, args := range [][]string{
		{"get", "clusters", "member1", "-l", "environment=canary"},
		{"get", "clusters", "-l", "environment in ("},
	} {
		if _, errOut, code := gitfleet(t, append(args, "--repo", repo)...); code != 1 || !strings.HasPrefix(errOut, "Error: ") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
}

// Every get says on stderr which commit the status is from and how old it
// is; stdout is unchanged. A folder that is not a clone has no such line.
func TestGetSaysWhichCommitTheStatusIsFrom(t *testing.T) {
	repo := demoRepo(t)
	head := gitCmd(t, repo, "rev-parse", "--short", "HEAD")
	// A person's commit after the status commit does not make the status newer.
	if err := os.WriteFile(filepath.Join(repo, "notes.txt"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitCmd(t, repo, "add", "notes.txt")
	gitCmd(t, repo, "commit", "-q", "-m", "notes")
	out, errOut, code := gitfleetRaw(t, "get", "runs", "--repo", repo)
	if want := fmt.Sprintf("status from %s (30m ago)\n", head); code != 0 || errOut != want {
		t.Errorf("exit %d, stderr %q, want %q", code, errOut, want)
	}
	golden.Assert(t, "get-runs.txt", []byte(out))

	plain := t.TempDir()
	copyTree(t, repo, plain)
	if err := os.RemoveAll(filepath.Join(plain, ".git")); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := gitfleetRaw(t, "get", "runs", "--repo", plain); code != 0 || errOut != "" {
		t.Errorf("outside a clone: exit %d, stderr %q", code, errOut)
	}
}

// describe ends with the status commits that changed the run, newest
// last, bounded.
func TestDescribeRunEndsWithItsStatusCommits(t *testing.T) {
	repo := demoRepo(t)
	file := filepath.Join(repo, "status", "runs", "example-run.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= eventLimit+2; i++ {
		if err := os.WriteFile(file, fmt.Appendf(append([]byte(nil), data...), "# %d\n", i), 0o644); err != nil {
			t.Fatal(err)
		}
		gitCmd(t, repo, "commit", "-q", "-am", fmt.Sprintf("status: example-run step %d", i))
	}
	// Commits that do not touch the run are not its events.
	gitCmd(t, repo, "commit", "-q", "--allow-empty", "-m", "status: another-run started")
	out, errOut, code := gitfleet(t, "describe", "run", "example-run", "--repo", repo)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	_, events, ok := strings.Cut(out, fmt.Sprintf("\nEvents (the last %d):\n", eventLimit))
	if !ok {
		t.Fatalf("no bounded Events section:\n%s", out)
	}
	lines := strings.Split(strings.TrimSuffix(events, "\n"), "\n")
	if len(lines) != eventLimit+2 || !strings.HasSuffix(lines[2], "status: example-run step 3") ||
		!strings.HasSuffix(lines[len(lines)-1], "status: example-run step 22") || strings.Contains(events, "another-run") {
		t.Errorf("want steps 3..22, newest last:\n%s", events)
	}
}

// -o completes to the formats get prints.
func TestGetCompletesOutputFormats(t *testing.T) {
	out, _, _ := gitfleet(t, "__complete", "get", "runs", "-o", "")
	for _, f := range []string{"wide\n", "json\n", "yaml\n", "name\n", "jsonpath=\n", "go-template=\n"} {
		if !strings.Contains(out, f) {
			t.Errorf("completion lacks %q:\n%s", f, out)
		}
	}
}

// clones is a fleet remote with two clones: the person's, which get reads,
// and another one that stands in for serve pushing status.
func clones(t *testing.T) (mine, theirs string) {
	t.Helper()
	remote := filepath.Join(t.TempDir(), "remote.git")
	gitCmd(t, demoRepo(t), "clone", "-q", "--bare", ".", remote)
	mine, theirs = filepath.Join(t.TempDir(), "mine"), filepath.Join(t.TempDir(), "theirs")
	gitCmd(t, remote, "clone", "-q", remote, mine)
	gitCmd(t, remote, "clone", "-q", remote, theirs)
	return mine, theirs
}

// stopRun commits and pushes, in clone, the status of example-run stopped.
func stopRun(t *testing.T, clone string) {
	t.Helper()
	file := filepath.Join(clone, "status", "runs", "example-run.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(data), "state: Run", "state: Stop", 1)
	s = strings.Replace(s, "reason: UpdateRunWaiting", "reason: UpdateRunStopped", 1)
	if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	gitCmd(t, clone, "commit", "-q", "-am", "status: example-run stopped")
	gitCmd(t, clone, "push", "-q", "origin", "HEAD")
}

// --watch pulls each round and prints the objects that changed, without
// a header; rounds where nothing changed print nothing. The person's
// uncommitted edit survives the pulls.
func TestGetWatchPullsAndPrintsChanges(t *testing.T) {
	mine, theirs := clones(t)
	if err := os.WriteFile(filepath.Join(mine, "draft.yaml"), []byte("# mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rounds := 0
	defer func(p func(context.Context, time.Duration) bool) { watchPoll = p }(watchPoll)
	watchPoll = func(context.Context, time.Duration) bool {
		rounds++
		switch rounds {
		case 1: // nothing new
		case 2:
			stopRun(t, theirs)
		default:
			return false
		}
		return true
	}
	out, errOut, code := gitfleetRaw(t, "get", "runs,approvals", "-w", "-o", "wide", "--repo", mine)
	if code != 0 || rounds != 3 {
		t.Fatalf("exit %d after %d rounds, stderr %q", code, rounds, errOut)
	}
	golden.Assert(t, "get-watch.txt", []byte(out))
	if n := strings.Count(errOut, "status from "); n != 2 {
		t.Errorf("want the status commit announced twice (at start, after the pull), stderr:\n%s", errOut)
	}
	if data, err := os.ReadFile(filepath.Join(mine, "draft.yaml")); err != nil || string(data) != "# mine\n" {
		t.Errorf("the person's edit: %q, %v", data, err)
	}
}

// --fetch pulls before reading; when the person's branch has diverged it
// refuses, says why, and leaves their commit where it was.
func TestGetFetchPullsFirstAndKeepsLocalWork(t *testing.T) {
	mine, theirs := clones(t)
	stopRun(t, theirs)
	out, _, code := gitfleet(t, "get", "runs", "-o", "wide", "--fetch", "--repo", mine)
	if code != 0 || !strings.Contains(out, "Stopped") {
		t.Errorf("after --fetch: exit %d\n%s", code, out)
	}

	gitCmd(t, mine, "commit", "-q", "--allow-empty", "-m", "mine")
	mineHead := gitCmd(t, mine, "rev-parse", "HEAD")
	gitCmd(t, theirs, "commit", "-q", "--allow-empty", "-m", "theirs")
	gitCmd(t, theirs, "push", "-q", "origin", "HEAD")
	_, errOut, code := gitfleet(t, "get", "runs", "--fetch", "--repo", mine)
	if code != 1 || !strings.Contains(errOut, "git pull --ff-only in "+mine+" failed, your commits and edits are untouched") {
		t.Errorf("diverged: exit %d, stderr %q", code, errOut)
	}
	if head := gitCmd(t, mine, "rev-parse", "HEAD"); head != mineHead {
		t.Errorf("HEAD moved from %s to %s", mineHead, head)
	}
}

// get sources prints serve's status/sources/ files as flux get sources git
// prints its sources.
func TestGetSourcesPrintsHowServeFollowsTheBranch(t *testing.T) {
	repo := demoRepo(t)
	head := gitCmd(t, repo, "rev-parse", "HEAD")
	since := metav1.NewTime(testNow.Add(-2 * time.Minute))
	src := &fleet.GitSource{ObjectMeta: metav1.ObjectMeta{Name: "main"},
		Spec: fleet.GitSourceSpec{URL: "https://git.example.com/fleet.git", Branch: "main", Path: "."},
		Status: fleet.GitSourceStatus{LastFetchedCommit: head, LastAppliedCommit: head,
			LastError: "gitsource: fetch https://git.example.com/fleet.git: repository not found", LastErrorTime: &since,
			Conditions: []metav1.Condition{{Type: "Ready", Status: "False", Reason: "GitOperationFailed", LastTransitionTime: since,
				Message: "gitsource: fetch https://git.example.com/fleet.git: repository not found"}}}}
	data, err := status.Encode(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(repo, "status", "sources"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "status", "sources", "main.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := gitfleet(t, "get", "sources", "--repo", repo)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	golden.Assert(t, "get-sources.txt", []byte(strings.ReplaceAll(out, head[:7], "<head7>")))
	if out, _, _ := gitfleet(t, "get", "source", "main", "-o", "yaml", "--repo", repo); out != string(data) {
		t.Errorf("-o yaml is not the file:\n%s", out)
	}
	if out, _, _ := gitfleet(t, "get", "sources", "-o", "name", "--repo", repo); out != "gitsource.gitfleet.io/main\n" {
		t.Errorf("-o name: %q", out)
	}
}

// With -o json, --watch prints each changed object by itself, as kubectl
// get -w does, not a List per round.
func TestGetWatchPrintsObjectsOneByOne(t *testing.T) {
	mine, theirs := clones(t)
	rounds := 0
	defer func(p func(context.Context, time.Duration) bool) { watchPoll = p }(watchPoll)
	watchPoll = func(context.Context, time.Duration) bool {
		rounds++
		if rounds == 1 {
			stopRun(t, theirs)
			return true
		}
		return false
	}
	out, errOut, code := gitfleet(t, "get", "runs", "-w", "-o", "json", "--repo", mine)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	var states []string
	for dec.More() {
		var run struct {
			Kind string
			Spec struct{ State string }
		}
		if err := dec.Decode(&run); err != nil {
			t.Fatal(err)
		}
		if run.Kind != "ClusterStagedUpdateRun" {
			t.Errorf("kind %q", run.Kind)
		}
		states = append(states, run.Spec.State)
	}
	if strings.Join(states, ",") != "Run,Stop" {
		t.Errorf("states printed: %v\n%s", states, out)
	}
}

// An unnamed listing that finds nothing prints an empty List, as kubectl
// does, so scripts that read .items keep working.
func TestGetPrintsAnEmptyListWhenNothingIsFound(t *testing.T) {
	repo := quickstartRepo(t)
	out, errOut, code := gitfleet(t, "get", "approvals", "-o", "json", "--repo", repo)
	var list struct {
		Kind  string
		Items []any
	}
	if code != 0 || errOut != "No resources found\n" || json.Unmarshal([]byte(out), &list) != nil || list.Kind != "List" || len(list.Items) != 0 {
		t.Errorf("exit %d, stderr %q, stdout %q", code, errOut, out)
	}
	if out, _, _ := gitfleet(t, "get", "approvals", "-o", "name", "--repo", repo); out != "" {
		t.Errorf("-o name printed %q", out)
	}
}

// A kind that had no rows when --watch began gets its header with its
// first rows, after a blank line, as its own table; later rows of a kind
// go under its header.
func TestGetWatchHeadsAKindWhoseFirstRowsAppearLater(t *testing.T) {
	mine, theirs := clones(t)
	rounds := 0
	defer func(p func(context.Context, time.Duration) bool) { watchPoll = p }(watchPoll)
	watchPoll = func(context.Context, time.Duration) bool {
		rounds++
		switch rounds {
		case 1: // the first source appears
			src := &fleet.GitSource{ObjectMeta: metav1.ObjectMeta{Name: "main"},
				Spec: fleet.GitSourceSpec{URL: "https://git.example.com/fleet.git", Branch: "main", Path: "."}}
			data, err := status.Encode(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(theirs, "status", "sources"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(theirs, "status", "sources", "main.yaml"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			gitCmd(t, theirs, "add", ".")
			gitCmd(t, theirs, "commit", "-q", "-m", "status: source main")
			gitCmd(t, theirs, "push", "-q", "origin", "HEAD")
		case 2:
			stopRun(t, theirs)
		default:
			return false
		}
		return true
	}
	out, errOut, code := gitfleet(t, "get", "runs,sources", "-w", "--repo", mine)
	if code != 0 || rounds != 3 {
		t.Fatalf("exit %d after %d rounds, stderr %q", code, rounds, errOut)
	}
	golden.Assert(t, "get-watch-later-kind.txt", []byte(out))
}
