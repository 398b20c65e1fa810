package hubtest

import (
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// failurePolicyIsKept: a run's spec.failurePolicy and a stage's own
// maxAllowedClusterFailures (an int and a percentage) come from Git and
// read back as written — through a status write and into the run's
// strategy snapshot — on either hub (README "When clusters fail").
func (s *suite) failurePolicyIsKept(d hub.Desired) {
	pct, zero, wait := intstr.FromString("10%"), intstr.FromInt32(0), int32(7)
	policy := &fleet.FailurePolicy{MaxAllowedClusterFailures: &pct, MaxWaitTimePerClusterMinutes: &wait}
	strategy := fleet.UpdateStrategySpec{Stages: []fleet.StageConfig{
		{Name: "canary", LabelSelector: &metav1.LabelSelector{}, MaxAllowedClusterFailures: &zero},
		{Name: "prod", LabelSelector: &metav1.LabelSelector{}, MaxAllowedClusterFailures: &pct},
	}}
	s.must(d.Apply(s.ctx, &fleet.UpdateStrategy{ObjectMeta: s.meta("budgets", nil), Spec: strategy}))
	run := s.run("run", "app")
	run.Spec.FailurePolicy = policy
	s.must(d.Apply(s.ctx, run))

	got := s.getRun("run")
	if !equality.Semantic.DeepEqual(got.Spec.FailurePolicy, policy) {
		s.t.Fatalf("failurePolicy read back as %+v; want %+v", got.Spec.FailurePolicy, policy)
	}
	strategies, err := d.ListUpdateStrategies(s.ctx)
	s.must(err)
	for _, st := range strategies {
		if st.Name == "budgets" && !equality.Semantic.DeepEqual(st.Spec.Stages[0].MaxAllowedClusterFailures, &zero) ||
			st.Name == "budgets" && !equality.Semantic.DeepEqual(st.Spec.Stages[1].MaxAllowedClusterFailures, &pct) {
			s.t.Errorf("stage budgets read back as %v, %v; want 0, 10%%", st.Spec.Stages[0].MaxAllowedClusterFailures, st.Spec.Stages[1].MaxAllowedClusterFailures)
		}
	}

	got.Status.StagedUpdateStrategySnapshot = strategy.DeepCopy()
	got.Status.Conditions = []metav1.Condition{condition(fleet.StagedUpdateRunConditionInitialized, got.Generation)}
	s.must(s.h.UpdateUpdateRunStatus(s.ctx, got))
	again := s.getRun("run")
	if !equality.Semantic.DeepEqual(again.Spec.FailurePolicy, policy) {
		s.t.Errorf("a status write changed failurePolicy to %+v", again.Spec.FailurePolicy)
	}
	if snap := again.Status.StagedUpdateStrategySnapshot; snap == nil || len(snap.Stages) != 2 ||
		!equality.Semantic.DeepEqual(snap.Stages[1].MaxAllowedClusterFailures, &pct) {
		s.t.Errorf("the strategy snapshot lost the stage budgets: %+v", snap)
	}
}
