package metrics

import (
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
)

const dashboardFile = "../../examples/grafana/gitfleet-dashboard.json"

var (
	promStrings  = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	promMatchers = regexp.MustCompile(`\{[^{}]*\}`)
	promRanges   = regexp.MustCompile(`\[[^\[\]]*\]`)
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	promIdent    = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	labelValues  = regexp.MustCompile(`^label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*)`)
	promKeywords = map[string]bool{"and": true, "or": true, "unless": true, "by": true, "without": true, "on": true,
		"ignoring": true, "group_left": true, "group_right": true, "offset": true, "bool": true, "inf": true, "nan": true, "Inf": true, "NaN": true}
)

// metricNames returns the metric names a PromQL expression selects: what is
// left after dropping strings, label matchers, ranges and grouping label
// lists, that is not a function/aggregation call, a keyword, a Grafana
// variable or part of a number.
func metricNames(expr string) []string {
	e := promStrings.ReplaceAllString(expr, " ")
	e = promMatchers.ReplaceAllString(e, " ")
	e = promRanges.ReplaceAllString(e, " ")
	e = promGrouping.ReplaceAllString(e, " ")
	var out []string
	for _, loc := range promIdent.FindAllStringIndex(e, -1) {
		name := e[loc[0]:loc[1]]
		if loc[0] > 0 && strings.ContainsAny(e[loc[0]-1:loc[0]], "$.0123456789") {
			continue // Grafana variable, or the exponent/unit of a number
		}
		if strings.HasPrefix(strings.TrimLeft(e[loc[1]:], " \t\n"), "(") || promKeywords[name] {
			continue
		}
		out = append(out, name)
	}
	return out
}

func TestMetricNamesTokenizesPromQL(t *testing.T) {
	cases := map[string][]string{
		`sum by (phase) (gitfleet_update_runs)`: {"gitfleet_update_runs"},
		`histogram_quantile(0.9, sum by (le, taskType) (increase(fleet_workload_update_run_approval_request_latency_seconds_bucket{name=~"$run", x="a{b}"}[6h])))`: {
			"fleet_workload_update_run_approval_request_latency_seconds_bucket"},
		`time() - gitfleet_last_processed_commit_timestamp_seconds`:                                           {"gitfleet_last_processed_commit_timestamp_seconds"},
		`max by (placement) (a_metric) - min(b_metric) without (cluster) > bool 1e3`:                          {"a_metric", "b_metric"},
		`rate(x_total[$__rate_interval]) / on(job) group_left(commit) info_metric offset 5m`:                  {"x_total", "info_metric"},
		`topk by (namespace, name) (1, m{failureType!="none"}) and ignoring(reason) other_metric unless nope`: {"m", "other_metric", "nope"},
	}
	for expr, want := range cases {
		if got := metricNames(expr); !reflect.DeepEqual(got, want) {
			t.Errorf("metricNames(%q) = %v, want %v", expr, got, want)
		}
	}
}

// dashboardExprs collects every "expr" string in the dashboard JSON and the
// metric of every label_values() variable query.
func dashboardExprs(t *testing.T) (exprs []string, variableMetrics []string) {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok && k == "expr" {
					exprs = append(exprs, s)
				}
				if s, ok := e.(string); ok && (k == "definition" || k == "query") {
					if m := labelValues.FindStringSubmatch(s); m != nil {
						variableMetrics = append(variableMetrics, m[1])
					}
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(doc)
	return exprs, variableMetrics
}

func TestDashboardUsesOnlyMetricsWeRegister(t *testing.T) {
	registered := map[string]bool{}
	for _, n := range Names {
		registered[n] = true
	}
	histograms := map[string]bool{UpdateRunApprovalRequestLatencySeconds: true, UpdateRunStageClusterUpdatingDurationSeconds: true,
		GitFetchDurationSeconds: true, RenderDurationSeconds: true}

	exprs, vars := dashboardExprs(t)
	if len(exprs) < 10 {
		t.Fatalf("found only %d expressions in %s", len(exprs), dashboardFile)
	}
	used := map[string]bool{}
	for _, expr := range exprs {
		names := metricNames(expr)
		if len(names) == 0 {
			t.Errorf("expression selects no metric: %s", expr)
		}
		for _, n := range names {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if base, ok := strings.CutSuffix(n, suffix); ok && histograms[base] {
					n = base
				}
			}
			if !registered[n] {
				t.Errorf("dashboard uses %q, which this package does not register (in %s)", n, expr)
			}
			used[n] = true
		}
	}
	for _, n := range vars {
		if !registered[n] {
			t.Errorf("dashboard variable queries %q, which this package does not register", n)
		}
	}

	// What the dashboard exists to show.
	for _, must := range []string{
		UpdateRuns, UpdateRunStatusLastTimestampSeconds, UpdateRunStageClusters,
		UpdateRunApprovalRequestLatencySeconds, UpdateRunStageClusterUpdatingDurationSeconds,
		ClusterResourceSnapshotIndex, GitFetchDurationSeconds, RenderDurationSeconds,
		StatusWritebackLagSeconds, StatusPushesTotal, ReconcileErrorsTotal,
	} {
		if !used[must] {
			t.Errorf("dashboard does not show %s", must)
		}
	}
	var unused []string
	for _, n := range Names {
		if !used[n] {
			unused = append(unused, n)
		}
	}
	sort.Strings(unused)
	if len(unused) > 0 {
		t.Logf("metrics without a panel: %v", unused)
	}
}

func TestDashboardQueriesTheDatasourceVariable(t *testing.T) {
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		SchemaVersion int `json:"schemaVersion"`
		Panels        []struct {
			Title      string `json:"title"`
			Type       string `json:"type"`
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
			Targets []struct {
				Datasource struct {
					UID string `json:"uid"`
				} `json:"datasource"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.SchemaVersion < 36 {
		t.Errorf("schemaVersion %d predates datasource references by uid", doc.SchemaVersion)
	}
	for _, p := range doc.Panels {
		if p.Type == "row" {
			continue
		}
		if p.Datasource.UID != "${DS_PROMETHEUS}" {
			t.Errorf("panel %q uses datasource %q", p.Title, p.Datasource.UID)
		}
		for _, tg := range p.Targets {
			if tg.Datasource.UID != "${DS_PROMETHEUS}" {
				t.Errorf("a query of panel %q uses datasource %q", p.Title, tg.Datasource.UID)
			}
		}
	}
}
