package metricgate

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/updaterun"
)

var _ updaterun.GateForgetter = (*Evaluator)(nil)

// Forget drops every evaluation of a run, in flight or finished and never
// read, and only that run's: a result is not handed to a later evaluation
// of the same gate, and one still running finishes into nothing.
func TestForgetDropsTheEvaluationsOfARun(t *testing.T) {
	release := make(chan struct{})
	var released bool
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if err := r.ParseForm(); err == nil && strings.Contains(r.Form.Get("query"), "slow") {
			<-release
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"scalar","result":[1700000000,"1"]}}`)
	}))
	defer srv.Close()
	defer func() {
		if !released {
			close(release)
			released = true
		}
	}()
	ev := &Evaluator{URL: srv.URL}
	wakes := make(chan hub.Key, 10)
	ev.SetWake(func(k hub.Key) { wakes <- k })
	// woken waits for the wake-ups of want, in any order.
	woken := func(want ...hub.Key) {
		t.Helper()
		var got []hub.Key
		for range want {
			select {
			case k := <-wakes:
				got = append(got, k)
			case <-await.Context(t).Done():
				t.Fatalf("woken %v, want %v", got, want)
			}
		}
		if fmt.Sprint(slices.SortedFunc(slices.Values(got), cmpKey)) != fmt.Sprint(slices.SortedFunc(slices.Values(want), cmpKey)) {
			t.Fatalf("woken %v, want %v", got, want)
		}
	}
	ended, goesOn := hub.Key{Name: "ended"}, hub.Key{Name: "goes-on"}
	query := func(run hub.Key, request, expr string) updaterun.MetricQuery {
		return updaterun.MetricQuery{Run: run, Request: request, Seq: 1, Queries: []updaterun.ClusterQuery{{Expr: expr}}}
	}
	inFlight, unread, other := query(ended, "before", "slow"), query(ended, "after", "up"), query(goesOn, "after", "up")
	for _, q := range []updaterun.MetricQuery{inFlight, unread, other} {
		if _, ok := ev.Evaluate(q); ok {
			t.Fatalf("%+v finished at once", q)
		}
	}
	woken(ended, goesOn)
	if n := len(ev.running); n != 3 {
		t.Fatalf("%d evaluations kept, want 3", n)
	}

	ev.Forget(ended)
	if n := len(ev.running); n != 1 {
		t.Errorf("%d evaluations kept after the run ended, want only the other run's", n)
	}
	close(release)
	released = true
	woken(ended) // the one in flight finishes into nothing
	if n := len(ev.running); n != 1 {
		t.Errorf("%d evaluations kept after the forgotten one finished, want 1", n)
	}
	before := requests.Load()
	if _, ok := ev.Evaluate(unread); ok {
		t.Error("a forgotten result was handed out")
	}
	woken(ended)
	if requests.Load() != before+1 {
		t.Errorf("%d requests, want the forgotten evaluation asked again", requests.Load()-before)
	}
	if res, ok := ev.Evaluate(other); !ok || res.Err != nil || len(res.Samples) != 1 {
		t.Errorf("the other run's result: %+v, %v; want it kept", res, ok)
	}
}

func cmpKey(a, b hub.Key) int { return strings.Compare(hub.KeyString(a), hub.KeyString(b)) }
