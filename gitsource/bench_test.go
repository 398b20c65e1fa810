package gitsource

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// BenchmarkFetchNoChange measures a poll that finds nothing new: one
// round trip to a local bare repository (git-upload-pack over file://).
func BenchmarkFetchNoChange(b *testing.B) {
	f := newFixture(b)
	s := f.open(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Fetch(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyStatus measures one status pass: 100 changed status files
// committed and pushed (git-receive-pack over file://).
func BenchmarkApplyStatus(b *testing.B) {
	f := newFixture(b)
	s := f.open(b)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		ch := Change{Message: "status pass", Writes: make(map[string][]byte, 100)}
		for j := range 100 {
			ch.Writes[fmt.Sprintf("status/bindings/p%d/cluster-%03d.yaml", j%5, j)] = fmt.Appendf(nil, "pass: %d\nphase: Applied\n", i)
		}
		res, err := s.Apply(ctx, ch)
		if err != nil {
			b.Fatal(err)
		}
		if !res.Created {
			b.Fatal("no commit")
		}
		i++
	}
}

// BenchmarkApplyWhilePeoplePush measures how long a status push waits
// behind people: two people push to the tracked branch in a loop (pull
// --rebase and push with the git CLI, as people do) while gitfleet applies
// one status file per operation with the default push backoff, each right
// after a person's push landed. It reports
// the median and the 99th percentile latency of Apply and how many
// re-applies a push needed on average.
func BenchmarkApplyWhilePeoplePush(b *testing.B) {
	f := newFixture(b)
	cfg := f.config(b)
	cfg.PushBackoff = wait.Backoff{} // the default, as serve runs it
	cfg.PushAttempts = 1000          // measure the wait, never give up
	s, err := Open(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()

	stop := make(chan struct{})
	pushed := make(chan error)
	var people sync.WaitGroup
	for p := range 2 {
		clone := filepath.Join(f.root, fmt.Sprintf("person%d", p))
		runGit(b, f.root, "clone", "-q", f.bare, clone)
		people.Add(1)
		go func() {
			defer people.Done()
			for i := p * 1_000_000; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				err := humanPush(clone, i)
				select {
				case pushed <- err:
				case <-stop:
					return
				}
			}
		}()
	}
	defer func() { close(stop); people.Wait() }()

	var lat []time.Duration
	retries := 0
	i := 0
	for b.Loop() {
		// Each status push starts right after a person's push landed, a
		// random moment into the next one: the contended case.
		b.StopTimer()
		if err := <-pushed; err != nil {
			b.Fatal(err)
		}
		time.Sleep(time.Duration(rand.IntN(50)) * time.Millisecond)
		b.StartTimer()
		start := time.Now()
		res, err := s.Apply(ctx, Change{Message: "status", Writes: map[string][]byte{"status/runs/r.yaml": fmt.Appendf(nil, "pass: %d\n", i)}})
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		retries += res.Attempts - 1
		i++
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "p50-ms")
	b.ReportMetric(float64(lat[(len(lat)*99)/100].Milliseconds()), "p99-ms")
	b.ReportMetric(float64(retries)/float64(len(lat)), "reapplies/op")
}

// BenchmarkApplyGuarded measures the guarded write of one cluster in a
// serial stage: three small status files (a part of the run, the binding,
// a part of the placement) committed and pushed over file://.
//
//	go test ./gitsource/ -run '^$' -bench ApplyGuarded -cpuprofile cpu.out
func BenchmarkApplyGuarded(b *testing.B) {
	f := newFixture(b)
	s := f.open(b)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		ch := Change{Message: "status: run stage prod 1 cluster updating", Writes: map[string][]byte{
			fmt.Sprintf("status/runs/r.clusters/prod/%05d.yaml", i/10*10):  fmt.Appendf(nil, "cluster: %d\n", i),
			fmt.Sprintf("status/bindings/p/cluster-%03d.yaml", i%100):      fmt.Appendf(nil, "pass: %d\n", i),
			fmt.Sprintf("status/placements/p.clusters/%05d.yaml", i/10*10): fmt.Appendf(nil, "cluster: %d\n", i),
		}}
		if _, err := s.Apply(ctx, ch); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
