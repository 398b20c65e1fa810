package gitops_test

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"
)

// runTimes records when each run of a scale benchmark was first seen
// Succeeded, and why a run failed: BenchmarkConcurrentRuns sees the runs in
// serve's pushes, BenchmarkPullFleet on the Kubernetes hub. Both wait for
// and report their runs through it.
type runTimes struct {
	mu        sync.Mutex
	succeeded map[string]time.Time
	failed    map[string]string
}

func newRunTimes() runTimes {
	return runTimes{succeeded: map[string]time.Time{}, failed: map[string]string{}}
}

// succeed records that run name was seen Succeeded at t, unless it was
// seen before.
func (r *runTimes) succeed(name string, t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, seen := r.succeeded[name]; !seen {
		r.succeeded[name] = t
	}
}

// fail records why run name failed.
func (r *runTimes) fail(name, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed[name] = why
}

// finished counts the runs named that succeeded, or says why one failed.
func (r *runTimes) finished(names []string) (int, string) {
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

// await waits within budget, checking every poll, for every run named to
// succeed, and fails b as soon as one fails. Every 30 s it logs how many
// did since start, followed by progress() when given.
func (r *runTimes) await(b *testing.B, where string, names []string, start time.Time, budget, poll time.Duration, progress func() string) {
	b.Helper()
	next := time.Now().Add(30 * time.Second)
	within(b, fmt.Sprintf("%d runs to succeed %s", len(names), where), budget, poll, func() bool {
		done, failed := r.finished(names)
		if failed != "" {
			b.Fatal(failed)
		}
		if time.Now().After(next) {
			more := ""
			if progress != nil {
				more = "; " + progress()
			}
			b.Logf("%s after the push: %d of %d runs succeeded%s", time.Since(start).Round(time.Second), done, len(names), more)
			next = next.Add(30 * time.Second)
		}
		return done == len(names)
	})
}

// report reports how long the runs named took from start to Succeeded:
// p50-s, p90-s and max-s.
func (r *runTimes) report(b *testing.B, names []string, start time.Time) {
	r.mu.Lock()
	took := make([]time.Duration, len(names))
	for i, name := range names {
		took[i] = r.succeeded[name].Sub(start)
	}
	r.mu.Unlock()
	slices.Sort(took)
	b.ReportMetric(percentile(took, 50).Seconds(), "p50-s")
	b.ReportMetric(percentile(took, 90).Seconds(), "p90-s")
	b.ReportMetric(took[len(took)-1].Seconds(), "max-s")
}

// percentile is the p-th percentile of sorted (nearest rank).
func percentile(sorted []time.Duration, p int) time.Duration {
	return sorted[max(0, int(math.Ceil(float64(p)/100*float64(len(sorted))))-1)]
}
