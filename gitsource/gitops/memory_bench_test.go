package gitops_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource/gitops"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/snapshothistory"
)

// heapInUse is the heap the process needs after a full collection.
func heapInUse() float64 {
	runtime.GC()
	runtime.GC() // the first collection's finalizers free more
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapInuse) / (1 << 20)
}

// writeHeapProfile writes a heap profile to $GITFLEET_HEAP_PROFILE_DIR/name
// when that is set, to find what a benchmark's heap holds.
func writeHeapProfile(b *testing.B, name string) {
	dir := os.Getenv("GITFLEET_HEAP_PROFILE_DIR")
	if dir == "" {
		return
	}
	f, err := os.Create(dir + "/" + name)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}

// checkSnapshotHistory fails when a placement keeps more resource snapshots
// that nothing uses than its default revisionHistoryLimit (the ones a run or
// a binding uses are kept besides).
func checkSnapshotHistory(b *testing.B, d *daemon, placement string) {
	b.Helper()
	ctx := context.Background()
	key := hub.Key{Name: placement}
	snaps, err := d.Hub.ListResourceSnapshots(ctx, key)
	if err != nil {
		b.Fatal(err)
	}
	uses := snapshothistory.Of(ctx, d.Hub)
	unused := 0
	for _, s := range snaps {
		if s.Annotations[fleet.ResourceGroupHashAnnotation] == "" {
			continue // a sub-snapshot goes with its master
		}
		i, err := strconv.Atoi(s.Labels[fleet.ResourceIndexLabel])
		if err != nil {
			b.Fatal(err)
		}
		used, err := uses.ResourceGroup(key, i, []string{s.Name})
		if err != nil {
			b.Fatal(err)
		}
		if !used {
			unused++
		}
	}
	if unused > fleet.DefaultRevisionHistoryLimit {
		b.Errorf("%d unused resource snapshots kept, want at most the history limit %d", unused, fleet.DefaultRevisionHistoryLimit)
	}
}

var (
	heapRuns     = flag.Int("heap-runs", 100, "consecutive runs of BenchmarkHeapAcrossRuns, each with a new resource snapshot (30: the quick variant)")
	heapClusters = flag.String("heap-clusters", "1000", "comma-separated fleet sizes of BenchmarkHeapAcrossRuns")
)

// heapRunPoints are the runs after which BenchmarkHeapAcrossRuns reports
// the heap, the resident memory and the run's latency.
var heapRunPoints = []int{1, 10, 30, 100}

// runLatencyWindow is how many runs up to a reported one make its latency:
// their median, so that one slow run on a loaded machine does not make it.
// It is also the window of the heap and RSS medians at both ends.
const runLatencyWindow = 5

// median is the median of xs (not modified).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkHeapAcrossRuns rolls out consecutive runs (-heap-runs, 100 by
// default), each with a new resource snapshot (a changed workload and a new
// run file in one commit), through the daemon and a file:// remote. After
// runs 1, 10, 30 and 100 it reports the heap in use (heap-MiB-runN), this
// process's resident and peak resident memory (rss-MiB-runN,
// peak-rss-MiB-runN), the part of it that is not the test binary's own
// pages (anon-rss-MiB-runN: the binary's code and data, about 87 MiB,
// count in RSS too and do not grow with runs) and the median push→Succeeded of the five runs up to
// it (latency-s-runN); every run is logged with -v. A single run's heap
// swings with Git's bounded caches, so it also reports the medians of the
// heap, RSS and anonymous RSS over runs 6-10 and the last five runs
// (…-median-runs6-10, …-median-runs96-100) and their heap difference
// (heap-median-growth-MiB). What a finished run
// leaves behind must not pile up: the heap after the last run should be
// within 10% of the heap after run 10 (growth-MiB-after-run10; logged when
// it is not: finished runs are kept as husks, their clusters packed, but
// Git's side still grows it a little), unused snapshots beyond the placement's revisionHistoryLimit are
// deleted (checked), and caches are bounded.
//
//	go test ./gitsource/gitops/ -run '^$' -bench HeapAcrossRuns -benchtime 1x -timeout 45m -v
//	go test ./gitsource/gitops/ -run '^$' -bench HeapAcrossRuns -benchtime 1x -v -args -heap-runs=30 -heap-clusters=200,1000
func BenchmarkHeapAcrossRuns(b *testing.B) {
	for _, f := range strings.Split(*heapClusters, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			b.Fatalf("-heap-clusters: %v", err)
		}
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			for range b.N {
				heapAcrossRuns(b, n, *heapRuns)
			}
		})
	}
}

func heapAcrossRuns(b *testing.B, n, runs int) {
	if os.Getenv("GITFLEET_HEAP_PROFILE_DIR") != "" {
		// Sample every 64 KiB, not 512 KiB: what one run leaves
		// behind shows in the profiles' difference.
		defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
		runtime.MemProfileRate = 64 << 10
	}
	files := stagedFleet(n, `"25%"`)
	r := newFleetRepo(b, files)
	d := startDaemon(b, "file://"+r.remote, b.TempDir(), 0)
	eventually(b, "the placement's bindings", func() bool {
		bs, err := d.Hub.ListBindings(context.Background(), hub.Key{Name: "app"})
		return err == nil && len(bs) == n
	})
	heaps := make([]float64, runs)
	rsses, anons := make([]float64, runs), make([]float64, runs)
	latencies := make([]time.Duration, runs)
	for i := range runs {
		name := fmt.Sprintf("run-%d", i)
		workload := strings.Replace(string(files["workload.yaml"]), "key: value1", fmt.Sprintf("key: value-%d", i), 1)
		start := time.Now()
		r.commit("roll out "+name, map[string][]byte{"workload.yaml": []byte(workload), name + ".yaml": runFile(name)})
		d.poke()
		eventually(b, name+" to succeed", func() bool {
			run, err := d.Hub.GetUpdateRun(context.Background(), hub.Key{Name: name})
			return err == nil && run.Phase() == fleet.PhaseSucceeded
		})
		latencies[i] = time.Since(start)
		waitFlushed(b, d)
		heaps[i] = heapInUse()
		rss, peak := procStatusBytes(os.Getpid(), "VmRSS:"), procStatusBytes(os.Getpid(), "VmHWM:")
		anon := procStatusBytes(os.Getpid(), "RssAnon:")
		rsses[i], anons[i] = mib(rss), mib(anon)
		b.Logf("after run %d: %v, heap in use %.1f MiB, RSS %.1f MiB (anonymous %.1f MiB), peak RSS %.1f MiB",
			i+1, latencies[i].Round(time.Millisecond), heaps[i], mib(rss), mib(anon), mib(peak))
		if slices.Contains(heapRunPoints, i+1) {
			b.ReportMetric(heaps[i], fmt.Sprintf("heap-MiB-run%d", i+1))
			b.ReportMetric(mib(rss), fmt.Sprintf("rss-MiB-run%d", i+1))
			b.ReportMetric(mib(anon), fmt.Sprintf("anon-rss-MiB-run%d", i+1))
			b.ReportMetric(mib(peak), fmt.Sprintf("peak-rss-MiB-run%d", i+1))
			window := slices.Clone(latencies[max(0, i+1-runLatencyWindow) : i+1])
			slices.Sort(window)
			b.ReportMetric(window[len(window)/2].Seconds(), fmt.Sprintf("latency-s-run%d", i+1))
			writeHeapProfile(b, fmt.Sprintf("heap-%d-run%d.pprof", n, i+1))
		}
	}
	if runs >= 10+runLatencyWindow {
		// One run's heap is noise: go-git's object cache and the recent
		// status trees, each bounded at 8 MiB, swing by up to 16 MiB
		// together. The medians of runs 6-10 and of the last five say
		// what stays.
		early, late := 10-runLatencyWindow, runs-runLatencyWindow // the windows' first runs
		for _, m := range []struct {
			name string
			of   []float64
		}{{"heap-MiB", heaps}, {"rss-MiB", rsses}, {"anon-rss-MiB", anons}} {
			b.ReportMetric(median(m.of[early:10]), fmt.Sprintf("%s-median-runs%d-10", m.name, early+1))
			b.ReportMetric(median(m.of[late:]), fmt.Sprintf("%s-median-runs%d-%d", m.name, late+1, runs))
		}
		b.ReportMetric(median(heaps[late:])-median(heaps[early:10]), "heap-median-growth-MiB")
	}
	if runs > 10 {
		growth := heaps[runs-1] - heaps[9]
		b.ReportMetric(growth, "growth-MiB-after-run10")
		if growth > heaps[9]/10 {
			// Logged, not failed, so that the metrics are still reported:
			// the objects go-git keeps and the status tree's digests of
			// finished runs still grow it a little.
			b.Logf("heap in use grew %.1f MiB from run 10 to run %d (%.1f MiB), more than 10%%", growth, runs, heaps[runs-1])
		}
	}
	checkSnapshotHistory(b, d, "app")
	d.stop(b)
}

// BenchmarkHeapAcrossCommits pushes fifteen commits, each changing one of
// the 1,000 ConfigMaps of a kustomize tree (so each records a resource
// snapshot of 1,000 resources), and reports the heap in use after the
// first, the tenth and the fifteenth. Up to the placement's
// revisionHistoryLimit (10) the snapshots are live state and the heap grows
// with them; past it, older snapshots are deleted and the heap stays flat
// (growth-after-limit-MiB).
//
//	go test ./gitsource/gitops/ -run '^$' -bench HeapAcrossCommits -benchtime 1x -v
func BenchmarkHeapAcrossCommits(b *testing.B) {
	for range b.N {
		r := newFleetRepo(b, configMapFleet(1000, true))
		obs := newSyncObserver()
		d := startDaemonWith(b, "file://"+r.remote, b.TempDir(), 0, func(c *gitops.Config) { c.Observer = obs })
		var heaps []float64
		for i := range 15 {
			waitFlushed(b, d)
			h := r.commit(fmt.Sprintf("change %d", i), map[string][]byte{fmt.Sprintf("cms/cm-%04d.yaml", i): configMap(i, fmt.Sprintf("v%d", i+1))})
			obs.drain()
			d.poke()
			obs.waitProcessed(b, h)
			waitFlushed(b, d)
			heaps = append(heaps, heapInUse())
			b.Logf("after commit %d: heap in use %.1f MiB", i+1, heaps[i])
			writeHeapProfile(b, fmt.Sprintf("heap-commit%d.pprof", i+1))
		}
		b.ReportMetric(heaps[0], "heap-MiB-commit1")
		b.ReportMetric(heaps[9], "heap-MiB-commit10")
		b.ReportMetric(heaps[14], "heap-MiB-commit15")
		b.ReportMetric(heaps[14]-heaps[9], "growth-after-limit-MiB")
		checkSnapshotHistory(b, d, "bench")
		d.stop(b)
	}
}
