package agent_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/agent"
	"github.com/gitfleet/gitfleet/reconciler/delivery"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

// A simulated member reports a Work applied at once and available once
// its sim-available-after has passed since the Work's generation was
// first applied; a new generation waits again; sim-unavailable never
// becomes available. The binding waits (ResourceNotAvailableYet) on a
// member still becoming available and fails (NotAllWorkAreAvailable) on
// one that never will.
func TestASimulatedMemberBecomesAvailableAsItsAnnotationsSay(t *testing.T) {
	w := &fleet.Work{ObjectMeta: metav1.ObjectMeta{Name: "app-work", Namespace: "fleet-member-m1", Generation: 1}}
	w.Spec.Workload.Manifests = []fleet.Manifest{{RawExtension: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"one","namespace":"app"}}`)}}}
	t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		at          time.Duration
		generation  int64
		available   metav1.ConditionStatus
		// bindingReason is the binding's Available reason made from the
		// Work's status.
		bindingReason string
	}{
		{"at once without a delay", nil, 0, 1, metav1.ConditionTrue, member.AllWorkAvailableReason},
		{"not before the delay", map[string]string{fleet.SimAvailableAfterAnnotation: "30s"}, 29 * time.Second, 1, metav1.ConditionFalse,
			fleet.ResourceNotAvailableYetReason},
		{"after the delay", map[string]string{fleet.SimAvailableAfterAnnotation: "30s"}, 30 * time.Second, 1, metav1.ConditionTrue,
			member.AllWorkAvailableReason},
		{"a new generation waits again", map[string]string{fleet.SimAvailableAfterAnnotation: "30s"}, 30 * time.Second, 2, metav1.ConditionFalse,
			fleet.ResourceNotAvailableYetReason},
		{"never when unavailable", map[string]string{fleet.SimUnavailableAnnotation: "image pull failure"}, time.Hour, 1, metav1.ConditionFalse,
			member.WorkNotAvailableReason},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim, err := agent.SimulatedMember(&fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "m1", Annotations: tc.annotations}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sim.Apply(context.Background(), w, nil, t0); err != nil {
				t.Fatal(err)
			}
			w := w.DeepCopy()
			w.Generation = tc.generation
			st, err := sim.Apply(context.Background(), w, nil, t0.Add(tc.at))
			if err != nil {
				t.Fatal(err)
			}
			if c := meta.FindStatusCondition(st.Conditions, fleet.WorkConditionTypeApplied); c == nil || c.Status != metav1.ConditionTrue || c.Reason != "AllManifestsApplied" {
				t.Errorf("Applied = %+v", c)
			}
			if c := meta.FindStatusCondition(st.Conditions, fleet.WorkConditionTypeAvailable); c == nil || c.Status != tc.available || c.ObservedGeneration != tc.generation {
				t.Errorf("Available = %+v, want %s at generation %d", c, tc.available, tc.generation)
			}
			if len(st.ManifestConditions) != 1 || st.ManifestConditions[0].Identifier.Name != "one" {
				t.Errorf("manifest conditions %+v", st.ManifestConditions)
			}
			w.Status = st
			b := &fleet.Binding{ObjectMeta: metav1.ObjectMeta{Name: "b", Generation: 5}}
			conds, _ := delivery.Status(b, []*fleet.Work{w})
			if c := meta.FindStatusCondition(conds, fleet.ResourceBindingAvailable); c == nil || c.Reason != tc.bindingReason {
				t.Errorf("binding Available = %+v, want reason %s", c, tc.bindingReason)
			}
		})
	}
	if _, err := agent.SimulatedMember(&fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "m1",
		Annotations: map[string]string{fleet.SimAvailableAfterAnnotation: "soon"}}}); err == nil {
		t.Error("an invalid sim-available-after was taken")
	}
}
