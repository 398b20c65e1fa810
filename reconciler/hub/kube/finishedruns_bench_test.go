package kube

import (
	"flag"
	"fmt"
	"runtime"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

var (
	finishedRuns        = flag.Int("finished-runs", 30, "BenchmarkFinishedRunsHeap: the runs that finish")
	finishedRunClusters = flag.Int("finished-run-clusters", 1000, "BenchmarkFinishedRunsHeap: the clusters of each run (in 3 stages)")
)

// BenchmarkFinishedRunsHeap measures what finished runs cost the kube
// hub's memory: -finished-runs runs of -finished-run-clusters clusters
// (3 stages) finish one after the other on a real API server, each
// written as the engine writes it (a status with every cluster started
// handed over, the run read back, then its Succeeded status), and the
// heap in use (after a GC) is read after the 10th run and after the last.
// It reports both and the growth per run between them. No engine runs:
// the runs' statuses are the engine's writes, without the bindings and
// members a rollout would add to the cache.
//
// Before the cache kept ended runs as husks (husk.go), each finished run
// of 1,000 clusters took 2,340 KiB of heap (the cache's unstructured
// copy, the typed conversion of its last read, the status chain's last
// handover): 29.3 MiB after run 10, 75.0 after run 30, 234.9 after run
// 100. With husks: 6.6, 6.8 and 7.4 MiB, about 10 KiB a run (load 10-19).
//
//	go test ./reconciler/hub/kube -run '^$' -bench FinishedRunsHeap -benchtime 1x -timeout 45m \
//	    [-args -finished-runs 30 -finished-run-clusters 1000]
func BenchmarkFinishedRunsHeap(b *testing.B) {
	const stages, first = 3, 10
	n, perStage := *finishedRuns, *finishedRunClusters/stages
	if n <= first {
		b.Fatalf("-finished-runs %d: want more than %d", n, first)
	}
	th := startHub(b)
	for b.Loop() {
		th.reset(b)
		h := th.newHub(b, Config{})
		ctx := await.Context(b)
		var atFirst, atLast uint64
		for i := 1; i <= n; i++ {
			key := hub.Key{Name: fmt.Sprintf("run-%03d", i)}
			th.apply(b, h, &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: key.Name}, Spec: fleet.UpdateRunSpec{
				PlacementName: "app", StagedUpdateStrategyName: "strategy", ResourceSnapshotIndex: "0", State: fleet.StateRun}})
			r, err := h.GetUpdateRun(ctx, key)
			if err != nil {
				b.Fatal(err)
			}
			r.Status = progressedStatus(stages, perStage, 0,
				testCondition(fleet.StagedUpdateRunConditionInitialized, metav1.ConditionTrue),
				testCondition(fleet.StagedUpdateRunConditionProgressing, metav1.ConditionTrue))
			if err := h.UpdateUpdateRunStatus(ctx, r); err != nil {
				b.Fatal(err)
			}
			runStatusHandled(b, h, th, key)
			if r, err = h.GetUpdateRun(ctx, key); err != nil {
				b.Fatal(err)
			}
			r.Status.Conditions = append(r.Status.Conditions,
				testCondition(fleet.StagedUpdateRunConditionSucceeded, metav1.ConditionTrue))
			if err := h.UpdateUpdateRunStatus(ctx, r); err != nil {
				b.Fatal(err)
			}
			runStatusHandled(b, h, th, key)
			switch i {
			case first:
				atFirst = heapInUse()
			case n:
				atLast = heapInUse()
			}
		}
		b.ReportMetric(float64(atFirst)/(1<<20), fmt.Sprintf("heap-MiB@%d", first))
		b.ReportMetric(float64(atLast)/(1<<20), fmt.Sprintf("heap-MiB@%d", n))
		b.ReportMetric((float64(atLast)-float64(atFirst))/float64(n-first)/(1<<10), "KiB/run")
	}
}

// heapInUse is the heap's live bytes after a collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// testCondition is a run's condition as the engine writes it.
func testCondition(typ string, status metav1.ConditionStatus) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, ObservedGeneration: 1, Reason: "Test",
		Message: "written by the test", LastTransitionTime: metav1.Now().Rfc3339Copy()}
}

// progressedStatus is a run's status with stages of perStage clusters
// each, all succeeded, a deletion stage of deleted clusters, and
// conditions.
func progressedStatus(stages, perStage, deleted int, conditions ...metav1.Condition) fleet.UpdateRunStatus {
	clustersOf := func(stage string, n int) []fleet.ClusterUpdatingStatus {
		cs := make([]fleet.ClusterUpdatingStatus, n)
		for i := range cs {
			cs[i] = fleet.ClusterUpdatingStatus{ClusterName: fmt.Sprintf("%s-member-%03d", stage, i), Conditions: []metav1.Condition{
				testCondition(fleet.ClusterUpdatingConditionStarted, metav1.ConditionTrue),
				testCondition(fleet.ClusterUpdatingConditionSucceeded, metav1.ConditionTrue)}}
		}
		return cs
	}
	st := fleet.UpdateRunStatus{PolicySnapshotIndexUsed: "0", ResourceSnapshotIndexUsed: "0", Conditions: conditions}
	for i := range stages {
		name := fmt.Sprintf("stage-%d", i)
		st.StagesStatus = append(st.StagesStatus, fleet.StageUpdatingStatus{StageName: name, Clusters: clustersOf(name, perStage)})
	}
	if deleted > 0 {
		st.DeletionStageStatus = &fleet.StageUpdatingStatus{StageName: "kubernetes-fleet.io/deleteStage", Clusters: clustersOf("deleted", deleted)}
	}
	return st
}
