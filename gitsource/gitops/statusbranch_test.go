package gitops_test

import (
	"context"
	"io"
	"log/slog"
	"os/exec"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/status"
)

// With --status-branch, status/ lives on its own branch and main carries
// only people's commits and approvals/; a restart reads the status back
// from that branch.
func TestStatusBranchKeepsStatusOffTheTrackedBranch(t *testing.T) {
	r := newFleetRepo(t, quickstartFleet(t))
	start := func(cache string) *daemon {
		ctx, cancel := context.WithCancel(context.Background())
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		return startDaemonSource(t, ctx, cancel, log, gitsource.Config{URL: "file://" + r.remote, Branch: "main",
			StatusBranch: "gitfleet-status", CacheDir: cache, Logger: log}, 50*time.Millisecond, nil)
	}
	onStatus := func(path string) []byte {
		out, err := exec.Command("git", "--git-dir", r.remote, "show", "gitfleet-status:"+path).Output()
		if err != nil {
			return nil
		}
		return out
	}
	runOnStatus := func() *fleet.UpdateRun {
		data := onStatus("status/runs/example-run.yaml")
		if data == nil {
			return nil
		}
		obj, err := status.DecodeFile("status/runs/example-run.yaml", data)
		if err != nil {
			t.Fatal(err)
		}
		return obj.(*fleet.UpdateRun)
	}

	d := start(t.TempDir())
	eventually(t, "the approval request on main", func() bool { return r.approval(approvalName) != nil })
	eventually(t, "the run waiting on the status branch", func() bool {
		run := runOnStatus()
		return run != nil && run.Phase() == fleet.PhaseWaiting && len(run.Status.StagesStatus[1].AfterStageTaskStatus[0].Conditions) > 0
	})
	if r.file("status/runs/example-run.yaml") != nil {
		t.Fatal("status/ was written to main despite the status branch")
	}
	if onStatus("approvals/"+approvalName+".yaml") != nil {
		t.Error("approvals/ was written to the status branch; people approve on main")
	}
	// gitfleet's commit on main holds only approvals/, and says so.
	if out, err := exec.Command("git", "--git-dir", r.remote, "log", "-1", "--format=%s", "main", "--", "approvals").Output(); err != nil ||
		string(out) != "status: approval request "+approvalName+" updated\n" {
		t.Errorf("the commit of approvals/ on main is titled %q (%v), want it to name the approval request", out, err)
	}

	// Restart in an empty cache, then approve on main.
	d.stop(t)
	start(t.TempDir())
	r.commit("approve", map[string][]byte{"approvals/" + approvalName + ".yaml": encode(t, status.ApprovedCopy(r.approval(approvalName), time.Now()))})
	eventually(t, "the run to succeed on the status branch", func() bool {
		run := runOnStatus()
		return run != nil && run.Phase() == fleet.PhaseSucceeded
	})
	eventually(t, "ApprovalAccepted in the approval file on main", func() bool {
		return meta.IsStatusConditionTrue(r.approval(approvalName).Status.Conditions, fleet.ApprovalRequestConditionApprovalAccepted)
	})
	if r.file("status/runs/example-run.yaml") != nil {
		t.Error("status/ reached main")
	}
}
