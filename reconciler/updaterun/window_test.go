package updaterun

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

var weekdayHours = []fleet.WeeklyWindow{{Days: []string{"Mon", "Tue", "Wed", "Thu", "Fri"}, Start: "09:00", End: "17:00"}}

func (e *env) window(name, zone string, windows []fleet.WeeklyWindow, freezes ...fleet.Freeze) {
	e.t.Helper()
	w := &fleet.RolloutWindow{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: fleet.RolloutWindowSpec{TimeZone: zone, Windows: windows, Freezes: freezes}}
	if errs := fleet.ValidateRolloutWindow(w); len(errs) > 0 {
		e.t.Fatal(errs)
	}
	if err := e.h.Apply(e.ctx, w); err != nil {
		e.t.Fatal(err)
	}
}

// at moves the fake clock to t (never backwards).
func (e *env) at(t string) {
	e.t.Helper()
	to, err := time.Parse(time.RFC3339, t)
	if err != nil {
		e.t.Fatal(err)
	}
	e.clk.Advance(to.Sub(e.clk.Now()))
}

// oneStage is stage1 of the §9 fleet (eastus by index: 9,7,5,3,1) with
// the given windows and concurrency, no tasks, then stage2 (westus)
// behind an approval.
func oneStage(maxConcurrency string, windows ...string) fleet.UpdateStrategySpec {
	return fleet.UpdateStrategySpec{Stages: []fleet.StageConfig{{Name: "stage1",
		LabelSelector: selector("group", "prod", "region", "eastus"), SortingLabelKey: strptr("index"),
		MaxConcurrency: intOrStr(maxConcurrency), Windows: windows},
		{Name: "stage2", LabelSelector: selector("group", "prod", "region", "westus"),
			BeforeStageTasks: []fleet.StageTask{approval()}}}}
}

func startedClusters(s fleet.StageUpdatingStatus) []string {
	var out []string
	for _, c := range s.Clusters {
		if meta.IsStatusConditionTrue(c.Conditions, fleet.ClusterUpdatingConditionStarted) {
			out = append(out, c.ClusterName)
		}
	}
	return out
}

func progressing(conds []metav1.Condition) *metav1.Condition {
	return meta.FindStatusCondition(conds, fleet.StagedUpdateRunConditionProgressing)
}

// A stage outside its window starts no cluster, says which window it waits
// for and when it opens, and asks to be run again at that very instant;
// the instant follows the zone's DST change on either side of it.
func TestStageWaitsForItsWindowAcrossADSTChange(t *testing.T) {
	for _, tc := range []struct {
		name, zone, now, opens string
	}{
		// New York springs forward on Sunday 2026-03-08: Monday 09:00 is EDT (-4).
		{"America/New_York spring-forward", "America/New_York", "2026-03-07T12:00:00Z", "2026-03-09T13:00:00Z"},
		// Berlin falls back on Sunday 2026-10-25: Monday 09:00 is CET (+1).
		{"Europe/Berlin fall-back", "Europe/Berlin", "2026-10-24T12:00:00Z", "2026-10-26T08:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "").fixture()
			e.window("office", tc.zone, weekdayHours)
			e.strategy(oneStage("1", "office"))
			e.at(tc.now)
			e.create()
			res := e.ok()
			run := e.get()
			if got := startedClusters(run.Status.StagesStatus[0]); len(got) > 0 {
				t.Fatalf("clusters %v started outside the window", got)
			}
			wantStage := "waiting for window office (opens " + tc.opens + ")"
			stage := progressing(run.Status.StagesStatus[0].Conditions)
			if stage == nil || stage.Status != metav1.ConditionFalse || stage.Reason != fleet.StageUpdatingWaitingReason || stage.Message != wantStage {
				t.Fatalf("stage Progressing = %v, want False/%s %q", stage, fleet.StageUpdatingWaitingReason, wantStage)
			}
			if c := progressing(run.Status.Conditions); c.Reason != fleet.UpdateRunWaitingReason ||
				c.Message != "The updateRun is "+wantStage+" in stage stage1" {
				t.Errorf("run Progressing = %s %q", c.Reason, c.Message)
			}
			opens, _ := time.Parse(time.RFC3339, tc.opens)
			if want := opens.Sub(e.clk.Now()); res.RequeueAfter != want || res.Requeue || res.Blocked {
				t.Errorf("result %+v, want a requeue after %s (the opening)", res, want)
			}
			e.at(opens.Add(-time.Second).Format(time.RFC3339))
			e.ok()
			if got := startedClusters(e.get().Status.StagesStatus[0]); len(got) > 0 {
				t.Fatalf("clusters %v started a second before the window opened", got)
			}
			e.at(tc.opens)
			e.ok()
			if got := startedClusters(e.get().Status.StagesStatus[0]); !slices.Equal(got, []string{"cluster-0"}) && len(got) != 1 {
				t.Fatalf("at the opening, started %v, want the first cluster", got)
			}
			if c := progressing(e.get().Status.Conditions); c.Status != metav1.ConditionTrue {
				t.Errorf("run Progressing after the opening: %v", c)
			}
		})
	}
}

// A window that closes while a stage is under way lets the clusters in
// flight finish and starts no new one; the stage then waits for the next
// opening and goes on from there.
func TestWindowClosingMidStageFinishesInFlightClustersAndStartsNoNew(t *testing.T) {
	e := newEnv(t, "").fixture()
	e.window("office", "Europe/Berlin", weekdayHours)
	e.strategy(oneStage("2", "office"))
	e.at("2026-10-23T14:58:00Z") // Friday 16:58 CEST
	e.create()
	e.ok()
	first := startedClusters(e.get().Status.StagesStatus[0])
	if len(first) != 2 {
		t.Fatalf("started %v, want 2 clusters (maxConcurrency 2)", first)
	}
	e.at("2026-10-23T15:01:00Z") // 17:01: closed
	e.ok()
	run := e.get()
	if got := startedClusters(run.Status.StagesStatus[0]); !slices.Equal(got, first) {
		t.Fatalf("after the close, started %v, want still %v", got, first)
	}
	if c := progressing(run.Status.Conditions); c.Status != metav1.ConditionTrue {
		t.Errorf("run with clusters in flight after the close: %v, want Progressing", c)
	}
	e.available(first...)
	res := e.ok()
	run = e.get()
	st := run.Status.StagesStatus[0]
	if got := startedClusters(st); !slices.Equal(got, first) {
		t.Fatalf("once the in-flight clusters finished, started %v, want no new one", got)
	}
	for _, c := range st.Clusters {
		if slices.Contains(first, c.ClusterName) && !meta.IsStatusConditionTrue(c.Conditions, fleet.ClusterUpdatingConditionSucceeded) {
			t.Errorf("in-flight cluster %s did not finish: %v", c.ClusterName, c.Conditions)
		}
	}
	// Monday 09:00 CET, after the fall-back.
	want := "waiting for window office (opens 2026-10-26T08:00:00Z)"
	if c := progressing(st.Conditions); c.Message != want {
		t.Errorf("stage message %q, want %q", c.Message, want)
	}
	if res.RequeueAfter != time.Date(2026, 10, 26, 8, 0, 0, 0, time.UTC).Sub(e.clk.Now()) {
		t.Errorf("requeue after %s", res.RequeueAfter)
	}
	e.at("2026-10-26T08:00:00Z")
	e.ok()
	if got := startedClusters(e.get().Status.StagesStatus[0]); len(got) != 4 {
		t.Errorf("after the opening, started %v, want two more", got)
	}
}

// A freeze holds a stage a person approved; an override merged in Git
// (the freeze's allowedRuns naming the run) lets it start, and the stage
// records the freeze it crossed.
func TestFreezeAcrossNewYearHoldsAnApprovedStageUnlessOverridden(t *testing.T) {
	e := newEnv(t, "").fixture()
	e.window("prod", "Europe/Berlin", nil, fleet.Freeze{Name: "holidays", Start: "2026-12-20", End: "2027-01-04", Reason: "year end"})
	spec := oneStage("1", "prod")
	spec.Stages[0].BeforeStageTasks = []fleet.StageTask{approval()}
	e.strategy(spec)
	e.at("2026-12-31T10:00:00Z")
	e.create()
	e.ok()
	e.approve(runName + "-before-stage1")
	res := e.ok()
	run := e.get()
	if got := startedClusters(run.Status.StagesStatus[0]); len(got) > 0 {
		t.Fatalf("clusters %v started in the freeze", got)
	}
	// The freeze lasts through 2027-01-04: it ends at midnight CET.
	want := "waiting for window prod/holidays (opens 2027-01-04T23:00:00Z)"
	if c := progressing(run.Status.StagesStatus[0].Conditions); c.Message != want {
		t.Fatalf("stage message %q, want %q", c.Message, want)
	}
	if res.Blocked || res.RequeueAfter <= 0 {
		t.Errorf("result %+v, want a requeue at the freeze's end", res)
	}
	if len(run.Status.StagesStatus[0].OverriddenFreezes) > 0 {
		t.Errorf("overriddenFreezes %v before any override", run.Status.StagesStatus[0].OverriddenFreezes)
	}

	e.window("prod", "Europe/Berlin", nil, fleet.Freeze{Name: "holidays", Start: "2026-12-20", End: "2027-01-04", Reason: "year end",
		AllowedRuns: []string{runName}})
	e.ok()
	run = e.get()
	if got := startedClusters(run.Status.StagesStatus[0]); len(got) != 1 {
		t.Fatalf("with the override, started %v, want one cluster", got)
	}
	if got := run.Status.StagesStatus[0].OverriddenFreezes; !slices.Equal(got, []string{"prod/holidays"}) {
		t.Errorf("overriddenFreezes %v, want [prod/holidays]", got)
	}
}

// A member's own window holds that cluster only: the next clusters of the
// stage start meanwhile, and the stage finishes once the member's window
// opens.
func TestMembersWindowHoldsOnlyThatCluster(t *testing.T) {
	e := newEnv(t, "").fixture()
	e.window("tokyo-night", "Asia/Tokyo", []fleet.WeeklyWindow{{Start: "01:00", End: "05:00"}})
	e.h.ApplyMemberCluster(&fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster-9",
		Labels:      map[string]string{"group": "prod", "region": "eastus", "index": "0"},
		Annotations: map[string]string{fleet.RolloutWindowsAnnotation: "tokyo-night"}}})
	e.strategy(oneStage("1"))
	e.at("2026-01-08T12:00:00Z") // 21:00 in Tokyo
	e.create()
	for i := 0; i < 10; i++ {
		e.ok()
		st := e.get().Status.StagesStatus[0]
		var todo []string
		for _, c := range startedClusters(st) {
			if !meta.IsStatusConditionTrue(st.Clusters[slices.IndexFunc(st.Clusters, func(x fleet.ClusterUpdatingStatus) bool { return x.ClusterName == c })].Conditions, fleet.ClusterUpdatingConditionSucceeded) {
				todo = append(todo, c)
			}
		}
		e.available(todo...)
	}
	st := e.get().Status.StagesStatus[0]
	if st.Clusters[0].ClusterName != "cluster-9" {
		t.Fatalf("cluster-9 is not first in the stage: %v", clusterNames(st))
	}
	if got := startedClusters(st); len(got) != 4 || slices.Contains(got, "cluster-9") {
		t.Fatalf("started %v, want the four others, not cluster-9", got)
	}
	want := "waiting for window tokyo-night (opens 2026-01-08T16:00:00Z)"
	if c := progressing(st.Conditions); c.Message != want {
		t.Errorf("stage message %q, want %q", c.Message, want)
	}
	e.at("2026-01-08T16:00:00Z")
	e.ok()
	e.available("cluster-9")
	e.ok()
	if c := meta.FindStatusCondition(e.get().Status.StagesStatus[0].Conditions, fleet.StageUpdatingConditionSucceeded); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("the stage did not finish once cluster-9's window opened: %v", e.get().Status.StagesStatus[0].Conditions)
	}
}

// A window name no RolloutWindow has holds the stage: a typo must not let
// an update through a freeze.
func TestUnknownWindowHoldsTheStage(t *testing.T) {
	e := newEnv(t, "").fixture()
	e.strategy(oneStage("1", "no-such-window"))
	e.create()
	res := e.ok()
	st := e.get().Status.StagesStatus[0]
	if got := startedClusters(st); len(got) > 0 {
		t.Fatalf("started %v", got)
	}
	if c := progressing(st.Conditions); !strings.Contains(c.Message, "waiting for window no-such-window (no RolloutWindow of that name)") {
		t.Errorf("stage message %q", c.Message)
	}
	if !res.Blocked {
		t.Errorf("result %+v, want blocked until Git changes", res)
	}
	e.window("no-such-window", "", nil)
	e.ok()
	if got := startedClusters(e.get().Status.StagesStatus[0]); len(got) != 1 {
		t.Errorf("once the window exists, started %v", got)
	}
}
