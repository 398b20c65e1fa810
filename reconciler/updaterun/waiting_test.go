package updaterun

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// A run waiting for an after-stage approval is polled every minute; its
// status, and so its status file in Git, must not change on those polls.
func TestWaitingRunKeepsItsProgressingTransitionTimeAcrossPolls(t *testing.T) {
	e := newEnv(t, "").fixture()
	e.strategy(fleet.UpdateStrategySpec{Stages: []fleet.StageConfig{
		{Name: "stage1", LabelSelector: &metav1.LabelSelector{}, SortingLabelKey: strptr("index"),
			MaxConcurrency: nil, AfterStageTasks: []fleet.StageTask{approval()}},
	}})
	e.create()
	for i := 0; i < 10; i++ {
		e.ok()
		e.available(clusterNames(e.get().Status.StagesStatus[0])...)
	}
	e.ok()
	run := e.get()
	waiting := meta.FindStatusCondition(run.Status.Conditions, fleet.StagedUpdateRunConditionProgressing)
	if waiting == nil || waiting.Reason != fleet.UpdateRunWaitingReason {
		t.Fatalf("run is not waiting for the after-stage approval: %v", run.Status.Conditions)
	}
	rv := run.ResourceVersion
	for i := 0; i < 3; i++ {
		e.clk.Advance(time.Minute)
		e.ok()
	}
	after := e.get()
	got := meta.FindStatusCondition(after.Status.Conditions, fleet.StagedUpdateRunConditionProgressing)
	if !got.LastTransitionTime.Equal(&waiting.LastTransitionTime) {
		t.Errorf("Progressing lastTransitionTime moved from %s to %s while waiting", waiting.LastTransitionTime, got.LastTransitionTime)
	}
	if after.ResourceVersion != rv {
		t.Errorf("polls of a waiting run rewrote its status (resourceVersion %s → %s)", rv, after.ResourceVersion)
	}
}
