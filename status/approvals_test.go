package status

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

func TestApprovedCopyWritesWhatKubectlFleetApproveWrites(t *testing.T) {
	now := t0.Add(10 * time.Minute).Add(300 * time.Millisecond)
	cases := []struct {
		name             string
		in               *fleet.ApprovalRequest
		reason, message  string
		wantGeneration   int64
		wantTransitionAt time.Time
	}{
		{"cluster-scoped", approval(""), "ClusterApprovalRequestApproved", "ClusterApprovalRequest has been approved", 1, now.Truncate(time.Second)},
		{"namespaced", approval("team-a"), "ApprovalRequestApproved", "ApprovalRequest has been approved", 1, now.Truncate(time.Second)},
		{"file without a generation is at generation 1", func() *fleet.ApprovalRequest {
			a := approval("")
			a.Generation = 0
			return a
		}(), "ClusterApprovalRequestApproved", "ClusterApprovalRequest has been approved", 1, now.Truncate(time.Second)},
		{"hand-written approval at observedGeneration 0 is corrected", func() *fleet.ApprovalRequest {
			a := approval("")
			a.Status.Conditions = []metav1.Condition{{Type: "Approved", Status: "True", Reason: "approved", Message: "approved",
				ObservedGeneration: 0, LastTransitionTime: at(time.Minute)}}
			return a
		}(), "ClusterApprovalRequestApproved", "ClusterApprovalRequest has been approved", 1, t0.Add(time.Minute)},
		{"later generation", func() *fleet.ApprovalRequest {
			a := approval("")
			a.Generation = 3
			return a
		}(), "ClusterApprovalRequestApproved", "ClusterApprovalRequest has been approved", 3, now.Truncate(time.Second)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.in.DeepCopy()
			out := ApprovedCopy(tc.in, now)
			if !equalApproval(tc.in, before) {
				t.Fatal("ApprovedCopy changed its input")
			}
			got := meta.FindStatusCondition(out.Status.Conditions, fleet.ApprovalRequestConditionApproved)
			if got == nil {
				t.Fatal("no Approved condition")
			}
			if got.Status != metav1.ConditionTrue || got.Reason != tc.reason || got.Message != tc.message {
				t.Errorf("condition = %+v", got)
			}
			if got.ObservedGeneration != tc.wantGeneration || out.Generation != tc.wantGeneration {
				t.Errorf("observedGeneration = %d, generation = %d, want both %d", got.ObservedGeneration, out.Generation, tc.wantGeneration)
			}
			if !got.LastTransitionTime.Time.Equal(tc.wantTransitionAt) {
				t.Errorf("lastTransitionTime = %v, want %v", got.LastTransitionTime, tc.wantTransitionAt)
			}
			if len(out.Status.Conditions) != 1 {
				t.Errorf("conditions = %+v, want exactly one", out.Status.Conditions)
			}
		})
	}
}

func equalApproval(a, b *fleet.ApprovalRequest) bool {
	x, _ := Encode(a)
	y, _ := Encode(b)
	return string(x) == string(y)
}
