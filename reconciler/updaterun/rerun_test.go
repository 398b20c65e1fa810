package updaterun

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// A run over clusters that already have its snapshot finishes each one as
// it starts; it must go straight on to the next cluster instead of waiting
// for the 15 s poll, since no binding change will wake it.
func TestRerunningTheSameSnapshotMovesOnWithoutPolling(t *testing.T) {
	e := newEnv(t, "").fixture()
	e.strategy(fleet.UpdateStrategySpec{Stages: []fleet.StageConfig{{Name: "all", LabelSelector: &metav1.LabelSelector{}}}})
	e.create()
	for i := 0; i < 40 && e.get().Phase() != fleet.PhaseSucceeded; i++ {
		e.ok()
		e.available(clusterNames(e.get().Status.StagesStatus[0])...)
	}
	if phase := e.get().Phase(); phase != fleet.PhaseSucceeded {
		t.Fatalf("first run is %s", phase)
	}

	rerun := hub.Key{Name: "rerun"}
	e.h.ApplyUpdateRun(&fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: rerun.Name},
		Spec: fleet.UpdateRunSpec{PlacementName: placementName, StagedUpdateStrategyName: strategyName,
			ResourceSnapshotIndex: "0", State: fleet.StateRun}})
	passes := 0
	for ; passes < 40; passes++ {
		res, err := e.r.Reconcile(e.ctx, rerun)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := e.h.GetUpdateRun(e.ctx, rerun)
		if r.Phase() == fleet.PhaseSucceeded {
			break
		}
		if !res.Requeue || res.RequeueAfter != 0 {
			t.Fatalf("pass %d asked to come back after %s; every cluster already has the snapshot", passes, res.RequeueAfter)
		}
	}
	if passes >= 40 {
		t.Fatal("the rerun did not succeed")
	}
}
