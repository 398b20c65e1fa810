package status

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// BenchmarkCodec measures Encode and Decode of small objects, the files
// most status commits write and a restart reads by the thousand, where
// what the codec does per object (finding the kind, making the Go object)
// weighs most against the YAML itself.
//
//	go test ./status/ -run '^$' -bench Codec
func BenchmarkCodec(b *testing.B) {
	objs := []runtime.Object{
		&fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "member-1", Labels: map[string]string{"env": "prod"}}},
		&fleet.Binding{ObjectMeta: metav1.ObjectMeta{Name: "app-member-1-1a2b3c", Namespace: "app", Generation: 2,
			Labels: map[string]string{fleet.PlacementTrackingLabel: "app"}},
			Spec: fleet.ResourceBindingSpec{State: fleet.BindingStateBound, TargetCluster: "member-1"}},
		&fleet.ApprovalRequest{ObjectMeta: metav1.ObjectMeta{Name: "run-after-canary"},
			Spec: fleet.ApprovalRequestSpec{TargetUpdateRun: "run", TargetStage: "canary"},
			Status: fleet.ApprovalRequestStatus{Conditions: []metav1.Condition{{Type: "Approved", Status: "True",
				Reason: "lgtm", LastTransitionTime: metav1.NewTime(t0), ObservedGeneration: 1}}}},
		bigRun("", 0, 3, 10),
	}
	files := make([][]byte, len(objs))
	for i, o := range objs {
		data, err := Encode(o)
		if err != nil {
			b.Fatal(err)
		}
		files[i] = data
	}
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, o := range objs {
				if _, err := Encode(o); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, f := range files {
				if _, err := Decode(f); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
