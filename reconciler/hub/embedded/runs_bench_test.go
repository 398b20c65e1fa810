package embedded_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
)

// succeededRun is a run of clusters in stages, as the engine leaves it once
// every cluster succeeded: each cluster Started and Succeeded, at times a
// second apart.
func succeededRun(name string, stages, clusters int, start time.Time) *fleet.UpdateRun {
	at := func(i int) metav1.Time { return metav1.NewTime(start.Add(time.Duration(i) * time.Second)) }
	cond := func(typ, reason, msg string, i int) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, ObservedGeneration: 1,
			LastTransitionTime: at(i), Reason: reason, Message: msg}
	}
	run := &fleet.UpdateRun{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       fleet.UpdateRunSpec{PlacementName: "app", State: fleet.StateRun},
	}
	st := &run.Status
	st.PolicySnapshotIndexUsed, st.ResourceSnapshotIndexUsed = "0", "3"
	n := 0
	for s := range stages {
		stage := fleet.StageUpdatingStatus{StageName: fmt.Sprintf("stage-%d", s), StartTime: &metav1.Time{Time: at(n).Time}}
		for range clusters / stages {
			stage.Clusters = append(stage.Clusters, fleet.ClusterUpdatingStatus{
				ClusterName: fmt.Sprintf("member-%04d", n),
				Conditions: []metav1.Condition{
					cond(fleet.ClusterUpdatingConditionStarted, "ClusterUpdatingStarted", "Cluster update started", n),
					cond(fleet.ClusterUpdatingConditionSucceeded, "ClusterUpdatingSucceeded", "Cluster update completed successfully", n+1),
				},
			})
			n++
		}
		stage.EndTime = &metav1.Time{Time: at(n).Time}
		stage.Conditions = []metav1.Condition{cond(fleet.StageUpdatingConditionSucceeded, "StageUpdatingSucceeded", "", n)}
		st.StagesStatus = append(st.StagesStatus, stage)
	}
	st.DeletionStageStatus = &fleet.StageUpdatingStatus{StageName: "kubernetes-fleet.io/deleteStage", Clusters: []fleet.ClusterUpdatingStatus{}}
	st.Conditions = []metav1.Condition{
		cond(fleet.StagedUpdateRunConditionInitialized, "UpdateRunInitializedSuccessfully", "", 0),
		cond(fleet.StagedUpdateRunConditionProgressing, "UpdateRunSucceeded", "", n),
		cond(fleet.StagedUpdateRunConditionSucceeded, "UpdateRunSucceeded", "", n),
	}
	return run
}

// writeRun creates run in h and writes its status, as the engine does.
func writeRun(tb testing.TB, h *embedded.Hub, run *fleet.UpdateRun) {
	tb.Helper()
	status := run.Status
	h.ApplyUpdateRun(run)
	stored, err := h.GetUpdateRun(context.Background(), hub.Key{Namespace: run.Namespace, Name: run.Name})
	if err != nil {
		tb.Fatal(err)
	}
	stored.Status = status
	if err := h.UpdateUpdateRunStatus(context.Background(), stored); err != nil {
		tb.Fatal(err)
	}
}

// finishedRunsHub is a hub holding runs finished runs of clusters each, in
// three stages.
func finishedRunsHub(tb testing.TB, runs, clusters int) *embedded.Hub {
	t0 := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	h := embedded.New(clock.NewFake(t0), embedded.DiscardStore{})
	for i := range runs {
		writeRun(tb, h, succeededRun(fmt.Sprintf("run-%04d", i), 3, clusters, t0.Add(time.Duration(i)*time.Hour)))
	}
	return h
}

// BenchmarkListFinishedRuns lists 1,000 finished runs of 100 clusters each
// (ListUpdateRuns, copies; ListUpdateRunsReadOnly, the stored runs), and
// gets one finished run of 1,000 clusters: what reading finished runs
// costs, which must not grow much for keeping them small (husk.go).
//
//	go test ./reconciler/hub/embedded -run '^$' -bench 'FinishedRun' -count 5
func BenchmarkListFinishedRuns(b *testing.B) {
	ctx := context.Background()
	h := finishedRunsHub(b, 1000, 100)
	b.Run("copies", func(b *testing.B) {
		for range b.N {
			if runs, err := h.ListUpdateRuns(ctx); err != nil || len(runs) != 1000 {
				b.Fatal(len(runs), err)
			}
		}
	})
	b.Run("read-only", func(b *testing.B) {
		for range b.N {
			if runs, err := h.ListUpdateRunsReadOnly(ctx); err != nil || len(runs) != 1000 {
				b.Fatal(len(runs), err)
			}
		}
	})
}

// BenchmarkGetFinishedRun gets a finished run of 1,000 clusters.
func BenchmarkGetFinishedRun(b *testing.B) {
	ctx := context.Background()
	h := finishedRunsHub(b, 1, 1000)
	for range b.N {
		if _, err := h.GetUpdateRun(ctx, hub.Key{Name: "run-0000"}); err != nil {
			b.Fatal(err)
		}
	}
}
