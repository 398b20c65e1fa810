package reconciler

import (
	"context"
	"fmt"
	"testing"
	"time"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
)

// BenchmarkRealClockRun is issue #2's wall-clock target: 100 clusters in
// one stage, maxConcurrency 1, instantly available members, the real clock,
// from the run's creation to Succeeded (KubeFleet needs at least 100 × 15 s
// by design; gitfleet's completion events take it from cluster to cluster).
func BenchmarkRealClockRun(b *testing.B) {
	for _, n := range []int{100} {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			var total time.Duration
			for i := 0; i < b.N; i++ {
				f := newTestFleet(b, clock.Real{}, n, "1", "0s")
				ctx, cancel := context.WithCancel(context.Background())
				f.ctrl.Drain(ctx) // schedule: bindings exist before the run
				done := make(chan struct{})
				go func() { f.ctrl.Run(ctx); close(done) }()
				start := time.Now()
				f.startRun()
				for f.phase(b) != fleet.PhaseSucceeded {
					if time.Since(start) > time.Minute {
						b.Fatalf("run is %s after a minute", f.phase(b))
					}
					time.Sleep(time.Millisecond)
				}
				total += time.Since(start)
				cancel()
				<-done
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-Succeeded")
		})
	}
}
