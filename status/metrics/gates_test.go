package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/updaterun"
)

var _ updaterun.GateRecorder = (*Metrics)(nil)

func TestGateEvaluationsAreCountedByResult(t *testing.T) {
	m := New(nil, nil)
	for _, r := range []fleet.MetricEvaluationResult{fleet.MetricEvaluationPass, fleet.MetricEvaluationPass, fleet.MetricEvaluationFail, fleet.MetricEvaluationError} {
		m.CountGateEvaluation(r)
	}
	for result, want := range map[string]float64{"pass": 2, "fail": 1, "error": 1} {
		if got := testutil.ToFloat64(m.gates.WithLabelValues(result)); got != want {
			t.Errorf("%s{result=%q} = %v, want %v", GateEvaluationsTotal, result, got, want)
		}
	}
}
