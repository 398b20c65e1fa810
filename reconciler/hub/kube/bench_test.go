package kube

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/internal/testing/runtimes"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
)

// callCounter counts the API requests going through a rest.Config: reads
// (GET, which covers LIST and the start of a WATCH) and writes (the rest).
// With a trace it also records every write.
type callCounter struct {
	reads, writes atomic.Int64
	trace         *writeTrace
	who           string
}

// wrap is a rest.Config's WrapTransport.
func (c *callCounter) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Method == http.MethodGet {
			c.reads.Add(1)
			return next.RoundTrip(r)
		}
		c.writes.Add(1)
		start := time.Now()
		resp, err := next.RoundTrip(r)
		if c.trace != nil {
			c.trace.add(tracedWrite{who: c.who, method: r.Method, path: r.URL.Path, bytes: r.ContentLength, start: start, end: time.Now()})
		}
		return resp, err
	})
}

// writeTrace records API writes (until the response's headers) for the
// anchor benchmark's steps.
type writeTrace struct {
	mu     sync.Mutex
	writes []tracedWrite
}

type tracedWrite struct {
	who, method, path string
	bytes             int64
	start, end        time.Time
}

func (t *writeTrace) add(w tracedWrite) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.writes = append(t.writes, w)
}

// since returns the writes that started at or after from, in the order
// they started (they are recorded as they end).
func (t *writeTrace) since(from time.Time) []tracedWrite {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []tracedWrite
	for _, w := range t.writes {
		if !w.start.Before(from) {
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b tracedWrite) int { return a.start.Compare(b.start) })
	return out
}

// bindingSpecWrite reports whether w is the engine's write of a binding's
// object (Bound at a snapshot), which starts a cluster's step.
func (w tracedWrite) bindingSpecWrite() bool {
	return w.who == "engine" && w.method == http.MethodPut &&
		strings.Contains(w.path, "/"+resources[fleet.KindClusterResourceBinding].Resource+"/") && !strings.HasSuffix(w.path, "/status")
}

// steps are the times from one binding spec write to the next: at
// maxConcurrency 1, a cluster's whole turn (its two binding writes, the
// member's report, the passes in between).
func steps(writes []tracedWrite) []time.Duration {
	var out []time.Duration
	var last time.Time
	for _, w := range writes {
		if !w.bindingSpecWrite() {
			continue
		}
		if !last.IsZero() {
			out = append(out, w.start.Sub(last))
		}
		last = w.start
	}
	return out
}

// dump writes the writes as tab-separated lines (ms from the first start,
// ms taken, who, method, path, bytes) to path.
func dumpTrace(path string, writes []tracedWrite) error {
	if len(writes) == 0 {
		return nil
	}
	var b strings.Builder
	t0 := writes[0].start
	for _, w := range writes {
		fmt.Fprintf(&b, "%.3f\t%.3f\t%s\t%s\t%s\t%d\n", float64(w.start.Sub(t0).Microseconds())/1000,
			float64(w.end.Sub(w.start).Microseconds())/1000, w.who, w.method, w.path, w.bytes)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// BenchmarkKubeFleetAnchor is the KubeFleet anchor of the Kubernetes hub
// issue on a real kube-apiserver: N member clusters in one stage, the
// simulated members report a started binding Available at once (well
// within 10 ms of seeing it), and the time is from the run's creation to
// Succeeded. KubeFleet's own controller needs 15.07 s per cluster at
// maxConcurrency 1 (1,507.9 s at N = 100) and 16.9 s at N = 100 with
// maxConcurrency 100%. writes/cluster counts the engine's API writes per
// cluster started (the members' reports are member-writes/cluster);
// reads/cluster its GETs, which the informers' caches keep at 0.
//
// At maxConcurrency 1 a cluster costs three engine writes: the binding's
// spec (Bound, the snapshot), its status (RolloutStarted), and the run's
// status (the cluster started, the one before it succeeded). None of them
// is redundant (the hub skips unchanged writes). The run's status grows
// with N (40 KB at the end at N = 100), which the API server decodes,
// validates, stores and sends to watchers whole on every write (a merge or
// JSON patch costs it as much): 15-30 ms a write on this 2-core machine.
// The hub writes it behind the engine's back (runstatus.go), so the next
// cluster's binding writes and the member's report overlap it, and a
// status handed over while one is in flight replaces the one waiting
// (when the API server is slow, fewer status writes than clusters go out).
// Even so the API server spent most of a core on those writes while the
// bindings waited for it; with Config.RunStatusSpacing (100 ms by default)
// a run's status is written at most ten times a second, about one write
// every four clusters (2.2 writes/cluster at N = 100). What is left on the
// critical path of a cluster is two binding round trips, the member's
// turn-around (a watch event, its status write, the event back) and a pass
// of the engine (under 1 ms). Traced (README "Performance"): three writes
// in a row of about 3 ms each and 2-3 ms of watch events and the engine's
// pass, no rate limiter, poll or backoff: the floor is about 10 ms a
// cluster, and the rest of a quiet machine's 18.7 ms are steps held up
// behind the run's and the placement's large status writes.
//
//	go test ./reconciler/hub/kube -run '^$' -bench KubeFleetAnchor -benchtime 1x [-args -bench-run-status-spacing=-1ns]
var (
	benchRunStatusSpacing = flag.Duration("bench-run-status-spacing", 0, "Config.RunStatusSpacing of BenchmarkKubeFleetAnchor (0: the default, -1ns: none)")
	benchTraceDir         = flag.String("bench-trace-dir", "", "BenchmarkKubeFleetAnchor writes each run's API writes (start and time in ms, who, method, path, bytes) here")
)

func BenchmarkKubeFleetAnchor(b *testing.B) {
	th := startHub(b)
	for _, c := range []struct {
		n              int
		maxConcurrency string
	}{{3, "1"}, {10, "1"}, {30, "1"}, {100, "1"}, {100, "100%"}} {
		b.Run(fmt.Sprintf("clusters=%d/maxConcurrency=%s", c.n, c.maxConcurrency), func(b *testing.B) {
			benchmarkAnchor(b, th, c.n, c.maxConcurrency)
		})
	}
}

func benchmarkAnchor(b *testing.B, th *testHub, n int, mc string) {
	th.reset(b)
	trace := &writeTrace{}
	engineCalls, memberCalls := &callCounter{trace: trace, who: "engine"}, &callCounter{trace: trace, who: "member"}
	counted := func(c *callCounter) Config {
		rc := *th.rest
		rc.WrapTransport = c.wrap
		return Config{Rest: &rc, Resources: selectWorkload, RunStatusSpacing: *benchRunStatusSpacing}
	}
	h := th.newHub(b, counted(engineCalls))
	members := map[string]map[string]string{}
	for i := 0; i < n; i++ {
		members[fmt.Sprintf("member-%03d", i)] = map[string]string{"env": "prod"}
	}
	strategy := &fleet.UpdateStrategy{ObjectMeta: metav1.ObjectMeta{Name: "one-stage"}, Spec: fleet.UpdateStrategySpec{
		Stages: []fleet.StageConfig{{Name: "all", LabelSelector: &metav1.LabelSelector{}, MaxConcurrency: maxConcurrency(mc)}}}}
	f := newEngineFleet(b, th, h, members, strategy)
	// Two workers, as the kube hub runs the engine: a placement's status
	// write (75 KB at 100 clusters) does not hold up the run's passes.
	f.ctrl.Workers = 2
	// The end is seen on the hub's own informer, without the controller's
	// Observer: serve has none, and its two conversions of the run per pass
	// would be the benchmark's cost, not the engine's.
	succeeded := make(chan string, 1)
	if _, err := h.informers[fleet.KindClusterStagedUpdateRun].inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) {
			if u, ok := obj.(*unstructured.Unstructured); ok && conditionTrueIn(u, fleet.StagedUpdateRunConditionSucceeded) {
				select {
				case succeeded <- u.GetName():
				default:
				}
			}
		},
	}); err != nil {
		b.Fatal(err)
	}
	simulateMembers(b, counted(memberCalls).Rest, nil)
	f.start(b)
	ctx := await.Context(b)
	awaitBindings(b, h, n)

	var elapsed time.Duration
	var writes, reads, reports int64
	var stepTimes []time.Duration
	for i := 0; b.Loop(); i++ {
		// A new snapshot each time, so every cluster has something to roll out.
		p, err := h.GetPlacement(ctx, hub.Key{Name: "app"})
		if err != nil {
			b.Fatal(err)
		}
		w := workload.DeepCopy()
		if err := unstructured.SetNestedField(w.Object, fmt.Sprint(i), "data", "iteration"); err != nil {
			b.Fatal(err)
		}
		if _, _, err := resourcesnapshot.Ensure(ctx, h, p, []*unstructured.Unstructured{w}, ""); err != nil {
			b.Fatal(err)
		}
		run := &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("run-%d", i)}, Spec: fleet.UpdateRunSpec{
			PlacementName: "app", StagedUpdateStrategyName: strategy.Name, State: fleet.StateRun}}
		w0, g0, r0 := engineCalls.writes.Load(), engineCalls.reads.Load(), memberCalls.writes.Load()
		start := time.Now()
		th.apply(b, h, run)
		waitSucceeded(b, ctx, succeeded, run.Name)
		elapsed += time.Since(start)
		traced := trace.since(start)
		stepTimes = append(stepTimes, steps(traced)...)
		if *benchTraceDir != "" {
			name := strings.NewReplacer("/", "_", "=", "-", "%", "pct").Replace(b.Name())
			if err := dumpTrace(filepath.Join(*benchTraceDir, fmt.Sprintf("%s-%s.tsv", name, run.Name)), traced); err != nil {
				b.Fatal(err)
			}
		}
		writes += engineCalls.writes.Load() - w0
		reads += engineCalls.reads.Load() - g0
		reports += memberCalls.writes.Load() - r0
	}
	runs := float64(b.N)
	b.ReportMetric(elapsed.Seconds()/runs, "s/run")
	b.ReportMetric(elapsed.Seconds()/runs/float64(n), "s/cluster")
	b.ReportMetric(float64(writes)/runs/float64(n), "writes/cluster")
	b.ReportMetric(float64(reads)/runs/float64(n), "reads/cluster")
	b.ReportMetric(float64(reports)/runs/float64(n), "member-writes/cluster")
	if mc == "1" && len(stepTimes) > 0 {
		slices.Sort(stepTimes)
		b.ReportMetric(float64(runtimes.Percentile(stepTimes, 50).Microseconds())/1000, "step-p50-ms")
		b.ReportMetric(float64(runtimes.Percentile(stepTimes, 90).Microseconds())/1000, "step-p90-ms")
	}
}

// conditionTrueIn reports whether u's status has condition typ True.
func conditionTrueIn(u *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ && m["status"] == string(metav1.ConditionTrue) {
			return true
		}
	}
	return false
}

func waitSucceeded(b *testing.B, ctx context.Context, succeeded <-chan string, name string) {
	for {
		select {
		case got := <-succeeded:
			if got == name {
				return
			}
		case <-ctx.Done():
			b.Fatalf("run %s did not succeed: %v", name, ctx.Err())
		}
	}
}
