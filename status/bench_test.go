package status

import (
	"context"
	"fmt"
	"io/fs"
	goruntime "runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
)

// BenchmarkFlushOneBatch measures what one status commit of a 10-stage run
// of 10,000 clusters costs the store: a batch of 100 clusters of one stage
// changes, and the store encodes and hands over the changed files. The
// "whole-file" case is the cost of encoding the run as one file, which is
// what every commit paid before runs were split.
//
//	go test ./status/ -run '^$' -bench FlushOneBatch
func BenchmarkFlushOneBatch(b *testing.B) {
	run := withKind([]runtime.Object{bigRun("", 0, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000)})[0].(*fleet.UpdateRun)
	b.Run("whole-file", func(b *testing.B) {
		b.ReportAllocs()
		bytes := 0
		for b.Loop() {
			data, err := Encode(run)
			if err != nil {
				b.Fatal(err)
			}
			bytes = len(data)
		}
		b.ReportMetric(float64(bytes), "bytes/commit")
	})
	b.Run("split", func(b *testing.B) {
		written := 0
		commits := 0
		s := NewTreeStore(Dir(b.TempDir()), commitFunc(func(_ context.Context, ch Changeset, _ string, _ bool) error {
			for _, data := range ch.Writes {
				written += len(data)
			}
			commits++
			return nil
		}), clock.NewFake(t0))
		s.Interval = 0
		ref := refOfObj(run)
		s.Put(ref, run)
		if err := s.Flush(context.Background(), true); err != nil {
			b.Fatal(err)
		}
		written, commits = 0, 0
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			stage := &run.Status.StagesStatus[i/10%10]
			for c := range 100 {
				stage.Clusters[(i%10)*100+c].Conditions[1].Message = fmt.Sprintf("pass %d", i)
			}
			s.Put(ref, run)
			if err := s.Flush(context.Background(), true); err != nil {
				b.Fatal(err)
			}
			i++
		}
		b.ReportMetric(float64(written)/float64(commits), "bytes/commit")
	})
}

// memFiles is a status tree in memory, so that BenchmarkLoad measures
// decoding, not reading files from disk.
type memFiles map[string][]byte

func (m memFiles) Read(p string) ([]byte, error) {
	data, ok := m[p]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return data, nil
}

func (m memFiles) List(prefix string) ([]string, error) {
	var out []string
	for p := range m {
		if strings.HasPrefix(p, prefix+"/") {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out, nil
}

// BenchmarkLoad measures what a start (serve, `simulate`, `plan`) pays to
// read the status tree of a 10-stage run of 10,000 clusters: the run and
// the placement in parts, and 10,000 bindings.
//
//	go test ./status/ -run '^$' -bench Load
func BenchmarkLoad(b *testing.B) {
	tree := memFiles{}
	s := NewTreeStore(tree, commitFunc(func(_ context.Context, ch Changeset, _ string, _ bool) error {
		for p, data := range ch.Writes {
			tree[p] = data
		}
		return nil
	}), clock.NewFake(t0))
	s.Interval = 0
	run := bigRun("", 0, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000)
	objs := []runtime.Object{run, bigPlacement("", 10000)}
	for _, st := range run.Status.StagesStatus {
		for _, c := range st.Clusters {
			objs = append(objs, binding("", c.ClusterName))
		}
	}
	for _, o := range withKind(objs) {
		s.Put(refOfObj(o), o)
	}
	if err := s.Flush(context.Background(), true); err != nil {
		b.Fatal(err)
	}
	size := 0
	for _, data := range tree {
		size += len(data)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		got, err := NewTreeStore(tree, nil, clock.NewFake(t0)).Load(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if len(got) != len(objs) {
			b.Fatalf("loaded %d objects, want %d", len(got), len(objs))
		}
	}
}

// BenchmarkEndedRunRecords measures what the store keeps in memory for
// each ended run: 30 runs of 1,000 clusters in three stages end one after
// the other, and the live heap grows, from run 10 to run 30, by what the
// records of the runs that ended cost (the committed files go nowhere, as
// the hub's own objects, so only the store's records are counted), with
// the default EndedKept and with every record kept.
//
//	go test ./status/ -run '^$' -bench EndedRunRecords -benchtime 1x
func BenchmarkEndedRunRecords(b *testing.B) {
	for _, kept := range []int{DefaultEndedKept, 1 << 20} {
		b.Run(fmt.Sprintf("kept=%d", kept), func(b *testing.B) {
			for b.Loop() {
				s := NewTreeStore(memFiles{}, commitFunc(func(context.Context, Changeset, string, bool) error { return nil }), clock.NewFake(t0))
				s.Interval, s.EndedKept = 0, kept
				var at10 uint64
				for i := range 30 {
					run := endedRun(fmt.Sprintf("run-%02d", i), "stage", time.Duration(i)*time.Hour)
					run.Status.StagesStatus = bigRun("", 0, 334, 333, 333).Status.StagesStatus
					s.Put(refOfObj(run), run)
					if err := s.Flush(context.Background(), true); err != nil {
						b.Fatal(err)
					}
					if i == 9 {
						at10 = liveHeap()
					}
				}
				b.ReportMetric(float64(liveHeap()-at10)/20/1024, "KiB/run")
				goruntime.KeepAlive(s)
			}
		})
	}
}

// liveHeap is the heap in use by reachable objects, after a collection.
func liveHeap() uint64 {
	goruntime.GC()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
