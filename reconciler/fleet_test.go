package reconciler

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/reconciler/placement"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
	"github.com/gitfleet/gitfleet/reconciler/scheduler"
	"github.com/gitfleet/gitfleet/reconciler/updaterun"
)

// testFleet is an embedded hub with n simulated members, one External
// placement selecting a config map, snapshot 0, a one-stage strategy, and a
// controller wired as serve wires it.
type testFleet struct {
	hub  *embedded.Hub
	ctrl *Controller
	run  hub.Key
}

func newTestFleet(tb testing.TB, clk clock.Clock, n int, maxConcurrency string, availableAfter string) *testFleet {
	tb.Helper()
	ctx := context.Background()
	h := embedded.New(clk, nil)
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "app", "namespace": "default"}, "data": map[string]any{"k": "v"}}}
	h.SetResources([]*unstructured.Unstructured{cm})
	h.SetSelector(func(*fleet.Placement, []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
		return []*unstructured.Unstructured{cm.DeepCopy()}, nil
	})
	for i := 0; i < n; i++ {
		h.ApplyMemberCluster(&fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("member-%03d", i),
			Annotations: map[string]string{fleet.DriverAnnotation: fleet.DriverSimulated, fleet.SimAvailableAfterAnnotation: availableAfter}}})
	}
	p := &fleet.Placement{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Spec: fleet.PlacementSpec{
		ResourceSelectors: []fleet.ResourceSelectorTerm{{Version: "v1", Kind: "ConfigMap", Name: "app"}},
		Policy:            &fleet.PlacementPolicy{PlacementType: fleet.PickAllPlacementType},
		Strategy:          fleet.RolloutStrategy{Type: fleet.ExternalRolloutStrategyType}}}
	fleet.SetDefaultsPlacement(p)
	h.ApplyPlacement(p)
	if _, _, err := resourcesnapshot.Ensure(ctx, h, p, []*unstructured.Unstructured{cm}, ""); err != nil {
		tb.Fatal(err)
	}
	mc := intOrString(maxConcurrency)
	h.ApplyUpdateStrategy(&fleet.UpdateStrategy{ObjectMeta: metav1.ObjectMeta{Name: "one-stage"},
		Spec: fleet.UpdateStrategySpec{Stages: []fleet.StageConfig{{Name: "all", LabelSelector: &metav1.LabelSelector{}, MaxConcurrency: &mc}}}})
	ctrl := &Controller{Hub: h, Clock: clk, Committer: h,
		Runs:      &updaterun.Reconciler{Hub: h, Clock: clk},
		Scheduler: &scheduler.Scheduler{Hub: h, Clock: clk},
		Status:    (&placement.Updater{Hub: h, Clock: clk}).Update,
	}
	ctrl.EnqueueAll()
	return &testFleet{hub: h, ctrl: ctrl, run: hub.Key{Name: "rollout"}}
}

// startRun creates the run, as a push of its file would.
func (f *testFleet) startRun() {
	f.hub.ApplyUpdateRun(&fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: f.run.Name},
		Spec: fleet.UpdateRunSpec{PlacementName: "app", StagedUpdateStrategyName: "one-stage", State: fleet.StateRun}})
}

func (f *testFleet) phase(tb testing.TB) string {
	r, err := f.hub.GetUpdateRun(context.Background(), f.run)
	if err != nil {
		tb.Fatal(err)
	}
	return r.Phase()
}

func intOrString(s string) intstr.IntOrString { return intstr.Parse(s) }

func TestMain(m *testing.M) {
	// Keep test and benchmark output readable: the scheduler and the
	// delivery layer log to the default logger.
	slog.SetDefault(slog.New(slog.DiscardHandler))
	os.Exit(m.Run())
}
