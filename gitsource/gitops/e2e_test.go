package gitops_test

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/status"
)

const approvalName = "example-run-after-canary"

// waitForCanaryApproval starts from a pushed quickstart and returns once the
// run waits on the canary approval, with its request file in Git.
func waitForCanaryApproval(t *testing.T, r *fleetRepo) {
	t.Helper()
	run := r.waitPhase("example-run", fleet.PhaseWaiting)
	eventually(t, "the approval request file", func() bool { return r.approval(approvalName) != nil })
	if got := meta.FindStatusCondition(run.Status.Conditions, fleet.StagedUpdateRunConditionProgressing); got == nil ||
		!strings.Contains(got.Message, "stage canary") {
		// The staging wait may still be the one pending: wait for canary.
		eventually(t, "the run to wait in stage canary", func() bool {
			run := r.run("example-run")
			c := meta.FindStatusCondition(run.Status.Conditions, fleet.StagedUpdateRunConditionProgressing)
			return c != nil && c.Reason == fleet.UpdateRunWaitingReason && strings.Contains(c.Message, "stage canary")
		})
	}
}

func TestApprovalCommitCompletesTheRun(t *testing.T) {
	r := newFleetRepo(t, quickstartFleet(t))
	startDaemon(t, "file://"+r.remote, t.TempDir(), 50*time.Millisecond)
	waitForCanaryApproval(t, r)

	ar := r.approval(approvalName)
	r.commit("approve the canary", map[string][]byte{"approvals/" + approvalName + ".yaml": encode(t, status.ApprovedCopy(ar, time.Now()))})

	run := r.waitPhase("example-run", fleet.PhaseSucceeded)
	if run.Status.ResourceSnapshotIndexUsed != "0" {
		t.Errorf("run used snapshot %q, want 0", run.Status.ResourceSnapshotIndexUsed)
	}
	eventually(t, "ApprovalAccepted in the approval file", func() bool {
		return meta.IsStatusConditionTrue(r.approval(approvalName).Status.Conditions, fleet.ApprovalRequestConditionApprovalAccepted)
	})
	for _, member := range []string{"member1", "member2", "member3"} {
		b := r.object("status/bindings/example-placement/" + member + ".yaml").(*fleet.Binding)
		if b.Spec.ResourceSnapshotName != "example-placement-0-snapshot" || !meta.IsStatusConditionTrue(b.Status.Conditions, fleet.ResourceBindingAvailable) {
			t.Errorf("binding of %s: snapshot %q, conditions %v", member, b.Spec.ResourceSnapshotName, b.Status.Conditions)
		}
	}
}

func TestMergingTheApproveBranchApproves(t *testing.T) {
	r := newFleetRepo(t, quickstartFleet(t))
	startDaemon(t, "file://"+r.remote, t.TempDir(), 50*time.Millisecond)
	waitForCanaryApproval(t, r)
	eventually(t, "the gitfleet/approve branch", func() bool {
		return strings.Contains(gitCmd(t, r.work, "ls-remote", "--heads", "origin"), "refs/heads/gitfleet/approve/"+approvalName)
	})

	// What a person does when merging the pull request.
	r.merge("gitfleet/approve/"+approvalName, "Merge pull request: approve canary")

	r.waitPhase("example-run", fleet.PhaseSucceeded)
	a := r.approval(approvalName)
	approved := meta.FindStatusCondition(a.Status.Conditions, fleet.ApprovalRequestConditionApproved)
	if approved == nil || approved.ObservedGeneration != 1 {
		t.Fatalf("merged approval has Approved %+v, want observedGeneration 1", approved)
	}
	// Accepted, the request needs its branch no more.
	eventually(t, "the merged gitfleet/approve branch to be deleted", func() bool {
		return !strings.Contains(gitCmd(t, r.work, "ls-remote", "--heads", "origin"), "refs/heads/gitfleet/approve/"+approvalName)
	})
}

// The request records who approved it (gitfleet.io/approved-by): the
// person whose --no-ff merge of gitfleet's approval branch changed its
// file; a fast-forward leaves gitfleet's own commit as the change, so
// gitfleet is named.
func TestTheApprovalRecordsWhoMerged(t *testing.T) {
	const branch = "gitfleet/approve/" + approvalName
	for _, tc := range []struct {
		name  string
		merge []string
	}{
		{"a merge by a person", []string{"merge", "-q", "--no-ff", "-m", "Merge pull request: approve canary", "origin/" + branch}},
		// A fast-forward where main has not moved since the branch was
		// pushed, else what a forge's rebase-merge does: gitfleet's commit
		// on main's tip, still authored by gitfleet.
		{"a fast-forward", []string{"cherry-pick", "--ff", "origin/" + branch}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newFleetRepo(t, quickstartFleet(t))
			startDaemon(t, "file://"+r.remote, t.TempDir(), 50*time.Millisecond)
			waitForCanaryApproval(t, r)
			eventually(t, "the gitfleet/approve branch", func() bool {
				return strings.Contains(gitCmd(t, r.work, "ls-remote", "--heads", "origin"), "refs/heads/"+branch)
			})
			var want string
			for i := 0; ; i++ {
				gitCmd(t, r.work, "fetch", "-q", "origin")
				gitCmd(t, r.work, "checkout", "-q", "-B", "main", "origin/main")
				_, err := gitRun(r.work, tc.merge...)
				if err == nil {
					want = gitCmd(t, r.work, "log", "-1", "--format=%an <%ae> (%p|%H)", "HEAD")
					_, err = gitRun(r.work, "push", "-q", "origin", "HEAD:main")
				}
				if err == nil {
					break
				} else if i == 20 {
					t.Fatal(err)
				}
			}
			who, commit, _ := strings.Cut(want, " (")
			parents, hash, _ := strings.Cut(strings.TrimSuffix(commit, ")"), "|")
			kind := "commit"
			if strings.Contains(parents, " ") {
				kind = "merge commit"
			}
			want = who + " (" + kind + " " + hash[:12] + ")"
			if tc.name == "a fast-forward" && strings.HasPrefix(want, "dev <") {
				t.Fatalf("the approval branch's commit is the test person's (%s), not gitfleet's", want)
			}

			r.waitPhase("example-run", fleet.PhaseSucceeded)
			var got string
			eventually(t, "the approval request to name who approved", func() bool {
				got = r.approval(approvalName).Annotations[fleet.ApprovedByAnnotation]
				return got != ""
			})
			if got != want {
				t.Errorf("%s = %q, want %q", fleet.ApprovedByAnnotation, got, want)
			}
		})
	}
}

func TestApprovalWithWrongGenerationIsIgnoredAndExplained(t *testing.T) {
	r := newFleetRepo(t, quickstartFleet(t))
	startDaemon(t, "file://"+r.remote, t.TempDir(), 50*time.Millisecond)
	waitForCanaryApproval(t, r)

	ar := status.ApprovedCopy(r.approval(approvalName), time.Now())
	ar.Status.Conditions[0].ObservedGeneration = 0 // the seeds' top troubleshooting item
	r.commit("approve, by hand", map[string][]byte{"approvals/" + approvalName + ".yaml": encode(t, ar)})

	var task *fleet.StageTaskStatus
	eventually(t, "the run to explain the ignored approval", func() bool {
		run := r.run("example-run")
		task = &run.Status.StagesStatus[1].AfterStageTaskStatus[0]
		c := meta.FindStatusCondition(task.Conditions, fleet.StageTaskConditionApprovalRequestApproved)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == fleet.StageTaskApprovalIgnoredReason
	})
	c := meta.FindStatusCondition(task.Conditions, fleet.StageTaskConditionApprovalRequestApproved)
	if !strings.Contains(c.Message, "observedGeneration 0") {
		t.Errorf("explanation %q does not name the wrong observedGeneration", c.Message)
	}
	if phase := r.run("example-run").Phase(); phase != fleet.PhaseWaiting {
		t.Errorf("run is %s after a wrong-generation approval, want Waiting", phase)
	}
	if meta.IsStatusConditionTrue(r.approval(approvalName).Status.Conditions, fleet.ApprovalRequestConditionApprovalAccepted) {
		t.Error("a wrong-generation approval was accepted")
	}
}

func TestConfigChangeRecordsSnapshotAndRunsRollOutAndBack(t *testing.T) {
	files := quickstartFleet(t)
	r := newFleetRepo(t, files)
	startDaemon(t, "file://"+r.remote, t.TempDir(), 50*time.Millisecond)
	approve := func(name string) {
		eventually(t, "approval request "+name, func() bool { return r.approval(name) != nil })
		r.commit("approve "+name, map[string][]byte{"approvals/" + name + ".yaml": encode(t, status.ApprovedCopy(r.approval(name), time.Now()))})
	}
	approve(approvalName)
	r.waitPhase("example-run", fleet.PhaseSucceeded)

	v2 := strings.Replace(string(files["workload.yaml"]), "key: value1", "key: value2", 1)
	commit := r.commit("value2", map[string][]byte{"workload.yaml": []byte(v2)})
	eventually(t, "resource snapshot 1", func() bool { return r.file("status/snapshots/example-placement/1.yaml") != nil })
	snap := r.object("status/snapshots/example-placement/1.yaml").(*fleet.ResourceSnapshot)
	if snap.Annotations[fleet.CommitAnnotation] != commit {
		t.Errorf("snapshot 1 records commit %q, want %s", snap.Annotations[fleet.CommitAnnotation], commit)
	}
	if !strings.Contains(string(r.file("status/snapshots/example-placement/1.yaml")), "value2") {
		t.Error("snapshot 1 does not hold the new config map value")
	}
	// Runs configured by gitfleet's own status commits record nothing new.
	if r.file("status/snapshots/example-placement/2.yaml") != nil {
		t.Fatal("a snapshot was recorded for a commit that changed no resources")
	}

	run2 := strings.ReplaceAll(string(files["run.yaml"]), "name: example-run", "name: example-run-2")
	r.commit("run 2", map[string][]byte{"run-2.yaml": []byte(run2)})
	approve("example-run-2-after-canary")
	done := r.waitPhase("example-run-2", fleet.PhaseSucceeded)
	if done.Status.ResourceSnapshotIndexUsed != "1" {
		t.Errorf("second run used snapshot %q, want the latest, 1", done.Status.ResourceSnapshotIndexUsed)
	}

	rollback := strings.Replace(run2, "name: example-run-2", "name: rollback", 1)
	rollback = strings.Replace(rollback, "  placementName: example-placement\n", "  placementName: example-placement\n  resourceSnapshotIndex: \"0\"\n", 1)
	r.commit("roll back to snapshot 0", map[string][]byte{"rollback.yaml": []byte(rollback)})
	approve("rollback-after-canary")
	back := r.waitPhase("rollback", fleet.PhaseSucceeded)
	if back.Status.ResourceSnapshotIndexUsed != "0" {
		t.Errorf("rollback used snapshot %q, want 0", back.Status.ResourceSnapshotIndexUsed)
	}
	for _, member := range []string{"member1", "member2", "member3"} {
		b := r.object("status/bindings/example-placement/" + member + ".yaml").(*fleet.Binding)
		if b.Spec.ResourceSnapshotName != "example-placement-0-snapshot" {
			t.Errorf("after the rollback %s is bound to %s", member, b.Spec.ResourceSnapshotName)
		}
	}
}

// A person's commit that breaks an approval request file (here: not YAML
// any more) approves nothing, and gitfleet writes its record back, so the
// file can be approved as usual; the run then finishes.
func TestABrokenApprovalFileIsRewrittenFromGitfleetsRecord(t *testing.T) {
	r := newFleetRepo(t, quickstartFleet(t))
	startDaemon(t, "file://"+r.remote, t.TempDir(), 50*time.Millisecond)
	waitForCanaryApproval(t, r)
	path := "approvals/" + approvalName + ".yaml"
	broken := r.commit("oops", map[string][]byte{path: []byte("status: [approved\n")})
	eventually(t, "the approval request file rewritten by gitfleet", func() bool {
		_, err := status.DecodeFile(path, r.file(path))
		return r.file(path) != nil && err == nil
	})
	got := r.approval(approvalName)
	if got.Spec.TargetStage != "canary" {
		t.Fatalf("rewritten request: %+v", got.Spec)
	}
	note := got.Annotations[fleet.RejectedChangeAnnotation]
	if !strings.Contains(note, path) || !strings.Contains(note, broken[:7]) {
		t.Errorf("rewritten request's %s note %q names neither the file nor the commit %s", fleet.RejectedChangeAnnotation, note, broken[:7])
	}
	eventually(t, "the run's approval task to report the broken file", func() bool {
		c := meta.FindStatusCondition(r.run("example-run").Status.StagesStatus[1].AfterStageTaskStatus[0].Conditions,
			fleet.StageTaskConditionApprovalRequestApproved)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == fleet.StageTaskApprovalIgnoredReason &&
			strings.Contains(c.Message, path)
	})
	r.approve(approvalName)
	r.waitPhase("example-run", fleet.PhaseSucceeded)
	if note := r.approval(approvalName).Annotations[fleet.RejectedChangeAnnotation]; note != "" {
		t.Errorf("the note outlived the approval: %q", note)
	}
}
