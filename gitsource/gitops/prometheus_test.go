package gitops_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource/gitops"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/internal/testing/promtest"
	"github.com/gitfleet/gitfleet/status/metrics"
)

const dashboardFile = "../../examples/grafana/gitfleet-dashboard.json"

// prometheusServer is a real Prometheus (Debian's package) scraping one
// target, in a process group of its own that the test kills at the end;
// the test's waits fail at once if it exits before (see startWatched).
type prometheusServer struct {
	url string
}

// startPrometheus runs Debian's prometheus scraping target every second
// (promtest.Command), as a watched server of the test.
func startPrometheus(t *testing.T, target string) *prometheusServer {
	t.Helper()
	cmd, url := promtest.Command(t, target)
	p := &prometheusServer{url: url}
	startWatched(t, "prometheus", cmd)
	eventually(t, "prometheus to be ready", func() bool { return promtest.Ready(t.Context(), p.url) })
	return p
}

// promSeries is one series of an instant query's result.
type promSeries struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// query evaluates expr now through the HTTP API.
func (p *prometheusServer) query(t *testing.T, expr string) ([]promSeries, error) {
	t.Helper()
	resp, err := http.Get(p.url + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", body, err)
	}
	if r.Status != "success" {
		return nil, errors.New(r.Error)
	}
	if r.Data.ResultType != "vector" {
		return nil, fmt.Errorf("result type %s, want vector", r.Data.ResultType)
	}
	var out []promSeries
	return out, json.Unmarshal(r.Data.Result, &out)
}

// value is the value of the single series expr returns, or "" if it
// returns none.
func (p *prometheusServer) value(t *testing.T, expr string) string {
	t.Helper()
	s, err := p.query(t, expr)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	if len(s) != 1 {
		return ""
	}
	return fmt.Sprint(s[0].Value[1])
}

// dashboardQueries are the PromQL expressions of every panel, as Grafana
// sends them with every variable at "All" and ranges long enough to span
// the whole test: a query's result then depends on what was scraped, never
// on when.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var exprs []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && k == "expr" {
					exprs = append(exprs, s)
					continue
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	var dashboard any
	if err := json.Unmarshal(data, &dashboard); err != nil {
		t.Fatal(err)
	}
	walk(dashboard)
	variables := strings.NewReplacer(`"$namespace"`, `".*"`, `"$run"`, `".*"`, `"$placement"`, `".*"`,
		"$__rate_interval", "1h", "$__range", "1h")
	for i, e := range exprs {
		exprs[i] = variables.Replace(e)
		if strings.Contains(exprs[i], "$") {
			t.Fatalf("the test does not know a variable of %s", e)
		}
	}
	return exprs
}

// whilePending are the queries of things that exist only while an approval
// is pending; they are checked then.
var whilePending = regexp.MustCompile(`^` + metrics.ApprovalRequestPendingSeconds + `\{`)

// The Grafana dashboard against a real Prometheus scraping gitfleet during a
// rollout: every panel's query is valid PromQL and returns series, the
// run-status series move with the run (Progressing, Waiting, Succeeded),
// and the source's readiness with a commit that does not render and its fix.
// Time is the daemon's fake clock, so each state holds until Prometheus has
// scraped it.
func TestTheDashboardQueriesAnswerFromARealPrometheus(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, nil)
	endpoints := metrics.Handler(reg)
	srv := httptest.NewServer(endpoints)
	defer srv.Close()
	prom := startPrometheus(t, strings.TrimPrefix(srv.URL, "http://"))
	queries := dashboardQueries(t)

	files := timedFleet(t, "10s", "1m")
	// A second run that fails to initialize (its strategy does not exist):
	// the failure panels have something to show.
	files["broken-run.yaml"] = []byte("apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterStagedUpdateRun\nmetadata:\n  name: broken-run\nspec:\n  placementName: example-placement\n  stagedRolloutStrategyName: no-such-strategy\n  state: Run\n")
	r := newFleetRepo(t, files)
	clk := clock.NewFake(time.Now())
	d := startDaemonWith(t, "file://"+r.remote, t.TempDir(), 0, func(c *gitops.Config) {
		onFakeClock(clk)(c)
		measuredBy(m)(c)
	})
	endpoints.SetReady()

	phase := func(p string) string {
		return prom.value(t, fmt.Sprintf(`sum(%s{phase=%q})`, metrics.UpdateRuns, p))
	}
	runStatus := func(cond, status, reason string) string {
		return prom.value(t, fmt.Sprintf(`count(%s{name="example-run", condition=%q, status=%q, reason=%q})`,
			metrics.UpdateRunStatusLastTimestampSeconds, cond, status, reason))
	}
	// Staging's member is not available before the test steps the clock.
	eventually(t, "Prometheus to see the run progressing", func() bool {
		return phase(fleet.PhaseProgressing) == "1" && runStatus("Progressing", "True", fleet.UpdateRunProgressingReason) == "1"
	})

	// A fetch that fails while the remote is away, for the error panel.
	bringBack := r.takeAway()
	d.poke()
	eventually(t, "a failed fetch", func() bool { return d.LastError() != nil })
	bringBack()
	eventually(t, "the fetch to succeed again", func() bool { return d.LastError() == nil })

	// A commit that does not render, then its fix, for the source and
	// refused-commit panels.
	sourceReady := func() string { return prom.value(t, metrics.SourceReady+`{name="main"}`) }
	r.commit("a kustomization that does not build", map[string][]byte{"kustomization.yaml": []byte(
		"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - missing.yaml\n")})
	d.poke()
	eventually(t, "Prometheus to see the source not ready", func() bool { return sourceReady() == "0" })
	r.commit("fix: no kustomization", map[string][]byte{"kustomization.yaml": nil})
	d.poke()
	eventually(t, "Prometheus to see the source ready again", func() bool { return sourceReady() == "1" })

	d.advanceUntil(t, clk, "the canary approval request", func() bool { return r.approval(approvalName) != nil })
	eventually(t, "Prometheus to see the run waiting", func() bool {
		return phase(fleet.PhaseWaiting) == "1" && phase(fleet.PhaseProgressing) == "0" &&
			runStatus("Progressing", "False", fleet.UpdateRunWaitingReason) == "1"
	})
	for _, q := range queries {
		if !whilePending.MatchString(q) {
			continue
		}
		if s, err := prom.query(t, q); err != nil || len(s) == 0 {
			t.Errorf("while the approval is pending, %s returns %v (%v), want series", q, s, err)
		}
	}

	r.approve(approvalName)
	d.poke()
	d.advanceUntil(t, clk, "the run to succeed", func() bool {
		run := r.run("example-run")
		return run != nil && run.Phase() == fleet.PhaseSucceeded
	})
	eventually(t, "Prometheus to see the run succeeded", func() bool {
		return phase(fleet.PhaseSucceeded) == "1" && phase(fleet.PhaseWaiting) == "0" &&
			runStatus("Succeeded", "True", fleet.UpdateRunSucceededReason) == "1"
	})

	// A second rollout gets stuck on a member that never becomes
	// available: its passes fail, for the reconcile error panel.
	members := strings.Replace(string(files["members.yaml"]),
		"name: member2\n  labels:\n    environment: staging\n  annotations:\n",
		"name: member2\n  labels:\n    environment: staging\n  annotations:\n    gitfleet.io/sim-unavailable: \"the image does not pull\"\n", 1)
	workload := strings.Replace(string(files["workload.yaml"]), "key: value1", "key: value2", 1)
	secondRun := strings.Replace(string(files["run.yaml"]), "name: example-run", "name: second-run", 1)
	if members == string(files["members.yaml"]) || workload == string(files["workload.yaml"]) {
		t.Fatal("the quickstart changed: the test cannot make member2 unavailable or change the workload")
	}
	r.commit("a rollout that gets stuck", map[string][]byte{"members.yaml": []byte(members), "workload.yaml": []byte(workload),
		"second-run.yaml": []byte(secondRun)})
	d.poke()
	d.advanceUntil(t, clk, "Prometheus to see the second run fail a pass", func() bool {
		v := prom.value(t, "sum("+metrics.ReconcileErrorsTotal+")")
		return v != "" && v != "0"
	})

	for _, q := range queries {
		if whilePending.MatchString(q) {
			continue
		}
		var s []promSeries
		var err error
		// The last scrape may not hold the newest observations yet (a
		// histogram observed at the end): wait for series, not for time.
		eventually(t, "series for "+q, func() bool {
			s, err = prom.query(t, q)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			return len(s) > 0
		})
	}
	if got := prom.value(t, fmt.Sprintf(`count(%s{failureType!="none"})`, metrics.UpdateRunStatusLastTimestampSeconds)); got == "" {
		t.Error("no failed run status series for the run that failed to initialize")
	}
}
