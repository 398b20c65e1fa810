package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/status"
)

const canaryApproval = "approvals/example-run-after-canary.yaml"

// readApproved decodes the approval file and returns its Approved condition.
func readApproved(t *testing.T, repo, p string) *metav1.Condition {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repo, p))
	if err != nil {
		t.Fatal(err)
	}
	obj, err := status.DecodeFile(p, data)
	if err != nil {
		t.Fatal(err)
	}
	return meta.FindStatusCondition(obj.(*fleet.ApprovalRequest).Status.Conditions, fleet.ApprovalRequestConditionApproved)
}

// The file gets the condition `kubectl fleet approve` writes, at the
// request's generation, so the engine accepts it; the change is left in the
// working tree for the person to commit.
func TestApproveWritesTheConditionTheEngineAccepts(t *testing.T) {
	repo := demoRepo(t)
	out, errOut, code := gitfleet(t, "approve", "example-run-after-canary", "--repo", repo)
	if code != 0 || errOut != "" || out != "clusterapprovalrequest.placement.kubernetes-fleet.io/example-run-after-canary approved\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	c := readApproved(t, repo, canaryApproval)
	want := metav1.Condition{Type: "Approved", Status: metav1.ConditionTrue, ObservedGeneration: 1,
		LastTransitionTime: metav1.NewTime(testNow), Reason: "ClusterApprovalRequestApproved", Message: "ClusterApprovalRequest has been approved"}
	if c == nil || !c.LastTransitionTime.Equal(&want.LastTransitionTime) || c.Status != want.Status || c.ObservedGeneration != 1 || c.Reason != want.Reason || c.Message != want.Message {
		t.Errorf("Approved condition = %+v, want %+v", c, want)
	}
	if st := gitCmd(t, repo, "status", "--porcelain"); st != "M "+canaryApproval {
		t.Errorf("git status = %q, want only the approval modified", st)
	}
	out, _, _ = gitfleet(t, "get", "approvals", "--repo", repo)
	if !strings.Contains(out, "canary   True") {
		t.Errorf("get approvals does not show it approved:\n%s", out)
	}
}

// Approving twice changes nothing the second time and says so.
func TestApproveLeavesAnApprovedRequestAlone(t *testing.T) {
	repo := demoRepo(t)
	gitfleet(t, "approve", "example-run-after-canary", "--repo", repo)
	before, _ := os.ReadFile(filepath.Join(repo, canaryApproval))
	now = func() time.Time { return testNow.Add(time.Hour) }
	defer func() { now = func() time.Time { return testNow } }()
	out, errOut, code := gitfleet(t, "approve", "example-run-after-canary", "--repo", repo)
	if code != 0 || errOut != "" || !strings.Contains(out, "already approved (observedGeneration 1)") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if after, _ := os.ReadFile(filepath.Join(repo, canaryApproval)); string(after) != string(before) {
		t.Errorf("the file changed:\n%s", after)
	}
}

// The seeds' #1 pitfall: an Approved condition patched by hand with
// observedGeneration 0 is ignored by the engine. approve corrects it and
// says what it fixed.
func TestApproveCorrectsAWrongObservedGeneration(t *testing.T) {
	for _, tc := range []struct {
		name, condition, wantSays string
	}{
		{"generation 0, as in the seeds", "status: \"True\"\n    observedGeneration: 0", "fixed: the Approved condition had observedGeneration 0, but the request is at generation 1"},
		{"not approved", "status: \"False\"\n    observedGeneration: 1", "the Approved condition was False; it is True now"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := demoRepo(t)
			p := filepath.Join(repo, canaryApproval)
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			data = append(data, []byte("status:\n  conditions:\n  - lastTransitionTime: \"2026-01-01T00:05:00Z\"\n    message: approved\n    reason: approved\n    "+
				tc.condition+"\n    type: Approved\n")...)
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			out, errOut, code := gitfleet(t, "approve", "example-run-after-canary", "--repo", repo)
			if code != 0 || errOut != "" || !strings.Contains(out, tc.wantSays) ||
				!strings.HasSuffix(out, "clusterapprovalrequest.placement.kubernetes-fleet.io/example-run-after-canary approved\n") {
				t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			if c := readApproved(t, repo, canaryApproval); c == nil || c.ObservedGeneration != 1 || c.Status != metav1.ConditionTrue {
				t.Errorf("Approved condition = %+v, want True at observedGeneration 1", c)
			}
		})
	}
}

// --branch B creates B from HEAD and commits the approval alone on it, with
// the person's git identity, ready to push for a pull request; --commit
// commits on the current branch.
func TestApproveCommits(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		wantBranch string
		existing   bool
		wantSays   string
	}{
		{"on a new branch", []string{"--branch", "approve-canary"}, "approve-canary", false,
			"on branch approve-canary; push it (git push -u origin approve-canary) and merge it"},
		{"on an existing branch", []string{"--branch", "approve-canary"}, "approve-canary", true,
			"on branch approve-canary; push it (git push -u origin approve-canary) and merge it"},
		{"on the current branch", []string{"--commit"}, "main", false,
			"on branch main; the approval counts once it reaches the branch gitfleet tracks (git push)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, kv := range gitEnv {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			t.Setenv("GIT_AUTHOR_NAME", "Approver")
			repo := demoRepo(t)
			base := gitCmd(t, repo, "rev-parse", "HEAD")
			if tc.existing {
				gitCmd(t, repo, "branch", "approve-canary")
			}
			out, errOut, code := gitfleet(t, append([]string{"approve", "example-run-after-canary", "--repo", repo}, tc.args...)...)
			if code != 0 || errOut != "" || !strings.Contains(out, tc.wantSays) {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			if got := gitCmd(t, repo, "branch", "--show-current"); got != tc.wantBranch {
				t.Errorf("current branch %q, want %q", got, tc.wantBranch)
			}
			if got := gitCmd(t, repo, "rev-parse", "HEAD~1"); got != base {
				t.Errorf("the approval commit's parent is %s, want %s", got, base)
			}
			if got := gitCmd(t, repo, "log", "-1", "--format=%an|%s"); got != "Approver|approve example-run-after-canary" {
				t.Errorf("commit author and subject = %q", got)
			}
			if got := gitCmd(t, repo, "diff", "--name-only", "HEAD~1", "HEAD"); got != canaryApproval {
				t.Errorf("commit changes %q, want only %s", got, canaryApproval)
			}
			if st := gitCmd(t, repo, "status", "--porcelain"); st != "" {
				t.Errorf("working tree not clean: %q", st)
			}
			if c := readApproved(t, repo, canaryApproval); c == nil || c.ObservedGeneration != 1 {
				t.Errorf("Approved condition = %+v", c)
			}
		})
	}
}

// An approval written earlier and not committed yet is committed by a
// later --commit, even though the file needs no change.
func TestApproveCommitsAnEarlierUncommittedApproval(t *testing.T) {
	for _, kv := range gitEnv {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	repo := demoRepo(t)
	gitfleet(t, "approve", "example-run-after-canary", "--repo", repo)
	out, errOut, code := gitfleet(t, "approve", "example-run-after-canary", "--repo", repo, "--commit", "--message", "release canary")
	if code != 0 || errOut != "" || !strings.Contains(out, "already approved") || !strings.Contains(out, "committed ") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got := gitCmd(t, repo, "log", "-1", "--format=%B"); got != "release canary" {
		t.Errorf("commit message %q", got)
	}
	out, _, _ = gitfleet(t, "approve", "example-run-after-canary", "--repo", repo, "--commit")
	if !strings.Contains(out, "nothing to commit") {
		t.Errorf("stdout %q", out)
	}
}

// Namespaced requests live one folder deeper; without -n approve points at
// the file it found.
func TestApproveFindsNamespacedRequests(t *testing.T) {
	repo := t.TempDir()
	ar := `apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ApprovalRequest
metadata:
  generation: 1
  name: web-app-rollout-after-canary
  namespace: my-app-namespace
spec:
  parentStageRollout: web-app-rollout
  targetStage: canary
`
	p := filepath.Join(repo, "approvals", "my-app-namespace", "web-app-rollout-after-canary.yaml")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(ar), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := gitfleet(t, "approve", "web-app-rollout-after-canary", "--repo", repo)
	if code != 1 || !strings.Contains(errOut, "no approvals/web-app-rollout-after-canary.yaml in "+repo) ||
		!strings.Contains(errOut, "use -n my-app-namespace") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	out, errOut, code := gitfleet(t, "approve", "web-app-rollout-after-canary", "-n", "my-app-namespace", "--repo", repo)
	if code != 0 || out != "approvalrequest.placement.kubernetes-fleet.io/web-app-rollout-after-canary approved\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	c := readApproved(t, repo, "approvals/my-app-namespace/web-app-rollout-after-canary.yaml")
	if c == nil || c.Reason != "ApprovalRequestApproved" || c.Message != "ApprovalRequest has been approved" || c.ObservedGeneration != 1 {
		t.Errorf("Approved condition = %+v", c)
	}
}

func TestApproveNamesTheFileItCannotUse(t *testing.T) {
	repo := demoRepo(t)
	if err := os.WriteFile(filepath.Join(repo, "approvals", "typo.yaml"), []byte("apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterApprovalRequest\nmetadata:\n  name: typo\nspec:\n  parentStageRollout: x\n  targetStag: canary\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, want string
	}{
		{"missing", "approval request missing not found: no approvals/missing.yaml in " + repo},
		{"typo", `approvals/typo.yaml: unknown field "spec.targetStag"`},
	} {
		if _, errOut, code := gitfleet(t, "approve", tc.name, "--repo", repo); code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("approve %s: exit %d, stderr %q, want it to contain %q", tc.name, code, errOut, tc.want)
		}
	}
}

// A name that matches no request leaves the person on their branch.
func TestApproveDoesNotSwitchBranchForAMissingRequest(t *testing.T) {
	repo := demoRepo(t)
	if _, _, code := gitfleet(t, "approve", "example-run-after-stagign", "--branch", "approve", "--repo", repo); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if got := gitCmd(t, repo, "branch", "--list", "approve"); got != "" {
		t.Errorf("branch approve was created")
	}
}

// Shell completion offers the requests still waiting for a person.
func TestApproveCompletesPendingRequests(t *testing.T) {
	repo := demoRepo(t)
	out, _, _ := gitfleet(t, "__complete", "approve", "--repo", repo, "")
	if !strings.HasPrefix(out, "example-run-after-canary\n:4\n") {
		t.Errorf("completion before approving = %q", out)
	}
	gitfleet(t, "approve", "example-run-after-canary", "--repo", repo)
	if out, _, _ = gitfleet(t, "__complete", "approve", "--repo", repo, ""); !strings.HasPrefix(out, ":4\n") {
		t.Errorf("completion after approving = %q", out)
	}
}

// A request file broken by an edit is repaired from its newest version in
// the history that reads, and approved, instead of ending with exit 1.
func TestApproveRepairsABrokenRequestFile(t *testing.T) {
	repo := demoRepo(t)
	if err := os.WriteFile(filepath.Join(repo, canaryApproval), []byte("status: [approved\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitCmd(t, repo, "commit", "-q", "-am", "a broken edit")
	out, errOut, code := gitfleet(t, "approve", "example-run-after-canary", "--repo", repo)
	if code != 0 || !strings.Contains(out, "repaired: "+canaryApproval+" did not read") || !strings.Contains(out, "approved\n") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if c := readApproved(t, repo, canaryApproval); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != 1 {
		t.Errorf("Approved condition after the repair = %+v", c)
	}
}
