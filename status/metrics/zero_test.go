package metrics

import (
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/gitfleet/gitfleet/reconciler"
)

// Every counter is exported at 0 from the start, with each label set known
// in advance, so a dashboard's panel of its increase shows 0 rather than
// "no data" until the first error.
func TestEveryCounterIsExportedAtZeroFromTheStart(t *testing.T) {
	reg := prometheus.NewRegistry()
	New(reg, nil)
	NewForge(reg, []string{"pull_request", "comment"}, []string{"unreachable", "other"})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string][]string{} // counter name → label values of its series
	for _, mf := range mfs {
		if mf.GetType() != dto.MetricType_COUNTER {
			continue
		}
		for _, m := range mf.GetMetric() {
			if v := m.GetCounter().GetValue(); v != 0 {
				t.Errorf("%s starts at %v", mf.GetName(), v)
			}
			var values string
			for _, l := range m.GetLabel() {
				values += l.GetValue() + ","
			}
			series[mf.GetName()] = append(series[mf.GetName()], values)
		}
	}
	for _, tc := range []struct {
		counter string
		want    []string
	}{
		{GitFetchErrorsTotal, []string{""}},
		{ResourceSnapshotsTotal, []string{""}},
		{StatusPushesTotal, []string{"conflict,", "error,", "success,"}},
		{GateEvaluationsTotal, []string{"error,", "fail,", "pass,"}},
		{RenderFailuresTotal, []string{"RenderFailed,", "RenderMemoryExceeded,", "RenderTimedOut,"}},
		{ReconcileErrorsTotal, func() []string {
			var v []string
			for _, c := range reconciler.Controllers {
				v = append(v, c+",")
			}
			slices.Sort(v)
			return v
		}()},
		{HubWriteConflictsTotal, []string{"approval,", "binding,", "other,", "updaterun,"}},
		{ForgeAPIErrorsTotal, []string{"other,comment,", "other,pull_request,", "unreachable,comment,", "unreachable,pull_request,"}},
		{RollbackPullRequestsTotal, []string{"no_target,", "opened,"}},
	} {
		got := series[tc.counter]
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s exports %q at the start, want %q", tc.counter, got, tc.want)
		}
	}
}
