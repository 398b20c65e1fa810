package gitops_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource/gitops"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/status/metrics"
)

// sample is one line of the Prometheus text exposition format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// scrape GETs a /metrics endpoint and parses its samples.
func scrape(t *testing.T, url string) []sample {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	var out []sample
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			t.Fatalf("parsing %q: %v", line, err)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// parseSample parses `name{k="v",...} value`.
func parseSample(line string) (sample, error) {
	s := sample{labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return s, fmt.Errorf("no value")
	}
	s.name, line = line[:i], line[i:]
	if line[0] == '{' {
		line = line[1:]
		for line[0] != '}' {
			eq := strings.IndexByte(line, '=')
			if eq < 0 || len(line) < eq+2 || line[eq+1] != '"' {
				return s, fmt.Errorf("bad label")
			}
			key := line[:eq]
			line = line[eq+2:]
			var v strings.Builder
			for line[0] != '"' {
				if line[0] == '\\' && len(line) > 1 {
					switch line[1] {
					case 'n':
						v.WriteByte('\n')
					default:
						v.WriteByte(line[1])
					}
					line = line[2:]
					continue
				}
				v.WriteByte(line[0])
				line = line[1:]
			}
			s.labels[key] = v.String()
			line = strings.TrimPrefix(line[1:], ",")
		}
		line = line[1:]
	}
	f := strings.Fields(line)
	if len(f) == 0 {
		return s, fmt.Errorf("no value")
	}
	v, err := strconv.ParseFloat(f[0], 64)
	s.value = v
	return s, err
}

// find returns the samples of a metric whose labels include want.
func find(samples []sample, name string, want map[string]string) []sample {
	var out []sample
next:
	for _, s := range samples {
		if s.name != name {
			continue
		}
		for k, v := range want {
			if s.labels[k] != v {
				continue next
			}
		}
		out = append(out, s)
	}
	return out
}

// value is the single sample of a metric with labels want, or -1.
func value(samples []sample, name string, want map[string]string) float64 {
	if got := find(samples, name, want); len(got) == 1 {
		return got[0].value
	}
	return -1
}

// statusSeries lists a run's KubeFleet status series as
// condition/status/reason, sorted, and their timestamps.
func statusSeries(samples []sample, run string) (names []string, at map[string]float64) {
	at = map[string]float64{}
	for _, s := range find(samples, metrics.UpdateRunStatusLastTimestampSeconds, map[string]string{"name": run}) {
		k := s.labels["condition"] + "/" + s.labels["status"] + "/" + s.labels["reason"]
		names = append(names, k)
		at[k] = s.value
	}
	sort.Strings(names)
	return names, at
}

func httpStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// What a Prometheus server scraping gitfleet during a rollout sees: the run's
// KubeFleet status series move from Progressing to Waiting to Succeeded, the
// approval latency is observed, every cluster's snapshot index is exported,
// and the Git side (fetches, renders, status pushes — including one that
// raced a person's push) is counted.
func TestMetricsScrapedDuringARolloutFollowTheRun(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, nil)
	endpoints := metrics.Handler(reg)
	srv := httptest.NewServer(endpoints)
	defer srv.Close()
	if code := httpStatus(t, srv.URL+"/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before the daemon opened: %d, want 503", code)
	}

	r := newFleetRepo(t, timedFleet(t, "0s", "1m"))
	// No polling, and a fake clock: the daemon fetches only when poked, and
	// the soak ends only when the test steps the clock, so a person's push
	// during the soak is one the daemon's next status push cannot know
	// about: that push is rejected and re-applied, every time.
	clk := clock.NewFake(time.Now())
	d := startDaemonWith(t, "file://"+r.remote, t.TempDir(), 0, func(c *gitops.Config) {
		onFakeClock(clk)(c)
		measuredBy(m)(c)
	})
	endpoints.SetReady()
	if code := httpStatus(t, srv.URL+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz after the daemon opened: %d, want 200", code)
	}

	d.advanceUntil(t, clk, "the staging soak", func() bool { return soaking(r.run("example-run")) })
	r.commit("a person pushes during the soak", map[string][]byte{"docs/soak.md": []byte("soaking\n")})
	d.advanceUntil(t, clk, "the canary approval request", func() bool { return r.approval(approvalName) != nil })

	const run = "example-run"
	waiting := "Progressing/False/" + fleet.UpdateRunWaitingReason
	progressing := "Progressing/True/" + fleet.UpdateRunProgressingReason
	succeeded := "Succeeded/True/" + fleet.UpdateRunSucceededReason

	// The placement status (and with it the bindings' series) follows the
	// run's own status shortly.
	var s []sample
	d.advanceUntil(t, clk, "every cluster's snapshot index series", func() bool {
		s = scrape(t, srv.URL+"/metrics")
		return len(find(s, metrics.ClusterResourceSnapshotIndex, map[string]string{"placement": "example-placement"})) == 3
	})
	names, _ := statusSeries(s, run)
	if !contains(names, waiting) || !contains(names, progressing) || contains(names, succeeded) {
		t.Errorf("status series while waiting on the canary approval: %v, want %s and %s, not %s", names, progressing, waiting, succeeded)
	}
	for _, member := range []string{"member1", "member2", "member3"} {
		if v := value(s, metrics.ClusterResourceSnapshotIndex, map[string]string{"placement": "example-placement", "cluster": member}); v != 0 {
			t.Errorf("%s{cluster=%q} = %v, want 0", metrics.ClusterResourceSnapshotIndex, member, v)
		}
	}
	if v := value(s, metrics.GitFetchDurationSeconds+"_count", nil); v <= 0 {
		t.Errorf("%s_count = %v, want > 0", metrics.GitFetchDurationSeconds, v)
	}
	if v := value(s, metrics.RenderDurationSeconds+"_count", nil); v <= 0 {
		t.Errorf("%s_count = %v, want > 0", metrics.RenderDurationSeconds, v)
	}
	if v := value(s, metrics.StatusPushesTotal, map[string]string{"result": metrics.PushSuccess}); v <= 0 {
		t.Errorf("%s{result=success} = %v, want > 0", metrics.StatusPushesTotal, v)
	}
	if v := value(s, metrics.StatusPushesTotal, map[string]string{"result": metrics.PushConflict}); v < 1 {
		t.Errorf("%s{result=conflict} = %v, want >= 1: the push after the soak had to be re-applied on the person's commit", metrics.StatusPushesTotal, v)
	}
	if v := value(s, metrics.ResourceSnapshotsTotal, nil); v != 1 {
		t.Errorf("%s = %v, want 1", metrics.ResourceSnapshotsTotal, v)
	}
	if v := value(s, metrics.UpdateRuns, map[string]string{"phase": fleet.PhaseWaiting}); v != 1 {
		t.Errorf("%s{phase=Waiting} = %v, want 1", metrics.UpdateRuns, v)
	}
	latency := metrics.UpdateRunApprovalRequestLatencySeconds + "_count"
	if v := value(s, latency, map[string]string{"name": run, "taskType": "afterStage"}); v > 0 {
		t.Errorf("%s = %v before any approval", latency, v)
	}

	r.approve(approvalName)
	d.poke()
	d.advanceUntil(t, clk, "the approval latency to be observed", func() bool {
		return value(scrape(t, srv.URL+"/metrics"), latency, map[string]string{"name": run, "taskType": "afterStage"}) >= 1
	})

	d.advanceUntil(t, clk, "the run to succeed", func() bool { return r.run(run).Phase() == fleet.PhaseSucceeded })
	d.advanceUntil(t, clk, "the Succeeded status series", func() bool {
		names, _ := statusSeries(scrape(t, srv.URL+"/metrics"), run)
		return contains(names, succeeded)
	})
	s = scrape(t, srv.URL+"/metrics")
	names, at := statusSeries(s, run)
	for _, want := range []string{progressing, waiting, succeeded} {
		if !contains(names, want) {
			t.Errorf("status series at the end: %v, missing %s", names, want)
		}
	}
	if at[succeeded] < at[waiting] {
		t.Errorf("the Succeeded series (%v) is older than the Waiting one (%v)", at[succeeded], at[waiting])
	}
	if v := value(s, metrics.UpdateRuns, map[string]string{"phase": fleet.PhaseSucceeded}); v != 1 {
		t.Errorf("%s{phase=Succeeded} = %v, want 1", metrics.UpdateRuns, v)
	}
	info := find(s, metrics.LastProcessedCommitInfo, nil)
	if len(info) != 1 {
		t.Fatalf("%d %s series, want 1", len(info), metrics.LastProcessedCommitInfo)
	}
	if _, err := gitRun(r.remote, "merge-base", "--is-ancestor", info[0].labels["commit"], "main"); err != nil {
		t.Errorf("the last processed commit %s is not on main", info[0].labels["commit"])
	}
}

// measuredBy wires m into the daemon as serve does.
func measuredBy(m *metrics.Metrics) func(*gitops.Config) {
	return func(c *gitops.Config) {
		c.Metrics = m
		c.Observer = gitops.MetricsObserver{M: m}
		c.OnReconcileError = func(controller string, _ error) { m.ObserveReconcileError(controller) }
		c.OnBindings = func(p hub.Key, bindings []*fleet.Binding) { m.ObserveBindings(p.Name, bindings) }
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
