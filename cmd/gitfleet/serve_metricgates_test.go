package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/metricgate"
	"github.com/gitfleet/gitfleet/reconciler/updaterun"
)

// A gate may name --prometheus-url or any --prometheus-allowed-url (the
// flag repeats, and a URL with a comma stays whole); serve's evaluator asks
// those and refuses every other URL without a request.
func TestServePrometheusAllowedURLFlagsAllowGatesToNameThem(t *testing.T) {
	var requests [3]atomic.Int32
	var urls [3]string
	for i := range urls {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			requests[i].Add(1)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"scalar","result":[1700000000,"1"]}}`)
		}))
		t.Cleanup(srv.Close)
		urls[i] = srv.URL
	}
	cmd := newServeCommand()
	if err := cmd.ParseFlags([]string{"--prometheus-url", urls[0], "--prometheus-allowed-url", urls[1] + "/", "--prometheus-allowed-url", "http://a,b:9090"}); err != nil {
		t.Fatal(err)
	}
	o := serveOptions{}
	o.prometheusURL, _ = cmd.Flags().GetString("prometheus-url")
	o.prometheusAllowedURLs, _ = cmd.Flags().GetStringArray("prometheus-allowed-url")
	if want := []string{urls[1] + "/", "http://a,b:9090"}; fmt.Sprint(o.prometheusAllowedURLs) != fmt.Sprint(want) {
		t.Fatalf("--prometheus-allowed-url parsed as %q, want %q", o.prometheusAllowedURLs, want)
	}
	ev := o.metricGates()
	wakes := make(chan hub.Key, 1)
	ev.SetWake(func(k hub.Key) { wakes <- k })
	for i, gateURL := range []string{"", urls[1], urls[2]} {
		q := updaterun.MetricQuery{Run: hub.Key{Name: "run"}, Request: "r", Seq: int32(i + 1), PrometheusURL: gateURL,
			Queries: []updaterun.ClusterQuery{{Expr: "up"}}}
		res, ok := ev.Evaluate(q)
		if !ok {
			select {
			case <-wakes:
			case <-await.Context(t).Done():
				t.Fatal("no evaluation finished")
			}
			res, _ = ev.Evaluate(q)
		}
		if i < 2 && (res.Err != nil || requests[i].Load() != 1) {
			t.Errorf("a gate naming %q: %+v after %d request(s), want the value of that Prometheus", gateURL, res, requests[i].Load())
		}
		if i == 2 && (res.Err == nil || res.Err.Error() != fmt.Sprintf(metricgate.NotAllowedMessageFmt, gateURL) || requests[2].Load() != 0) {
			t.Errorf("a gate naming an unallowed %s: %+v after %d request(s), want no request and the error naming the flag", gateURL, res, requests[2].Load())
		}
	}
	help := cmd.Flags().Lookup("prometheus-allowed-url").Usage
	for _, teaches := range []string{"repeat", "besides --prometheus-url", "scheme, host, port and path", "no other URL"} {
		if !strings.Contains(help, teaches) {
			t.Errorf("--prometheus-allowed-url's help does not say %q: %s", teaches, help)
		}
	}
}

func TestServeRefusesAnAllowedPrometheusURLNoGateCouldName(t *testing.T) {
	_, errOut, code := gitfleet(t, "serve", "--repo", "file://"+t.TempDir(), "--prometheus-allowed-url", "prometheus:9090")
	if code == 0 || !strings.Contains(errOut, "--prometheus-allowed-url prometheus:9090: prometheus:9090 is not an http:// or https:// URL") {
		t.Fatalf("exit %d, stderr %s; want the flag's value refused at start", code, errOut)
	}
}
