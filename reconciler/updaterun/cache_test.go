package updaterun

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// A finished run never reads its plan again; the cache must let it go, or a
// daemon keeps the stages of every run it ever finished.
func TestFinishedRunLeavesNoPlanInTheCache(t *testing.T) {
	e := newEnv(t, "").fixture()
	e.strategy(fleet.UpdateStrategySpec{Stages: []fleet.StageConfig{{Name: "all", LabelSelector: &metav1.LabelSelector{}}}})
	e.create()
	cached := func() bool {
		e.r.cache.mu.Lock()
		defer e.r.cache.mu.Unlock()
		_, ok := e.r.cache.entries[hub.Key{Name: e.get().Name}]
		return ok
	}
	sawPlan := false
	for i := 0; i < 40 && e.get().Phase() != fleet.PhaseSucceeded; i++ {
		e.ok()
		sawPlan = sawPlan || cached()
		e.available(clusterNames(e.get().Status.StagesStatus[0])...)
	}
	if phase := e.get().Phase(); phase != fleet.PhaseSucceeded {
		t.Fatalf("run is %s", phase)
	}
	if !sawPlan {
		t.Fatal("the running run's plan was never cached; the test shows nothing")
	}
	e.ok() // a pass of the finished run
	if cached() {
		t.Fatal("the finished run's plan is still cached")
	}
}
