package gitops

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
)

// The approval pull request of a stage in a window reads the windows from
// the hub: the stage's, its members' own, what holds the stage now, and
// that a freeze lets through the runs it allows.
func TestApprovalPullRequestReadsTheStagesWindows(t *testing.T) {
	ctx := context.Background()
	h := embedded.New(clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), nil)
	h.ApplyMemberCluster(&fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "tokyo-1",
		Annotations: map[string]string{fleet.RolloutWindowsAnnotation: "tokyo-night"}}})
	h.ApplyMemberCluster(&fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere",
		Annotations: map[string]string{fleet.RolloutWindowsAnnotation: "other"}}})
	apply := func(allowed ...string) {
		t.Helper()
		if err := h.Apply(ctx, &fleet.RolloutWindow{ObjectMeta: metav1.ObjectMeta{Name: "prod"}, Spec: fleet.RolloutWindowSpec{
			TimeZone: "Europe/Berlin", Freezes: []fleet.Freeze{{Name: "holidays", Start: "2026-12-20", End: "2027-01-04", AllowedRuns: allowed}}}}); err != nil {
			t.Fatal(err)
		}
	}
	apply()
	run := &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Status: fleet.UpdateRunStatus{
		StagedUpdateStrategySnapshot: &fleet.UpdateStrategySpec{Stages: []fleet.StageConfig{{Name: "staging"}, {Name: "prod", Windows: []string{"prod"}}}}}}
	clusters := []string{"tokyo-1", "berlin-1"}
	newYearsEve := time.Date(2026, 12, 31, 10, 0, 0, 0, time.UTC)

	if w, err := windowsOf(ctx, h, run, 0, clusters[1:], newYearsEve); err != nil || w != nil {
		t.Errorf("a stage without windows: %+v, %v; want none", w, err)
	}
	w, err := windowsOf(ctx, h, run, 1, clusters, newYearsEve)
	if err != nil {
		t.Fatal(err)
	}
	if w == nil || w.Wait != "waiting for window prod/holidays (opens 2027-01-04T23:00:00Z)" ||
		len(w.Members) != 1 || w.Members[0] != "tokyo-night" {
		t.Fatalf("windows %+v", w)
	}
	apply("web")
	if w, _ := windowsOf(ctx, h, run, 1, clusters, newYearsEve); w == nil || w.Wait != "" {
		t.Errorf("a freeze that allows the run still holds it: %+v", w)
	}
}
