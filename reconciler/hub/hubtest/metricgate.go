package hubtest

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// metricGateEvidenceIsStored: a metric gate's evidence (the request's
// status.metricGate, gitfleet's) reads back whole after a status write,
// as it must for the status tree to commit it: on a kube hub the CRD's
// schema must hold every field, or the API server prunes it.
func (s *suite) metricGateEvidenceIsStored() {
	s.must(s.h.CreateApprovalRequest(s.ctx, s.approval("gated", "run", "canary")))
	a, err := s.h.GetApprovalRequest(s.ctx, s.key("gated"))
	s.must(err)
	at := metav1.NewTime(time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC))
	rec := &fleet.MetricGateRecord{
		Query: `max(app_error_ratio{cluster=~"member1|member2"})`, PrometheusURL: "http://prometheus:9090", Threshold: "< 0.05",
		SuccessesRequired: 2, FailureLimit: 1, StartTime: at, Deadline: metav1.NewTime(at.Add(30 * time.Minute)),
		Verdict: fleet.MetricGateFailed, Message: "query `…` returned 0.3 for cluster member2, want < 0.05",
		SuccessesInARow: 0, Failures: 2, EvaluationCount: 3,
		Evaluations: []fleet.MetricEvaluation{
			{Time: at, Result: fleet.MetricEvaluationError, Error: "connection refused"},
			{Time: metav1.NewTime(at.Add(time.Minute)), Result: fleet.MetricEvaluationFail,
				Values: []fleet.MetricSample{{Cluster: "member1", Value: "0.01"}, {Cluster: "member2", Value: "0.3"}}},
			{Time: metav1.NewTime(at.Add(2 * time.Minute)), Result: fleet.MetricEvaluationFail,
				Values: []fleet.MetricSample{{Series: `{job="app"}`, Value: "0.2"}}},
		},
	}
	a.Status.MetricGate = rec.DeepCopy()
	a.Status.Conditions = []metav1.Condition{condition(fleet.ApprovalRequestConditionApproved, 1)}
	s.must(s.h.UpdateApprovalRequestStatus(s.ctx, a))
	got, err := s.h.GetApprovalRequest(s.ctx, s.key("gated"))
	s.must(err)
	if !equality.Semantic.DeepEqual(got.Status.MetricGate, rec) {
		s.t.Errorf("the request's metric gate evidence reads back as\n%+v\nwant\n%+v", got.Status.MetricGate, rec)
	}
}
