package metricgate

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/internal/testing/promtest"
	"github.com/gitfleet/gitfleet/internal/testing/testproc"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/updaterun"
)

// The gate's state machine runs on a fake time line (now, stepped by the
// test); its evaluations go to a real Prometheus (Debian's package, as
// gitsource/gitops's dashboard test runs it) scraping an exporter whose
// values the test sets, waiting each time until Prometheus has scraped
// them.

var clusters = []string{"member1", "member2"}

// exporter serves app_error_ratio{cluster} for the stage's clusters.
type exporter struct {
	ratio *prometheus.GaugeVec
	addr  string
}

func newExporter(t *testing.T) *exporter {
	reg := prometheus.NewRegistry()
	e := &exporter{ratio: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "app_error_ratio", Help: "Errors per request."}, []string{"cluster"})}
	reg.MustRegister(e.ratio)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	e.addr = strings.TrimPrefix(srv.URL, "http://")
	return e
}

type promServer struct {
	url  string
	proc *testproc.Server
	api  promv1.API
}

// startPrometheus runs Debian's prometheus scraping target every second
// (promtest.Command) and waits until it is ready.
func startPrometheus(t *testing.T, target string) *promServer {
	t.Helper()
	cmd, url := promtest.Command(t, target)
	proc, err := testproc.Start("prometheus", cmd, filepath.Join(t.TempDir(), "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		proc.Kill()
		if t.Failed() {
			t.Logf("prometheus log:\n%s", proc.Tail())
		}
	})
	p := &promServer{url: url, proc: proc}
	c, err := api.NewClient(api.Config{Address: p.url})
	if err != nil {
		t.Fatal(err)
	}
	p.api = promv1.NewAPI(c)
	if err := testproc.Wait(t, "prometheus to be ready", func(ctx context.Context) bool { return promtest.Ready(ctx, p.url) }, proc); err != nil {
		t.Fatal(err)
	}
	return p
}

// set gives the clusters' ratios and waits until Prometheus has them.
func (p *promServer) set(t *testing.T, e *exporter, values ...float64) {
	t.Helper()
	for i, c := range clusters {
		e.ratio.WithLabelValues(c).Set(values[i])
	}
	if err := testproc.Wait(t, fmt.Sprintf("prometheus to scrape %v", values), func(ctx context.Context) bool {
		v, _, _, err := p.api.Query(ctx, "app_error_ratio", time.Time{})
		if err != nil {
			return false
		}
		got, _ := Samples(v, "")
		if len(got) != len(clusters) {
			return false
		}
		for _, s := range got {
			for i, c := range clusters {
				if s.Cluster == c && s.Value != values[i] {
					return false
				}
			}
		}
		return true
	}, p.proc); err != nil {
		t.Fatal(err)
	}
}

// gateRun steps one gate on a fake time line: each evaluation asks the
// real Prometheus and waits for the evaluator's wake-up, as the engine's
// next pass would.
type gateRun struct {
	t     *testing.T
	gate  *fleet.MetricGate
	ev    *Evaluator
	wakes chan hub.Key
	rec   *fleet.MetricGateRecord
	now   time.Time
	name  string
}

var start = time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)

func newGateRun(t *testing.T, ev *Evaluator, gate *fleet.MetricGate) *gateRun {
	g := &gateRun{t: t, gate: gate, ev: ev, wakes: make(chan hub.Key, 1), now: start, name: t.Name()}
	ev.SetWake(func(k hub.Key) { g.wakes <- k })
	g.rec = updaterun.NewMetricGateRecord(gate, start)
	return g
}

// evaluate runs the evaluation due now, then moves now by the interval.
func (g *gateRun) evaluate() {
	g.t.Helper()
	q := updaterun.MetricQuery{Run: hub.Key{Name: g.name}, Request: "run-after-canary", PrometheusURL: g.gate.PrometheusURL,
		Queries: updaterun.MetricQueries(g.gate, clusters)}
	if g.rec.Verdict != fleet.MetricGatePending {
		g.t.Fatalf("the gate decided already: %+v", g.rec)
	}
	before := g.rec.EvaluationCount
	if changed, _ := updaterun.StepMetricGate(g.gate, g.rec, g.now, g.ev, q, nil); !changed {
		select {
		case <-g.wakes:
		case <-await.Context(g.t).Done():
			g.t.Fatal("the evaluator never said that its evaluation finished")
		}
		updaterun.StepMetricGate(g.gate, g.rec, g.now, g.ev, q, nil)
	}
	if g.rec.EvaluationCount != before+1 && g.rec.Verdict == fleet.MetricGatePending {
		g.t.Fatalf("no evaluation recorded at %s: %+v", g.now, g.rec)
	}
	g.now = g.now.Add(g.gate.IntervalOrDefault())
}

func (g *gateRun) want(verdict fleet.MetricGateVerdict, results string, msg string) {
	g.t.Helper()
	var got []string
	for _, e := range g.rec.Evaluations {
		got = append(got, string(e.Result))
	}
	if g.rec.Verdict != verdict || strings.Join(got, ",") != results || !strings.Contains(g.rec.Message, msg) {
		g.t.Fatalf("gate %s after %s: %q, want %s after %s with a message containing %q", g.rec.Verdict, strings.Join(got, ","), g.rec.Message, verdict, results, msg)
	}
}

func TestMetricGatesOnARealPrometheus(t *testing.T) {
	exp := newExporter(t)
	prom := startPrometheus(t, exp.addr)
	ev := &Evaluator{URL: prom.url}
	gate := func(query string, failureLimit int32) *fleet.MetricGate {
		return &fleet.MetricGate{Query: query, Threshold: fleet.MetricThreshold{Operator: "<", Value: "0.05"},
			Interval: &metav1.Duration{Duration: time.Minute}, SuccessesRequired: 3, FailureLimit: failureLimit,
			Timeout: &metav1.Duration{Duration: 5 * time.Minute}}
	}
	overTheStage := `max(app_error_ratio{cluster=~"$clusters"})`
	perCluster := `app_error_ratio{cluster="$cluster"}`

	t.Run("pass", func(t *testing.T) {
		g := newGateRun(t, ev, gate(overTheStage, 0))
		for _, v := range []float64{0.01, 0.02, 0.01} {
			prom.set(t, exp, v, 0)
			g.evaluate()
		}
		g.want(fleet.MetricGatePassed, "Pass,Pass,Pass", "3 evaluation(s) in a row of query `"+overTheStage+"` held < 0.05")
		if v := g.rec.Evaluations[1].Values; len(v) != 1 || v[0].Value != "0.02" {
			t.Errorf("the second evaluation recorded %+v, want the stage's maximum 0.02", v)
		}
	})
	t.Run("fail", func(t *testing.T) {
		g := newGateRun(t, ev, gate(perCluster, 0))
		prom.set(t, exp, 0.01, 0.01)
		g.evaluate()
		prom.set(t, exp, 0.01, 0.25)
		g.evaluate()
		g.want(fleet.MetricGateFailed, "Pass,Fail", "query `"+perCluster+"` returned 0.25 for cluster member2, want < 0.05 (1 failing evaluation(s), failure limit 0)")
		if v := g.rec.Evaluations[1].Values; len(v) != 2 || v[0].Cluster != "member1" || v[1].Value != "0.25" {
			t.Errorf("the failing evaluation recorded %+v, want both clusters' values", v)
		}
	})
	t.Run("flapping", func(t *testing.T) {
		flapping := gate(perCluster, 2)
		flapping.Timeout.Duration = 10 * time.Minute
		g := newGateRun(t, ev, flapping)
		for i, v := range []float64{0.01, 0.01, 0.3, 0.01, 0.2, 0.01, 0.01, 0.01} {
			prom.set(t, exp, 0, v)
			g.evaluate()
			if i == 3 && g.rec.SuccessesInARow != 1 {
				t.Fatalf("after pass, pass, fail, pass: %d successes in a row, want 1 (a failure starts the count again)", g.rec.SuccessesInARow)
			}
		}
		g.want(fleet.MetricGatePassed, "Pass,Pass,Fail,Pass,Fail,Pass,Pass,Pass", "3 evaluation(s) in a row")
	})
	t.Run("prometheus down", func(t *testing.T) {
		prom.proc.Kill()
		<-prom.proc.Exited()
		g := newGateRun(t, ev, gate(overTheStage, 0))
		for range 5 {
			g.evaluate()
		}
		g.want(fleet.MetricGatePending, "Error,Error,Error,Error,Error", "connection refused")
		g.evaluate() // at the deadline: no query, the gate gives up
		g.want(fleet.MetricGateTimedOut, "Error,Error,Error,Error,Error", "the metric gate timed out after 5m0s undecided")
	})
}

func TestAGateWithoutPrometheusErrsAtOnce(t *testing.T) {
	res, ok := (&Evaluator{}).Evaluate(updaterun.MetricQuery{Seq: 1, Queries: []updaterun.ClusterQuery{{Expr: "up"}}})
	if !ok || res.Err == nil || res.Err.Error() != updaterun.MetricGateNoPrometheusMessage {
		t.Fatalf("got %+v, %v; want the error %q at once", res, ok, updaterun.MetricGateNoPrometheusMessage)
	}
}

func TestSamplesNameTheirCluster(t *testing.T) {
	vec := model.Vector{
		{Metric: model.Metric{"cluster": "member1", "job": "app"}, Value: 0.5},
		{Metric: model.Metric{"job": "app"}, Value: 1},
		{Metric: model.Metric{}, Value: 2},
	}
	got, err := Samples(vec, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []updaterun.MetricValue{{Cluster: "member1", Value: 0.5}, {Series: `{job="app"}`, Value: 1}, {Value: 2}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got, _ := Samples(&model.Scalar{Value: 3}, "member2"); len(got) != 1 || got[0].Cluster != "member2" || got[0].Value != 3 {
		t.Errorf("scalar: got %+v", got)
	}
	if _, err := Samples(model.Matrix{}, ""); err == nil {
		t.Error("a range vector was taken")
	}
}
