package snapshothistory_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/reconciler/snapshothistory"
)

func TestExpired(t *testing.T) {
	tests := []struct {
		name    string
		history []int
		limit   int
		used    []int
		want    []int
	}{
		{name: "a history below its limit loses nothing", history: []int{0, 1, 2}, limit: 10},
		{name: "a full history loses its oldest", history: []int{0, 1, 2}, limit: 3, want: []int{0}},
		{name: "an overfull history is brought back to the limit", history: []int{0, 1, 2, 3, 4}, limit: 2, want: []int{0, 1, 2, 3}},
		{name: "a used snapshot is kept and not counted", history: []int{0, 1, 2}, limit: 3, used: []int{0}},
		{name: "the oldest unused goes instead of a used one", history: []int{0, 1, 2, 3}, limit: 3, used: []int{0}, want: []int{1}},
		{name: "used snapshots anywhere in the history stay", history: []int{0, 1, 2, 3, 4, 5}, limit: 2, used: []int{1, 3}, want: []int{0, 2, 4}},
		{name: "a limit of one keeps only the new latest and the used", history: []int{0, 1, 2}, limit: 1, used: []int{2}, want: []int{0, 1}},
		{name: "everything used: nothing goes", history: []int{0, 1, 2}, limit: 1, used: []int{0, 1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := snapshothistory.Expired(tt.history, tt.limit, func(i int) (bool, error) { return slices.Contains(tt.used, i), nil })
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("expired %v, want %v", got, tt.want)
			}
		})
	}
}

func TestExpiredAsksNothingBelowTheLimitAndPassesErrorsOn(t *testing.T) {
	boom := errors.New("boom")
	asked := 0
	ask := func(int) (bool, error) { asked++; return false, boom }
	if _, err := snapshothistory.Expired([]int{0, 1}, 3, ask); err != nil || asked != 0 {
		t.Errorf("below the limit: asked %d times, err %v; want no questions", asked, err)
	}
	if _, err := snapshothistory.Expired([]int{0, 1, 2}, 3, ask); !errors.Is(err, boom) {
		t.Errorf("a failed question: err %v, want boom", err)
	}
}

// TestUses: which runs and bindings use which snapshots, for both
// families.
func TestUses(t *testing.T) {
	for _, ns := range []string{"", "apps"} {
		t.Run("namespace "+ns, func(t *testing.T) {
			ctx := context.Background()
			h := embedded.New(clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), nil)
			p := hub.Key{Namespace: ns, Name: "app"}
			h.ApplyPlacement(&fleet.Placement{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: ns},
				Spec: fleet.PlacementSpec{Strategy: fleet.RolloutStrategy{Type: fleet.ExternalRolloutStrategyType}}})
			// run applies a run on placement app with spec index spec, then
			// gives it the recorded index used, the conditions and the
			// override snapshots frozen for cluster m1.
			run := func(name, spec, used string, cro string, ro fleet.NamespacedName, conds ...metav1.Condition) {
				t.Helper()
				h.ApplyUpdateRun(&fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
					Spec: fleet.UpdateRunSpec{PlacementName: "app", StagedUpdateStrategyName: "s", ResourceSnapshotIndex: spec, State: fleet.StateRun}})
				r, err := h.GetUpdateRun(ctx, hub.Key{Namespace: ns, Name: name})
				if err != nil {
					t.Fatal(err)
				}
				r.Status.ResourceSnapshotIndexUsed = used
				r.Status.Conditions = conds
				r.Status.StagesStatus = []fleet.StageUpdatingStatus{{StageName: "one", Clusters: []fleet.ClusterUpdatingStatus{{ClusterName: "m1",
					ClusterResourceOverrideSnapshots: []string{cro}, ResourceOverrideSnapshots: []fleet.NamespacedName{ro}}}}}
				if err := h.UpdateUpdateRunStatus(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			cond := func(status metav1.ConditionStatus) metav1.Condition {
				return metav1.Condition{Type: fleet.StagedUpdateRunConditionSucceeded, Status: status, Reason: "Test",
					LastTransitionTime: metav1.Now(), ObservedGeneration: 1}
			}
			ro := func(name string) fleet.NamespacedName { return fleet.NamespacedName{Namespace: "apps", Name: name} }
			run("running", "", "1", "c-running", ro("r-running"))
			run("pending", "2", "", "", fleet.NamespacedName{})
			stopped := cond(metav1.ConditionUnknown)
			stopped.Type = fleet.StagedUpdateRunConditionProgressing
			run("stopped", "", "3", "c-stopped", ro("r-stopped"), stopped)
			run("succeeded", "4", "4", "c-succeeded", ro("r-succeeded"), cond(metav1.ConditionTrue))
			run("failed", "", "5", "c-failed", ro("r-failed"), cond(metav1.ConditionFalse))
			if err := h.CreateBinding(ctx, &fleet.Binding{
				ObjectMeta: metav1.ObjectMeta{Name: "app-m2", Namespace: ns, Labels: map[string]string{fleet.PlacementTrackingLabel: "app"}},
				Spec: fleet.ResourceBindingSpec{State: fleet.BindingStateBound, TargetCluster: "m2", ResourceSnapshotName: "app-6-snapshot",
					ClusterResourceOverrideSnapshots: []string{"c-bound"}, ResourceOverrideSnapshots: []fleet.NamespacedName{ro("r-bound")}},
			}); err != nil {
				t.Fatal(err)
			}

			u := snapshothistory.Of(ctx, h)
			var used []int
			for i := 0; i <= 7; i++ {
				ok, err := u.ResourceGroup(p, i, []string{"app-" + string(rune('0'+i)) + "-snapshot"})
				if err != nil {
					t.Fatal(err)
				}
				if ok {
					used = append(used, i)
				}
			}
			if want := []int{1, 2, 3, 6}; !slices.Equal(used, want) {
				t.Errorf("resource snapshot indices used %v, want %v (running, pending by spec, stopped, bound)", used, want)
			}
			if ok, _ := u.ResourceGroup(hub.Key{Namespace: ns, Name: "other"}, 1, []string{"other-1-snapshot"}); ok {
				t.Error("another placement's index 1 is used by a run of app")
			}
			var usedOverrides []string
			for _, n := range []string{"running", "stopped", "succeeded", "failed", "bound"} {
				c, err := u.ClusterResourceOverride("c-" + n)
				if err != nil {
					t.Fatal(err)
				}
				r, err := u.ResourceOverride(hub.Key{Namespace: "apps", Name: "r-" + n})
				if err != nil {
					t.Fatal(err)
				}
				if c != r {
					t.Errorf("%s: cluster override used %v, resource override used %v", n, c, r)
				}
				if c {
					usedOverrides = append(usedOverrides, n)
				}
			}
			if want := []string{"running", "stopped", "bound"}; !slices.Equal(usedOverrides, want) {
				t.Errorf("override snapshots used by %v, want %v", usedOverrides, want)
			}
		})
	}
}
