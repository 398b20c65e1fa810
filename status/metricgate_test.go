package status

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/gittest"
	"github.com/gitfleet/gitfleet/reconciler/updaterun"
)

// failingPrometheus answers every evaluation with an error.
type failingPrometheus struct{}

func (failingPrometheus) Evaluate(updaterun.MetricQuery) (updaterun.MetricResult, bool) {
	return updaterun.MetricResult{Err: errors.New("connection refused")}, true
}

// A person approves a gated request by merging its approval branch, which
// gitfleet pushed when the file held the gate's first evaluation: the
// gate's later evidence, committed on the tracked branch meanwhile, sits
// in other lines of the file (status.metricGate, after status.conditions),
// so the merge is clean and keeps both — the person's Approved condition,
// which overrides the gate, and every evaluation up to the merge.
func TestMergingTheApprovalBranchKeepsTheGatesLaterEvidence(t *testing.T) {
	gittest.Require(t, "git")
	dir := t.TempDir()
	const file = "approvals/run-after-canary.yaml"
	write := func(a *fleet.ApprovalRequest) {
		t.Helper()
		data, err := Encode(a)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, "approvals"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
			t.Fatal(err)
		}
		gittest.Must(t, dir, "add", "-A")
		gittest.Must(t, dir, "commit", "-q", "-m", "status")
	}
	gate := &fleet.MetricGate{Query: "max(app_error_ratio)", Threshold: fleet.MetricThreshold{Operator: "<", Value: "0.05"}}
	ar := updaterun.NewApprovalRequest("", "run-after-canary", "run", "canary", fleet.AfterStageTaskLabelValue)
	ar.Generation = 1
	ar.Status.MetricGate = updaterun.NewMetricGateRecord(gate, t0)
	step := func(at time.Time) {
		updaterun.StepMetricGate(gate, ar.Status.MetricGate, at, failingPrometheus{}, updaterun.MetricQuery{}, nil)
	}
	step(t0)
	gittest.Must(t, dir, "init", "-q", "-b", "main")
	write(ar)
	gittest.Must(t, dir, "checkout", "-q", "-b", "gitfleet/approve/run-after-canary")
	write(ApprovedCopy(ar, t0.Add(time.Second)))
	gittest.Must(t, dir, "checkout", "-q", "main")
	for i := 1; i <= 3; i++ {
		step(t0.Add(time.Duration(i) * time.Minute))
		write(ar)
	}

	gittest.Must(t, dir, "merge", "--no-ff", "-q", "-m", "approve", "gitfleet/approve/run-after-canary")
	data, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	obj, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	merged := obj.(*fleet.ApprovalRequest)
	if !meta.IsStatusConditionTrue(merged.Status.Conditions, fleet.ApprovalRequestConditionApproved) {
		t.Errorf("the merge lost the person's approval:\n%s", data)
	}
	if rec := merged.Status.MetricGate; rec == nil || rec.EvaluationCount != 4 || len(rec.Evaluations) != 4 {
		t.Errorf("the merge lost the gate's later evidence:\n%s", data)
	}
}
