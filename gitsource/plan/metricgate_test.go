package plan

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/gittest"
)

// A strategy whose canary stage ends in a metric gate: the plan shows the
// gate on the stage, with its query, threshold and timing, and — as for an
// approval the change opens — counts it as given, so the run completes.
func TestPlanShowsAMetricGateOnItsStage(t *testing.T) {
	repo := quickstart(t)
	gittest.Must(t, repo, "checkout", "-q", "-b", "change")
	replace(t, repo, "strategy.yaml", "      afterStageTasks:\n        - type: Approval\n",
		"      afterStageTasks:\n        - type: Metric\n          metric:\n            query: max(app_error_ratio{cluster=~\"$clusters\"})\n"+
			"            threshold: {operator: \"<\", value: \"0.05\"}\n            successesRequired: 3\n            timeout: 1h30m\n")
	commit(t, repo, "a metric gate after canary")

	p, err := Compute(context.Background(), Options{Repo: repo, Base: "main", Head: "change"})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteText(&out, p); err != nil {
		t.Fatal(err)
	}
	want := "Metric `max(app_error_ratio{cluster=~\"$clusters\"})` < 0.05 (3 in a row every 1m, 0 failure(s) allowed, timeout 1h30m)"
	if !strings.Contains(out.String(), want) {
		t.Errorf("the plan lacks %q:\n%s", want, out.String())
	}
	for _, r := range p.Runs {
		if r.After != "Succeeded" {
			t.Errorf("%s ends %s, want Succeeded (the gate counts as given, as an approval the change opens):\n%s", r.Name, r.After, out.String())
		}
	}
}

// A plan's -o json/yaml shows a gate as it will run: every default
// applied, a failure limit of 0 included, the threshold as one string (why
// MetricGate is the plan's own type, not api/v1beta1's).
func TestAPlanShowsAMetricGateWithItsDefaults(t *testing.T) {
	got, err := json.Marshal(gates([]fleet.StageTask{{Type: fleet.StageTaskTypeMetric, Metric: &fleet.MetricGate{
		Query: "up", Threshold: fleet.MetricThreshold{Operator: "<", Value: "0.05"}}}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"type":"Metric","metric":{"query":"up","threshold":"\u003c 0.05","successesRequired":1,"failureLimit":0,"interval":"1m0s","timeout":"30m0s"}}]`
	if string(got) != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}
