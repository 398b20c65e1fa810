package gitops_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"

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

// BenchmarkHeapAcrossRuns rolls out ten consecutive runs, each with a new
// resource snapshot (a changed workload and a new run file in one commit),
// through the daemon and a file:// remote, and reports the heap in use
// after each (heap-MiB-run1 … heap-MiB-run10, logged with -v) and the
// growth from the first to the last. What a finished run leaves behind
// must not pile up: unused snapshots beyond the placement's
// revisionHistoryLimit are deleted, and caches are bounded.
//
//	go test ./gitsource/gitops/ -run '^$' -bench HeapAcrossRuns -benchtime 1x -v
func BenchmarkHeapAcrossRuns(b *testing.B) {
	for _, n := range []int{200, 1000} {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			for range b.N {
				files := stagedFleet(n, `"25%"`)
				r := newFleetRepo(b, files)
				d := startDaemon(b, "file://"+r.remote, b.TempDir(), 0)
				eventually(b, "the placement's bindings", func() bool {
					bs, err := d.Hub.ListBindings(context.Background(), hub.Key{Name: "app"})
					return err == nil && len(bs) == n
				})
				var heaps []float64
				for i := range 10 {
					name := fmt.Sprintf("run-%d", i)
					workload := strings.Replace(string(files["workload.yaml"]), "key: value1", fmt.Sprintf("key: value-%d", i), 1)
					r.commit("roll out "+name, map[string][]byte{"workload.yaml": []byte(workload), name + ".yaml": runFile(name)})
					d.poke()
					eventually(b, name+" to succeed", func() bool {
						run, err := d.Hub.GetUpdateRun(context.Background(), hub.Key{Name: name})
						return err == nil && run.Phase() == fleet.PhaseSucceeded
					})
					waitFlushed(b, d)
					heaps = append(heaps, heapInUse())
					b.Logf("after run %d: heap in use %.1f MiB", i+1, heaps[i])
					writeHeapProfile(b, fmt.Sprintf("heap-%d-run%d.pprof", n, i+1))
				}
				b.ReportMetric(heaps[0], "heap-MiB-run1")
				b.ReportMetric(heaps[len(heaps)-1], "heap-MiB-run10")
				b.ReportMetric(heaps[len(heaps)-1]-heaps[0], "growth-MiB")
				checkSnapshotHistory(b, d, "app")
				d.stop(b)
			}
		})
	}
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
