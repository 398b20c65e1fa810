// Package runtimes records when each run of a scale benchmark was first
// seen Succeeded, or why it failed, and reports how long the runs took
// (p50-s, p90-s, max-s). gitsource/gitops's benchmarks through Git and
// reconciler/hub/kube's BenchmarkConcurrentRuns on a Kubernetes hub share
// it, so their numbers are computed alike.
package runtimes

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// Runs holds what was seen of the runs; safe for concurrent use.
type Runs struct {
	mu        sync.Mutex
	succeeded map[string]time.Time
	failed    map[string]string
}

// New returns an empty record.
func New() *Runs {
	return &Runs{succeeded: map[string]time.Time{}, failed: map[string]string{}}
}

// Succeed records that run name was seen Succeeded at t, unless it was
// seen before.
func (r *Runs) Succeed(name string, t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, seen := r.succeeded[name]; !seen {
		r.succeeded[name] = t
	}
}

// Fail records why run name failed.
func (r *Runs) Fail(name, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed[name] = why
}

// Seen records a run read from a Kubernetes hub (an informer's
// *unstructured.Unstructured) by its Succeeded condition, now.
func (r *Runs) Seen(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != fleet.StagedUpdateRunConditionSucceeded {
			continue
		}
		switch m["status"] {
		case string(metav1.ConditionTrue):
			r.Succeed(u.GetName(), time.Now())
		case string(metav1.ConditionFalse):
			r.Fail(u.GetName(), fmt.Sprintf("run %s failed: %v: %v", u.GetName(), m["reason"], m["message"]))
		}
	}
}

// Finished counts the runs named that succeeded, or says why one failed.
func (r *Runs) Finished(names []string) (int, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, name := range names {
		if why, ok := r.failed[name]; ok {
			return n, why
		}
		if _, ok := r.succeeded[name]; ok {
			n++
		}
	}
	return n, ""
}

// AllSucceeded is the condition a benchmark waits on (with its own
// deadline): every run named succeeded. It fails b as soon as one fails,
// and every 30 s logs how many did since start ("after <since>"),
// followed by progress() when given.
func (r *Runs) AllSucceeded(b testing.TB, names []string, start time.Time, since string, progress func() string) func() bool {
	next := time.Now().Add(30 * time.Second)
	return func() bool {
		done, failed := r.Finished(names)
		if failed != "" {
			b.Fatal(failed)
		}
		if time.Now().After(next) {
			more := ""
			if progress != nil {
				more = "; " + progress()
			}
			b.Logf("%s after %s: %d of %d runs succeeded%s", time.Since(start).Round(time.Second), since, done, len(names), more)
			next = next.Add(30 * time.Second)
		}
		return done == len(names)
	}
}

// Report reports how long the runs named took from start to Succeeded:
// p50-s, p90-s and max-s.
func (r *Runs) Report(b *testing.B, names []string, start time.Time) {
	r.mu.Lock()
	took := make([]time.Duration, len(names))
	for i, name := range names {
		took[i] = r.succeeded[name].Sub(start)
	}
	r.mu.Unlock()
	slices.Sort(took)
	b.ReportMetric(Percentile(took, 50).Seconds(), "p50-s")
	b.ReportMetric(Percentile(took, 90).Seconds(), "p90-s")
	b.ReportMetric(took[len(took)-1].Seconds(), "max-s")
}

// Percentile is the p-th percentile of sorted (nearest rank).
func Percentile(sorted []time.Duration, p int) time.Duration {
	return sorted[max(0, int(math.Ceil(float64(p)/100*float64(len(sorted))))-1)]
}
