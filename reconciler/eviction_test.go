package reconciler

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/internal/testing/golden"
	"github.com/gitfleet/gitfleet/reconciler/eviction"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/status"
)

// TestEvictionOnTheEmbeddedHub is upstream's e2e "PickAll CRP, PDB with
// MinAvailable specified as Integer" pair on simulated members: with all
// three clusters available, minAvailable 3 blocks an eviction (for good:
// it is not retried when the budget changes), and minAvailable 2 lets a
// new one remove the placement's config map from member-000. The
// scheduler then picks member-000 again (PickAll, no taint), with a
// Scheduled binding a run would roll out, as upstream.
func TestEvictionOnTheEmbeddedHub(t *testing.T) {
	clk := clock.NewFake(epoch)
	f := newTestFleet(t, clk, 3, "3", "0s")
	f.ctrl.Evictions = &eviction.Reconciler{Hub: f.hub, Clock: clk}
	ctx := context.Background()
	f.ctrl.Drain(ctx)
	f.startRun()
	f.ctrl.Drain(ctx)
	if got := f.phase(t); got != fleet.PhaseSucceeded {
		t.Fatalf("run is %s", got)
	}
	placed := func(cluster string) int {
		sim, ok := f.hub.Members().Simulated(cluster)
		if !ok {
			t.Fatalf("no simulated member %s", cluster)
		}
		return len(sim.Placed())
	}
	for i := range 3 {
		if n := placed(fmt.Sprintf("member-%03d", i)); n != 1 {
			t.Fatalf("member-%03d holds %d placements before the eviction", i, n)
		}
	}

	budget := func(minAvailable int32) {
		v := intstr.FromInt32(minAvailable)
		must(t, f.hub.Apply(ctx, &fleet.ClusterResourcePlacementDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "app"},
			Spec: fleet.PlacementDisruptionBudgetSpec{MinAvailable: &v}}))
	}
	evict := func(name string) *fleet.ClusterResourcePlacementEviction {
		t.Helper()
		must(t, f.hub.Apply(ctx, &fleet.ClusterResourcePlacementEviction{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: fleet.PlacementEvictionSpec{PlacementName: "app", ClusterName: "member-000"}}))
		f.ctrl.Drain(ctx)
		e, err := f.hub.GetEviction(ctx, hub.Key{Name: name})
		must(t, err)
		return e
	}

	budget(3)
	blocked := evict("blocked")
	wantConditions(t, blocked, metav1.ConditionTrue, metav1.ConditionFalse,
		"Eviction is blocked by specified ClusterResourcePlacementDisruptionBudget, availablePlacements: 3, totalPlacements: 3")
	if n := placed("member-000"); n != 1 {
		t.Fatalf("a blocked eviction removed the placement from member-000")
	}
	golden.Assert(t, "eviction-blocked.yaml", encode(t, blocked))

	budget(2)
	f.ctrl.EnqueueAll()
	f.ctrl.Drain(ctx)
	again, err := f.hub.GetEviction(ctx, hub.Key{Name: "blocked"})
	must(t, err)
	if again.ResourceVersion != blocked.ResourceVersion {
		t.Errorf("a blocked eviction was evaluated again: %v", again.Status.Conditions)
	}

	executed := evict("executed")
	wantConditions(t, executed, metav1.ConditionTrue, metav1.ConditionTrue,
		"Eviction is allowed by specified ClusterResourcePlacementDisruptionBudget, availablePlacements: 3, totalPlacements: 3")
	golden.Assert(t, "eviction-executed.yaml", encode(t, executed))
	if n := placed("member-000"); n != 0 {
		t.Errorf("member-000 still holds %d placements after the eviction", n)
	}
	for _, c := range []string{"member-001", "member-002"} {
		if n := placed(c); n != 1 {
			t.Errorf("%s holds %d placements after member-000's eviction", c, n)
		}
	}
	bindings, err := f.hub.ListBindings(ctx, hub.Key{Name: "app"})
	must(t, err)
	states := map[string]fleet.BindingState{}
	for _, b := range bindings {
		states[b.Spec.TargetCluster] = b.Spec.State
	}
	if states["member-000"] != fleet.BindingStateScheduled {
		t.Errorf("member-000 after its eviction: binding %q, want a new Scheduled one (PickAll picks it again)", states["member-000"])
	}

	// Every later commit applies the eviction's file again: it is not
	// executed again.
	must(t, f.hub.Apply(ctx, &fleet.ClusterResourcePlacementEviction{ObjectMeta: metav1.ObjectMeta{Name: "executed"},
		Spec: fleet.PlacementEvictionSpec{PlacementName: "app", ClusterName: "member-000"}}))
	f.ctrl.EnqueueAll()
	f.ctrl.Drain(ctx)
	if again := mustEviction(t, f, "executed"); again.ResourceVersion != executed.ResourceVersion {
		t.Errorf("an executed eviction applied again was written: %v", again.Status.Conditions)
	}
}

// TestEvictionIsRefusedAsUpstreamRefusesIt: the invalid evictions of
// upstream's TestValidateEviction and the ones execution blocks, each with
// its condition.
func TestEvictionIsRefusedAsUpstreamRefusesIt(t *testing.T) {
	clk := clock.NewFake(epoch)
	f := newTestFleet(t, clk, 2, "2", "0s")
	f.ctrl.Evictions = &eviction.Reconciler{Hub: f.hub, Clock: clk}
	ctx := context.Background()
	f.ctrl.Drain(ctx)
	for _, tc := range []struct {
		name, placement, cluster string
		valid, executed          metav1.ConditionStatus
		msg                      string
	}{
		{"no-placement", "nope", "member-000", metav1.ConditionFalse, "", fleet.EvictionInvalidMissingCRPMessage},
		{"no-binding", "app", "member-999", metav1.ConditionFalse, "", fleet.EvictionInvalidMissingCRBMessage},
		// Scheduled, never rolled out: nothing to remove yet.
		{"not-placed", "app", "member-001", metav1.ConditionTrue, metav1.ConditionFalse, fleet.EvictionBlockedMissingPlacementMessage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			must(t, f.hub.Apply(ctx, &fleet.ClusterResourcePlacementEviction{ObjectMeta: metav1.ObjectMeta{Name: tc.name},
				Spec: fleet.PlacementEvictionSpec{PlacementName: tc.placement, ClusterName: tc.cluster}}))
			f.ctrl.Drain(ctx)
			e, err := f.hub.GetEviction(ctx, hub.Key{Name: tc.name})
			must(t, err)
			wantConditions(t, e, tc.valid, tc.executed, tc.msg)
		})
	}
	golden.Assert(t, "eviction-invalid.yaml", encode(t, mustEviction(t, f, "no-placement")))

	pickFixed := &fleet.Placement{ObjectMeta: metav1.ObjectMeta{Name: "fixed"}, Spec: fleet.PlacementSpec{
		ResourceSelectors: []fleet.ResourceSelectorTerm{{Version: "v1", Kind: "ConfigMap", Name: "app"}},
		Policy:            &fleet.PlacementPolicy{PlacementType: fleet.PickFixedPlacementType, ClusterNames: []string{"member-000"}},
		Strategy:          fleet.RolloutStrategy{Type: fleet.ExternalRolloutStrategyType}}}
	fleet.SetDefaultsPlacement(pickFixed)
	f.hub.ApplyPlacement(pickFixed)
	must(t, f.hub.Apply(ctx, &fleet.ClusterResourcePlacementEviction{ObjectMeta: metav1.ObjectMeta{Name: "fixed"},
		Spec: fleet.PlacementEvictionSpec{PlacementName: "fixed", ClusterName: "member-000"}}))
	f.ctrl.Drain(ctx)
	wantConditions(t, mustEviction(t, f, "fixed"), metav1.ConditionFalse, "", fleet.EvictionInvalidPickFixedCRPMessage)
}

func mustEviction(t *testing.T, f *testFleet, name string) *fleet.ClusterResourcePlacementEviction {
	t.Helper()
	e, err := f.hub.GetEviction(context.Background(), hub.Key{Name: name})
	must(t, err)
	return e
}

// wantConditions checks Valid and Executed ("" for absent) and the message
// of the last condition written.
func wantConditions(t *testing.T, e *fleet.ClusterResourcePlacementEviction, valid, executed metav1.ConditionStatus, msg string) {
	t.Helper()
	status := func(typ fleet.PlacementEvictionConditionType) (metav1.ConditionStatus, string) {
		c := e.GetCondition(string(typ))
		if c == nil {
			return "", ""
		}
		return c.Status, c.Message
	}
	v, vmsg := status(fleet.PlacementEvictionConditionTypeValid)
	x, xmsg := status(fleet.PlacementEvictionConditionTypeExecuted)
	got := vmsg
	if executed != "" {
		got = xmsg
	}
	if v != valid || x != executed || got != msg {
		t.Errorf("eviction %s: Valid=%q Executed=%q %q; want Valid=%q Executed=%q %q", e.Name, v, x, got, valid, executed, msg)
	}
	if !e.IsTerminal() {
		t.Errorf("eviction %s is not terminal after its pass", e.Name)
	}
}

func encode(t *testing.T, e *fleet.ClusterResourcePlacementEviction) []byte {
	t.Helper()
	b, err := status.Encode(e)
	must(t, err)
	return b
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
