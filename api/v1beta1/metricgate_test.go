package v1beta1

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func metricTask(mutate func(*MetricGate)) StageTask {
	g := &MetricGate{Query: `sum(rate(errors{cluster=~"$clusters"}[5m]))`, Threshold: MetricThreshold{Operator: "<", Value: "0.05"}}
	if mutate != nil {
		mutate(g)
	}
	return StageTask{Type: StageTaskTypeMetric, Metric: g}
}

func TestValidateMetricGates(t *testing.T) {
	stage := func(after ...StageTask) *UpdateStrategy {
		return &UpdateStrategy{ObjectMeta: metav1.ObjectMeta{Name: "s"},
			Spec: UpdateStrategySpec{Stages: []StageConfig{{Name: "canary", AfterStageTasks: after}}}}
	}
	const at = "spec.stages[0].afterStageTasks[0]"
	cases := []struct {
		name string
		s    *UpdateStrategy
		want *want
	}{
		{"a valid gate", stage(metricTask(nil)), nil},
		{"a gate beside a TimedWait", stage(metricTask(nil), StageTask{Type: StageTaskTypeTimedWait, WaitTime: &metav1.Duration{Duration: time.Minute}}), nil},
		{"Metric without a metric block", stage(StageTask{Type: StageTaskTypeMetric}), &want{at + ".metric", field.ErrorTypeRequired, ""}},
		{"a metric block on an Approval", stage(StageTask{Type: StageTaskTypeApproval, Metric: metricTask(nil).Metric}), &want{at + ".metric", field.ErrorTypeForbidden, ""}},
		{"an unknown operator", stage(metricTask(func(g *MetricGate) { g.Threshold.Operator = "=<" })), &want{at + ".metric.threshold.operator", field.ErrorTypeNotSupported, ""}},
		{"a threshold that is no number", stage(metricTask(func(g *MetricGate) { g.Threshold.Value = "5%" })), &want{at + ".metric.threshold.value", field.ErrorTypeInvalid, "not a decimal number"}},
		{"both placeholders", stage(metricTask(func(g *MetricGate) { g.Query = `up{cluster="$cluster"} + on() count(up{cluster=~"$clusters"})` })), &want{at + ".metric.query", field.ErrorTypeInvalid, ""}},
		{"a Prometheus that is no URL", stage(metricTask(func(g *MetricGate) { g.PrometheusURL = "prom:9090" })), &want{at + ".metric.prometheusURL", field.ErrorTypeInvalid, ""}},
		{"a zero timeout", stage(metricTask(func(g *MetricGate) { g.Timeout = &metav1.Duration{} })), &want{at + ".metric.timeout", field.ErrorTypeInvalid, ""}},
		{"an Approval and a Metric in one list", stage(metricTask(nil), StageTask{Type: StageTaskTypeApproval}), &want{"spec.stages[0].afterStageTasks", field.ErrorTypeInvalid, ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateUpdateStrategySpec(&tc.s.Spec, field.NewPath("spec"))
			if tc.want == nil {
				if len(errs) != 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			checkOne(t, errs, *tc.want)
		})
	}
	t.Run("not on the deletion stage", func(t *testing.T) {
		s := stage()
		s.Spec.DeleteStage = &DeleteStageConfig{BeforeStageTasks: []StageTask{metricTask(nil)}}
		checkOne(t, ValidateUpdateStrategySpec(&s.Spec, field.NewPath("spec")), want{"spec.deleteStage.beforeStageTasks[0].type", field.ErrorTypeNotSupported, ""})
	})
}

func TestMetricThresholdHolds(t *testing.T) {
	for _, tc := range []struct {
		op   string
		v    float64
		want bool
	}{{"<", 0.04, true}, {"<", 0.05, false}, {"<=", 0.05, true}, {">", 0.05, false}, {">=", 0.05, true}, {"==", 0.05, true}, {"!=", 0.05, false}} {
		if got := (MetricThreshold{Operator: tc.op, Value: "0.05"}).Holds(tc.v); got != tc.want {
			t.Errorf("%v %s 0.05 = %v, want %v", tc.v, tc.op, got, tc.want)
		}
	}
}
