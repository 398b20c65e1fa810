package member

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// TestAMergedReportHasAStatusOfItsOwn: MergeReport reads a binding a hub
// shares with every reader (hub.ReadOnlyGetter) and returns a status the
// hub keeps as it is (hub.HandOverBindingStatus), so neither may reach
// into the other: changing one leaves the other as it was.
func TestAMergedReportHasAStatusOfItsOwn(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cur := &fleet.Binding{ObjectMeta: metav1.ObjectMeta{Name: "b", Generation: 2}}
	cur.Status.Conditions = []metav1.Condition{
		{Type: fleet.ResourceBindingRolloutStarted, Status: metav1.ConditionTrue, Reason: "Started", ObservedGeneration: 2, LastTransitionTime: then},
		{Type: fleet.ResourceBindingApplied, Status: metav1.ConditionFalse, Reason: "Pending", ObservedGeneration: 1, LastTransitionTime: then},
	}
	read := cur.DeepCopy()

	next := MergeReport(cur, 2, []metav1.Condition{Applied(2), Available(2)}, Placements{}, then.Add(time.Minute))
	if next == nil {
		t.Fatal("MergeReport of a new Applied and Available returned nil, want a status to write")
	}
	if !equality.Semantic.DeepEqual(cur, read) {
		t.Errorf("MergeReport changed the binding it read:\n%+v\nwant\n%+v", cur.Status, read.Status)
	}
	for _, typ := range []string{fleet.ResourceBindingRolloutStarted, fleet.ResourceBindingApplied, fleet.ResourceBindingAvailable} {
		if c := meta.FindStatusCondition(next.Status.Conditions, typ); c == nil {
			t.Errorf("the merged status lacks %s: %+v", typ, next.Status.Conditions)
		}
	}
	for i := range next.Status.Conditions {
		next.Status.Conditions[i].Message = "changed by its new owner"
	}
	if !equality.Semantic.DeepEqual(cur, read) {
		t.Errorf("changing the merged status changed the binding it was read from: %+v", cur.Status.Conditions)
	}
}
