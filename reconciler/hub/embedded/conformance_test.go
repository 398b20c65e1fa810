package embedded_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/reconciler/hub/hubtest"
)

// TestConformance runs the hub conformance suite on the embedded hub; the
// Apply* inputs play the person pushing objects to Git.
func TestConformance(t *testing.T) {
	hubtest.Run(t, func(t *testing.T) hubtest.Subject {
		h := embedded.New(clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), nil)
		s := hubtest.Subject{
			Hub: h,
			Apply: func(t testing.TB, obj hubtest.Object) {
				switch o := obj.(type) {
				case *fleet.Placement:
					h.ApplyPlacement(o.DeepCopy())
				case *fleet.MemberCluster:
					h.ApplyMemberCluster(o.DeepCopy())
				case *fleet.UpdateStrategy:
					h.ApplyUpdateStrategy(o.DeepCopy())
				case *fleet.UpdateRun:
					h.ApplyUpdateRun(o.DeepCopy())
				case *fleet.ClusterResourcePlacementEviction, *fleet.ClusterResourcePlacementDisruptionBudget, *fleet.RolloutWindow:
					if err := h.Apply(context.Background(), obj.DeepCopyObject().(hubtest.Object)); err != nil {
						t.Fatal(err)
					}
				default:
					t.Fatal(fmt.Sprintf("the embedded hub takes no %T from people", obj))
				}
			},
			DeleteRun: func(_ testing.TB, key hub.Key) { h.DeleteUpdateRun(key) },
		}
		// The embedded hub always delivers.
		s.Delivering = func(testing.TB) hubtest.Subject { return s }
		return s
	})
}
