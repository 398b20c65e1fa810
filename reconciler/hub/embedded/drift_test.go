package embedded_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/golden"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

const cmDrift = "ConfigMap/test-namespace/test-cm:/data/key=edited-by-hand"

func (f *fixture) bindWith(cluster string, s fleet.ApplyStrategy) {
	f.t.Helper()
	b := f.binding(cluster)
	b.Spec.State = fleet.BindingStateBound
	b.Spec.ResourceSnapshotName = placementName + "-0-snapshot"
	b.Spec.ApplyStrategy = fleet.DefaultApplyStrategy(&s)
	f.start(b)
	must(f.t, f.hub.Commit(f.ctx))
}

func goldenStatus(t *testing.T, name string, b *fleet.Binding) {
	t.Helper()
	out, err := yaml.Marshal(b.Status)
	must(t, err)
	golden.Assert(t, name, out)
}

// A simulated member edited after the apply (sim-drift) shows drift
// detection: under IfNotDrifted the redelivery finds the drift, applies
// nothing and reports it; the drift's first observed time survives a
// later check that finds the same drift.
func TestASimulatedDriftIsReportedUnderIfNotDrifted(t *testing.T) {
	f := newFixture(t, simulated("member1"))
	f.bindWith("member1", fleet.ApplyStrategy{WhenToApply: fleet.WhenToApplyTypeIfNotDrifted})
	wantCond(t, f.binding("member1"), fleet.ResourceBindingAvailable, metav1.ConditionTrue, member.AllWorkAvailableReason)

	f.clk.Advance(60e9)
	f.hub.ApplyMemberCluster(simulated("member1", fleet.SimDriftAnnotation, cmDrift))
	must(t, f.hub.Commit(f.ctx))
	b := f.binding("member1")
	wantCond(t, b, fleet.ResourceBindingApplied, metav1.ConditionFalse, member.WorkNotAppliedReason)
	goldenStatus(t, "drift/ifnotdrifted-binding-status.yaml", b)

	// The same drift seen again later changes nothing.
	f.clk.Advance(60e9)
	f.hub.ApplyMemberCluster(simulated("member1", fleet.SimDriftAnnotation, cmDrift+";"))
	must(t, f.hub.Commit(f.ctx))
	if again := f.binding("member1"); !fleet.SameDriftedPlacements(again.Status.DriftedPlacements, b.Status.DriftedPlacements) {
		t.Errorf("drifted placements changed on a second check of the same drift:\n%+v\nwas\n%+v", again.Status.DriftedPlacements, b.Status.DriftedPlacements)
	}
}

func TestASimulatedDriftIsRestoredUnderAlways(t *testing.T) {
	f := newFixture(t, simulated("member1"))
	f.bindWith("member1", fleet.ApplyStrategy{})
	f.hub.ApplyMemberCluster(simulated("member1", fleet.SimDriftAnnotation, cmDrift))
	must(t, f.hub.Commit(f.ctx))
	b := f.binding("member1")
	wantCond(t, b, fleet.ResourceBindingAvailable, metav1.ConditionTrue, member.AllWorkAvailableReason)
	if len(b.Status.DriftedPlacements) != 0 {
		t.Errorf("drifted = %+v, want none: the apply owns the field", b.Status.DriftedPlacements)
	}
}

func TestReportDiffOnASimulatedMemberReportsEachResource(t *testing.T) {
	f := newFixture(t, simulated("member1"))
	f.bindWith("member1", fleet.ApplyStrategy{})
	f.hub.ApplyMemberCluster(simulated("member1", fleet.SimDriftAnnotation, cmDrift))
	must(t, f.hub.Commit(f.ctx))

	// Now report the diff of a new snapshot, whose ConfigMap differs too.
	f.snapshot(1, "value2")
	b := f.binding("member1")
	b.Spec.ResourceSnapshotName = placementName + "-1-snapshot"
	b.Spec.ApplyStrategy = fleet.DefaultApplyStrategy(&fleet.ApplyStrategy{Type: fleet.ApplyStrategyTypeReportDiff})
	f.start(b)
	must(t, f.hub.Commit(f.ctx))
	b = f.binding("member1")
	wantCond(t, b, fleet.ResourceBindingDiffReported, metav1.ConditionTrue, member.AllWorkDiffReportedReason)
	goldenStatus(t, "drift/reportdiff-binding-status.yaml", b)
}

// A member that drifts from the start (as in `gitfleet simulate`) reports
// the drift with its first delivery, as its first check after the apply
// would.
func TestASimulatedMemberDriftingFromTheStartReportsIt(t *testing.T) {
	f := newFixture(t, simulated("member1", fleet.SimDriftAnnotation, cmDrift))
	f.bindWith("member1", fleet.ApplyStrategy{WhenToApply: fleet.WhenToApplyTypeIfNotDrifted})
	b := f.binding("member1")
	wantCond(t, b, fleet.ResourceBindingApplied, metav1.ConditionFalse, member.WorkNotAppliedReason)
	if len(b.Status.DriftedPlacements) != 1 || b.Status.DriftedPlacements[0].ObservedDrifts[0].ValueInMember != "edited-by-hand" {
		t.Errorf("drifted = %+v, want test-cm's /data/key", b.Status.DriftedPlacements)
	}
	if c := cond(b, fleet.ResourceBindingAvailable); c != nil {
		t.Errorf("Available = %+v, want none while Applied is False", c)
	}
}

func TestAnInvalidSimDriftAnnotationIsReported(t *testing.T) {
	f := newFixture(t, simulated("member1", fleet.SimDriftAnnotation, "ConfigMap/test-cm:/data/key=x"))
	f.bindWith("member1", fleet.ApplyStrategy{})
	c := cond(f.binding("member1"), fleet.ResourceBindingApplied)
	want := `member cluster "member1" has an invalid gitfleet.io/sim-drift annotation entry "ConfigMap/test-cm:/data/key=x": want <kind>/<namespace>/<name>:<JSON pointer>=<value>, such as ConfigMap/app/settings:/data/color=red`
	if c == nil || c.Reason != member.InvalidSimulationReason || c.Message != want {
		t.Errorf("Applied = %+v, want %s: %s", c, member.InvalidSimulationReason, want)
	}
}
