package updaterun

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// BenchmarkRunToCompletion runs one update run from creation to Succeeded
// over a fleet of N clusters in ten stages (label stage=<i>), maxConcurrency
// 10%, with members that become available as soon as they are bound, in
// virtual time. The member simulation is not timed. Reported: passes per
// run, ns per pass, the peak heap in use, how often a run listed the whole
// fleet (bindings or member clusters), and bindings read per pass.
//
//	go test ./reconciler/updaterun -run '^$' -bench . -benchmem -benchtime 1x
func BenchmarkRunToCompletion(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			var passes int
			var peak uint64
			var elapsed time.Duration
			var lists, gets int64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				e := benchFleet(b, n)
				ch := &countingHub{Hub: e.h}
				e.r.Hub = ch
				m := newInstantMembers(e)
				runtime.GC()
				b.StartTimer()
				p, pk, d := runToCompletion(b, e, m)
				elapsed += d
				passes += p
				peak = max(peak, pk)
				lists += ch.lists.Load()
				gets += ch.gets.Load()
			}
			b.ReportMetric(float64(passes)/float64(b.N), "passes/run")
			b.ReportMetric(float64(elapsed.Nanoseconds())/float64(passes), "ns/pass")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(lists)/float64(b.N), "fleet-lists/run")
			b.ReportMetric(float64(gets)/float64(passes), "binding-reads/pass")
		})
	}
}

func benchFleet(b *testing.B, n int) *env {
	e := newEnv(b, "")
	e.r.Metrics = nil
	stages := make([]fleet.StageConfig, 10)
	for i := range stages {
		stages[i] = fleet.StageConfig{Name: fmt.Sprintf("stage%d", i), LabelSelector: selector("stage", fmt.Sprint(i)), MaxConcurrency: intOrStr("10%")}
	}
	for i := 0; i < n; i++ {
		e.member(fmt.Sprintf("cluster-%05d", i), map[string]string{"stage": fmt.Sprint(i % 10)})
	}
	e.placement(func(p *fleet.Placement) { p.Spec.Policy = pickN(n) })
	e.policySnapshot(1, true, pickN(n), true)
	for i := 0; i < n; i++ {
		e.binding(fmt.Sprintf("cluster-%05d", i), 1, fleet.BindingStateScheduled)
	}
	e.resourceSnapshot(0, true, "hash-0")
	e.strategy(fleet.UpdateStrategySpec{Stages: stages})
	return e.create()
}

// instantMembers plays every member cluster: a binding bound and marked
// RolloutStarted reports Available at its generation before the next pass.
// It hears of binding writes from the hub's events, so it costs what the
// pass wrote, not the fleet.
type instantMembers struct {
	e       *env
	mu      sync.Mutex
	written map[hub.Key]bool
}

func newInstantMembers(e *env) *instantMembers {
	m := &instantMembers{e: e, written: map[hub.Key]bool{}}
	e.h.Subscribe(func(ev hub.Event) {
		if ev.Kind == hub.EventBinding {
			m.mu.Lock()
			m.written[ev.Key] = true
			m.mu.Unlock()
		}
	})
	return m
}

func (m *instantMembers) deliver() {
	m.mu.Lock()
	keys := m.written
	m.written = map[hub.Key]bool{}
	m.mu.Unlock()
	for k := range keys {
		bnd, err := m.e.h.GetBinding(m.e.ctx, k)
		if err != nil || bnd.Spec.State != fleet.BindingStateBound ||
			!isTrue(find(bnd.Status.Conditions, fleet.ResourceBindingRolloutStarted), bnd.Generation) ||
			isTrue(find(bnd.Status.Conditions, fleet.ResourceBindingAvailable), bnd.Generation) {
			continue
		}
		removeCondition(&bnd.Status.Conditions, fleet.ResourceBindingAvailable)
		bnd.Status.Conditions = append(bnd.Status.Conditions, metav1.Condition{Type: fleet.ResourceBindingAvailable,
			Status: metav1.ConditionTrue, ObservedGeneration: bnd.Generation, Reason: "Available", LastTransitionTime: metav1.NewTime(m.e.clk.Now())})
		if err := m.e.h.UpdateBindingStatus(m.e.ctx, bnd); err != nil {
			m.e.t.Fatal(err)
		}
	}
}

func runToCompletion(b *testing.B, e *env, m *instantMembers) (passes int, peak uint64, timed time.Duration) {
	var ms runtime.MemStats
	for passes < 10000 {
		t0 := time.Now()
		res, err := e.r.Reconcile(e.ctx, e.key())
		timed += time.Since(t0)
		passes++
		if err != nil {
			b.Fatalf("pass %d: %v", passes, err)
		}
		b.StopTimer()
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
		if res.Blocked {
			run := e.get()
			if !isTrue(find(run.Status.Conditions, fleet.StagedUpdateRunConditionSucceeded), run.Generation) {
				b.Fatalf("run blocked without succeeding:%s", condsString(run.Status.Conditions))
			}
			b.StartTimer()
			return passes, peak, timed
		}
		m.deliver()
		e.clk.Advance(res.RequeueAfter)
		b.StartTimer()
	}
	b.Fatal("the run did not finish")
	return passes, peak, timed
}
