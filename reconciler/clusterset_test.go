package reconciler

import (
	"context"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
)

// TestClusterSetChangesOnTheEmbeddedHub runs the engine as serve wires it
// (scheduler, simulated members, virtual time): while member-000 is in
// flight, member-004 joins and member-002 is deleted. KubeFleet's run
// fails; a run that freezes its cluster set updates member-000, -001 and
// -003, skips member-002 and leaves member-004 to the next run.
func TestClusterSetChangesOnTheEmbeddedHub(t *testing.T) {
	for _, tc := range []struct {
		name       string
		clusterSet *fleet.ClusterSetPolicy
		wantPhase  string
	}{
		{"KubeFleet's run fails", nil, fleet.PhaseFailed},
		{"a frozen run goes on", &fleet.ClusterSetPolicy{WhenChanged: fleet.ClusterSetChangeFreeze}, fleet.PhaseSucceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			clk := clock.NewFake(epoch)
			f := newTestFleet(t, clk, 4, "1", "10s")
			f.hub.ApplyUpdateRun(&fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: f.run.Name},
				Spec: fleet.UpdateRunSpec{PlacementName: "app", StagedUpdateStrategyName: "one-stage", State: fleet.StateRun,
					ClusterSet: tc.clusterSet}})
			f.ctrl.Drain(ctx)
			if got := f.phase(t); got != fleet.PhaseProgressing {
				t.Fatalf("run is %s, want it updating member-000", got)
			}
			f.hub.ApplyMemberCluster(&fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "member-004",
				Annotations: map[string]string{fleet.DriverAnnotation: fleet.DriverSimulated, fleet.SimAvailableAfterAnnotation: "10s"}}})
			f.hub.DeleteMemberCluster("member-002")
			for i := 0; i < 100; i++ {
				f.ctrl.Drain(ctx)
				if p := f.phase(t); p == fleet.PhaseSucceeded || p == fleet.PhaseFailed || !clk.Step() {
					break
				}
			}
			if got := f.phase(t); got != tc.wantPhase {
				t.Fatalf("run is %s, want %s", got, tc.wantPhase)
			}
			run, err := f.hub.GetUpdateRun(ctx, f.run)
			if err != nil {
				t.Fatal(err)
			}
			if tc.clusterSet == nil {
				// member-002 left and member-004 joined: four clusters still,
				// the third one changed.
				c := meta.FindStatusCondition(run.Status.Conditions, fleet.StagedUpdateRunConditionSucceeded)
				if want := "cannot continue the updateRun: the `2` cluster in the `0` stage has changed, new: member-003, existing: member-002"; c == nil || c.Message != want {
					t.Errorf("failure %v, want %q", c, want)
				}
				return
			}
			if got := run.Status.PendingClusters; !slices.Equal(got, []string{"member-004"}) {
				t.Errorf("pendingClusters %v", got)
			}
			for _, c := range run.Status.StagesStatus[0].Clusters {
				skipped := meta.IsStatusConditionTrue(c.Conditions, fleet.ClusterUpdatingConditionSkipped)
				succeeded := meta.IsStatusConditionTrue(c.Conditions, fleet.ClusterUpdatingConditionSucceeded)
				if (c.ClusterName == "member-002") != skipped || skipped == succeeded {
					t.Errorf("%s: skipped %t, succeeded %t", c.ClusterName, skipped, succeeded)
				}
			}
		})
	}
}
