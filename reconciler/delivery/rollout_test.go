package delivery

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// state is a binding at generation gen in state s, with a RolloutStarted
// condition of status rs at generation rsGen (none when rs is empty).
func state(s fleet.BindingState, gen int64, rs metav1.ConditionStatus, rsGen int64) *fleet.Binding {
	b := &fleet.Binding{ObjectMeta: metav1.ObjectMeta{Name: "app-member1", Generation: gen}, Spec: fleet.ResourceBindingSpec{State: s}}
	if rs != "" {
		b.Status.Conditions = []metav1.Condition{{Type: fleet.ResourceBindingRolloutStarted, Status: rs, ObservedGeneration: rsGen}}
	}
	return b
}

func TestABoundBindingIsDeliveredOnceItsRolloutStartedAtItsGeneration(t *testing.T) {
	const (
		bound     = fleet.BindingStateBound
		scheduled = fleet.BindingStateScheduled
	)
	terminating := state(bound, 2, metav1.ConditionTrue, 1)
	terminating.DeletionTimestamp = &metav1.Time{}
	for _, tc := range []struct {
		name     string
		old, cur *fleet.Binding
		want     intentKind // 0: nothing pending
	}{
		{"the run's bind, RolloutStarted not written yet", state(scheduled, 1, "", 0), state(bound, 2, "", 0), 0},
		{"the run's RolloutStarted write after its bind", state(bound, 2, "", 0), state(bound, 2, metav1.ConditionTrue, 2), deliverIntent},
		{"a new generation, RolloutStarted still of the old", state(bound, 2, metav1.ConditionTrue, 2), state(bound, 3, metav1.ConditionTrue, 2), 0},
		{"RolloutStarted at the new generation", state(bound, 3, metav1.ConditionTrue, 2), state(bound, 3, metav1.ConditionTrue, 3), deliverIntent},
		{"RolloutStarted Unknown at the generation", state(bound, 2, "", 0), state(bound, 2, metav1.ConditionUnknown, 2), 0},
		// KubeFleet's rollout controller holds a binding back on its spec
		// with False; its work generator delivers that spec.
		{"RolloutStarted False at the generation", state(bound, 2, "", 0), state(bound, 2, metav1.ConditionFalse, 2), deliverIntent},
		{"a report (a status write) on a delivered binding", state(bound, 2, metav1.ConditionTrue, 2), state(bound, 2, metav1.ConditionTrue, 2), 0},
		{"created Bound with its rollout started", nil, state(bound, 1, metav1.ConditionTrue, 1), deliverIntent},
		{"deleted before its rollout started", state(bound, 2, metav1.ConditionTrue, 1), terminating, removeIntent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Config{})
			c.Observe(tc.old, tc.cur)
			got := c.pending[keyOf(tc.cur)].kind
			if got != tc.want {
				t.Errorf("pending intent = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestResyncDeliversOnlyBindingsWhoseRolloutStarted(t *testing.T) {
	started := state(fleet.BindingStateBound, 2, metav1.ConditionTrue, 2)
	started.Name = "started"
	stale := state(fleet.BindingStateBound, 3, metav1.ConditionTrue, 2)
	stale.Name = "stale"
	c := New(Config{})
	c.Resync([]*fleet.Binding{started, stale})
	if _, ok := c.pending[keyOf(started)]; !ok || len(c.pending) != 1 {
		t.Errorf("pending after Resync = %v, want the started binding's delivery alone", c.pending)
	}
}
