package metricgate

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/updaterun"
)

// countingPrometheus answers every instant query with the scalar 0.01 and
// counts the requests it was sent.
func countingPrometheus(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"scalar","result":[1700000000,"0.01"]}}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// evaluate runs one evaluation of a gate naming gateURL to its end.
func evaluate(t *testing.T, ev *Evaluator, gateURL string) updaterun.MetricResult {
	t.Helper()
	wakes := make(chan hub.Key, 1)
	ev.SetWake(func(k hub.Key) { wakes <- k })
	q := updaterun.MetricQuery{Run: hub.Key{Name: "run"}, Request: "run-after-canary", Seq: 1, PrometheusURL: gateURL,
		Queries: []updaterun.ClusterQuery{{Expr: "app_error_ratio"}}}
	if res, ok := ev.Evaluate(q); ok {
		return res
	}
	select {
	case <-wakes:
	case <-await.Context(t).Done():
		t.Fatal("the evaluator never said that its evaluation finished")
	}
	res, ok := ev.Evaluate(q)
	if !ok {
		t.Fatal("the evaluation woke its run but has no result")
	}
	return res
}

func TestAGateAsksOnlyAnAllowedPrometheus(t *testing.T) {
	served, servedRequests := countingPrometheus(t)
	allowed, allowedRequests := countingPrometheus(t)
	internal, internalRequests := countingPrometheus(t)
	host := strings.TrimPrefix(allowed.URL, "http://")
	for _, tc := range []struct {
		name, gateURL string
		// asked is the server the evaluation must reach (0 serve's, 1 the
		// allowed one); -1: none.
		asked int
	}{
		{name: "no URL: serve's --prometheus-url", gateURL: "", asked: 0},
		{name: "serve's --prometheus-url named by the gate", gateURL: served.URL + "/", asked: 0},
		{name: "an allowed URL", gateURL: allowed.URL, asked: 1},
		{name: "an allowed URL in capitals with a trailing slash", gateURL: "HTTP://" + host + "/", asked: 1},
		{name: "an allowed server by another name", gateURL: "http://" + strings.Replace(host, "127.0.0.1", "localhost", 1), asked: -1},
		{name: "an internal service", gateURL: internal.URL, asked: -1},
		{name: "an allowed host on another path", gateURL: allowed.URL + "/admin", asked: -1},
		{name: "an allowed URL with credentials", gateURL: "http://user:pass@" + host, asked: -1},
		{name: "cloud metadata", gateURL: "http://169.254.169.254/latest/meta-data", asked: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &Evaluator{URL: served.URL, Allowed: []string{"http://" + host + "/"}}
			before := [3]int32{servedRequests.Load(), allowedRequests.Load(), internalRequests.Load()}
			res := evaluate(t, ev, tc.gateURL)
			after := [3]int32{servedRequests.Load(), allowedRequests.Load(), internalRequests.Load()}
			if tc.asked < 0 {
				want := fmt.Sprintf(NotAllowedMessageFmt, tc.gateURL)
				if res.Err == nil || res.Err.Error() != want || !strings.Contains(want, "--prometheus-allowed-url") {
					t.Errorf("got %+v, want the error %q", res, want)
				}
				if after != before {
					t.Errorf("requests to serve's, the allowed and the internal server went from %v to %v: a gate naming an unallowed URL was queried", before, after)
				}
				return
			}
			if res.Err != nil || len(res.Samples) != 1 || res.Samples[0].Value != 0.01 {
				t.Fatalf("got %+v, want the server's 0.01", res)
			}
			want := before
			want[tc.asked]++
			if after != want {
				t.Errorf("requests went from %v to %v, want %v", before, after, want)
			}
		})
	}
}

func TestNormalizeURLComparesSchemeHostPortAndPath(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://prometheus:9090", "http://prometheus:9090"},
		{"http://Prometheus:9090/", "http://prometheus:9090"},
		{"HTTPS://prometheus.example.com", "https://prometheus.example.com:443"},
		{"http://prometheus.example.com:80/prom/", "http://prometheus.example.com:80/prom"},
		{"http://[::1]:9090", "http://[::1]:9090"},
		{"http://user@prometheus:9090", ""},
		{"http://prometheus:9090/?x=1", ""},
		{"http://prometheus:9090/#x", ""},
		{"file:///etc/passwd", ""},
		{"prometheus:9090", ""},
	} {
		got, err := NormalizeURL(tc.in)
		if got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("NormalizeURL(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}
