package embedded_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

func appliedCond(status metav1.ConditionStatus, reason string, gen int64) metav1.Condition {
	return metav1.Condition{Type: fleet.ResourceBindingApplied, Status: status, Reason: reason, ObservedGeneration: gen}
}

func TestReportBindingStatus(t *testing.T) {
	key := hub.Key{Name: bindingName("member1")}
	rolloutStarted := metav1.Condition{Type: fleet.ResourceBindingRolloutStarted, Status: metav1.ConditionTrue,
		Reason: fleet.RolloutStartedReason, LastTransitionTime: metav1.NewTime(t0)}

	tests := []struct {
		name string
		// first report (at the binding's generation), then a second one
		// after a minute, at generation gen+genDelta
		first, second []metav1.Condition
		genDelta      int64
		wantWrite     bool
		wantStatus    metav1.ConditionStatus
		wantLTT       time.Time
	}{
		{name: "a repeated report writes nothing",
			first:      []metav1.Condition{appliedCond(metav1.ConditionTrue, "AllWorkHaveBeenApplied", 0)},
			second:     []metav1.Condition{appliedCond(metav1.ConditionTrue, "AllWorkHaveBeenApplied", 0)},
			wantStatus: metav1.ConditionTrue, wantLTT: t0},
		{name: "a report for an older generation is ignored", genDelta: -1,
			first:      []metav1.Condition{appliedCond(metav1.ConditionTrue, "AllWorkHaveBeenApplied", 0)},
			second:     []metav1.Condition{appliedCond(metav1.ConditionFalse, "Broken", 0)},
			wantStatus: metav1.ConditionTrue, wantLTT: t0},
		{name: "a status change moves the transition time", wantWrite: true,
			first:      []metav1.Condition{appliedCond(metav1.ConditionFalse, "ApplyPending", 0)},
			second:     []metav1.Condition{appliedCond(metav1.ConditionTrue, "AllWorkHaveBeenApplied", 0)},
			wantStatus: metav1.ConditionTrue, wantLTT: t0.Add(time.Minute)},
		{name: "a new reason keeps the transition time", wantWrite: true,
			first:      []metav1.Condition{appliedCond(metav1.ConditionFalse, "ApplyPending", 0)},
			second:     []metav1.Condition{appliedCond(metav1.ConditionFalse, "Conflict", 0)},
			wantStatus: metav1.ConditionFalse, wantLTT: t0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, simulated("member1"))
			b := f.binding("member1")
			b.Status.Conditions = []metav1.Condition{rolloutStarted}
			must(t, f.hub.UpdateBindingStatus(f.ctx, b))
			gen := f.binding("member1").Generation

			must(t, f.hub.Delivery().ReportBindingStatus(key, gen, atGen(tt.first, gen), member.Placements{}))
			before := f.binding("member1")
			f.clk.Advance(time.Minute)
			must(t, f.hub.Delivery().ReportBindingStatus(key, gen+tt.genDelta, atGen(tt.second, gen+tt.genDelta), member.Placements{}))
			after := f.binding("member1")

			if wrote := after.ResourceVersion != before.ResourceVersion; wrote != tt.wantWrite {
				t.Fatalf("second report wrote = %v, want %v", wrote, tt.wantWrite)
			}
			c := cond(after, fleet.ResourceBindingApplied)
			if c.Status != tt.wantStatus || !c.LastTransitionTime.Time.Equal(tt.wantLTT) {
				t.Fatalf("Applied = %s since %s, want %s since %s", c.Status, c.LastTransitionTime, tt.wantStatus, tt.wantLTT)
			}
			if rs := cond(after, fleet.ResourceBindingRolloutStarted); rs == nil || rs.Status != metav1.ConditionTrue {
				t.Fatalf("the run's RolloutStarted condition was touched: %+v", after.Status.Conditions)
			}
		})
	}
}

func atGen(conds []metav1.Condition, gen int64) []metav1.Condition {
	out := make([]metav1.Condition, len(conds))
	for i, c := range conds {
		c.ObservedGeneration = gen
		out[i] = c
	}
	return out
}

func TestReportReplacesDeliveryConditions(t *testing.T) {
	f := newFixture(t, simulated("member1"))
	key := hub.Key{Name: bindingName("member1")}
	gen := f.binding("member1").Generation
	available := metav1.Condition{Type: fleet.ResourceBindingAvailable, Status: metav1.ConditionTrue, Reason: "AllWorkAreAvailable", ObservedGeneration: gen}
	must(t, f.hub.Delivery().ReportBindingStatus(key, gen, []metav1.Condition{appliedCond(metav1.ConditionTrue, "AllWorkHaveBeenApplied", gen), available}, member.Placements{}))
	must(t, f.hub.Delivery().ReportBindingStatus(key, gen, []metav1.Condition{appliedCond(metav1.ConditionFalse, "ApplyFailed", gen)}, member.Placements{}))
	if c := cond(f.binding("member1"), fleet.ResourceBindingAvailable); c != nil {
		t.Fatalf("Available kept after a report without it: %+v", c)
	}
}

func TestReportOnAMissingBindingIsIgnored(t *testing.T) {
	f := newFixture(t)
	if err := f.hub.Delivery().ReportBindingStatus(hub.Key{Name: "gone"}, 1, nil, member.Placements{}); err != nil {
		t.Fatalf("report on a missing binding: %v", err)
	}
}
