package placement_test

import (
	"testing"
	"time"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// The per-cluster statuses carry the bindings' drifted and diffed
// placements as KubeFleet's placement controller copies them: drifts
// whatever Applied says, diffs with a False Applied or a True DiffReported.
func TestDriftAndDiffInPlacementStatus(t *testing.T) {
	strategy := func(s fleet.ApplyStrategy) option {
		return func(p *fleet.Placement, _ []*fleet.MemberCluster) { p.Spec.Strategy.ApplyStrategy = &s }
	}
	for _, tt := range []struct {
		name string
		opt  option
	}{
		{name: "drifted-member", opt: strategy(fleet.ApplyStrategy{WhenToApply: fleet.WhenToApplyTypeIfNotDrifted})},
		{name: "reportdiff-nothing-placed-yet", opt: strategy(fleet.ApplyStrategy{Type: fleet.ApplyStrategyTypeReportDiff})},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := newDemo(t, "", tt.opt)
			for _, c := range []string{"member1", "member2", "member3"} {
				d.roll(c, 1)
			}
			// Someone edits member2's ConfigMap after the apply.
			d.clk.Advance(time.Minute)
			m := seedMember("member2", "environment", "staging")
			m.Annotations[fleet.SimDriftAnnotation] = "ConfigMap/test-namespace/test-cm:/data/key=edited-by-hand"
			d.hub.ApplyMemberCluster(m)
			d.must(d.hub.Commit(d.ctx))
			d.clk.Advance(time.Minute)
			goldenPlacement(t, tt.name, d.status())
		})
	}
}
