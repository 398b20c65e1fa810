package kube

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// TestRunStatusIsWrittenBehindTheEngine: a run's status handed over reads
// back at once and reaches the API server; another writer's status that
// comes between a handover and its write (provoked by holding the write)
// makes that write a Conflict and wakes the run, the next handover built
// on the lost status is the Conflict, and one built on the API server's
// copy is written.
func TestRunStatusIsWrittenBehindTheEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	th := startHub(t)
	th.reset(t)
	h := th.newHub(t, Config{})
	ctx := await.Context(t)
	key := hub.Key{Name: "run"}
	spec := fleet.UpdateRunSpec{PlacementName: "app", StagedUpdateStrategyName: "strategy", ResourceSnapshotIndex: "0", State: fleet.StateRun}
	th.apply(t, h, &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: key.Name}, Spec: spec})
	condition := func(typ string) []metav1.Condition {
		return []metav1.Condition{{Type: typ, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "Test",
			Message: "handed over by the test", LastTransitionTime: metav1.Now().Rfc3339Copy()}}
	}
	stored := func() []any {
		u, err := th.client.Resource(resources[fleet.KindClusterStagedUpdateRun]).Get(ctx, key.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		return conds
	}

	// Handed over, read back at once, then written.
	r, err := h.GetUpdateRun(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	r.Status.Conditions = condition(fleet.StagedUpdateRunConditionInitialized)
	if err := h.UpdateUpdateRunStatus(ctx, r); err != nil {
		t.Fatal(err)
	}
	got, err := h.GetUpdateRun(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != r.ResourceVersion || len(got.Status.Conditions) != 1 {
		t.Errorf("run read after the handover: resourceVersion %s, %d conditions; want the caller's %s, 1",
			got.ResourceVersion, len(got.Status.Conditions), r.ResourceVersion)
	}
	await.Until(t, "the status handed over on the API server", func() bool { return len(stored()) == 1 })

	// Another writer's status (a replica that lost its lease) between the
	// next handover and its write: a status-only change, which wakes no
	// run by itself.
	release, held := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h.chainMu.Lock()
	h.beforeStatusWrite = func(hub.Key) { once.Do(func() { close(held); <-release }) }
	h.chainMu.Unlock()
	woken := make(chan struct{}, 1)
	h.Subscribe(func(e hub.Event) {
		if e.Kind == hub.EventUpdateRun && e.Run == key {
			select {
			case woken <- struct{}{}:
			default:
			}
		}
	})
	r.Status.Conditions = append(r.Status.Conditions, condition(fleet.StagedUpdateRunConditionProgressing)...)
	if err := h.UpdateUpdateRunStatus(ctx, r); err != nil {
		t.Fatal(err)
	}
	<-held
	res := th.client.Resource(resources[fleet.KindClusterStagedUpdateRun])
	other, err := res.Get(ctx, key.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": fleet.StagedUpdateRunConditionProgressing,
		"status": "True", "observedGeneration": int64(1), "reason": "Other", "message": "written by another replica",
		"lastTransitionTime": "2026-01-01T00:00:00Z"}}}
	written, err := res.UpdateStatus(ctx, other, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.informers[fleet.KindClusterStagedUpdateRun].caughtUp(ctx, written); err != nil {
		t.Fatal(err)
	}
	close(release)
	select {
	case <-woken:
	case <-ctx.Done():
		t.Fatal("the run was not woken after its status write failed")
	}
	r.Status.Conditions = append(r.Status.Conditions, condition(fleet.StagedUpdateRunConditionSucceeded)...)
	if err := h.UpdateUpdateRunStatus(ctx, r); !hub.IsConflict(err) {
		t.Errorf("a handover built on a lost status: %v; want a Conflict", err)
	}
	got, err = h.GetUpdateRun(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != written.GetResourceVersion() || len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Reason != "Other" {
		t.Errorf("run after the lost write: resourceVersion %s, conditions %+v; want the other writer's %s",
			got.ResourceVersion, got.Status.Conditions, written.GetResourceVersion())
	}
	got.Status.Conditions = condition(fleet.StagedUpdateRunConditionSucceeded)
	if err := h.UpdateUpdateRunStatus(ctx, got); err != nil {
		t.Errorf("a handover built on the API server's copy: %v", err)
	}
	await.Until(t, "the status built on the API server's copy written", func() bool {
		c := stored()
		return len(c) == 1 && c[0].(map[string]any)["type"] == fleet.StagedUpdateRunConditionSucceeded
	})
}

// TestRunStatusWritesAreSpaced: after a write of a run's status, the
// statuses handed over within Config.RunStatusSpacing wait (on the hub's
// clock) and only the latest of them is written, once the spacing passed;
// the run counts as pending (the status tree waits for it) meanwhile.
func TestRunStatusWritesAreSpaced(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	th := startHub(t)
	th.reset(t)
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := th.newHub(t, Config{Clock: clk, RunStatusSpacing: time.Second})
	ctx := await.Context(t)
	key := hub.Key{Name: "run"}
	th.apply(t, h, &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: key.Name},
		Spec: fleet.UpdateRunSpec{PlacementName: "app", StagedUpdateStrategyName: "strategy", ResourceSnapshotIndex: "0", State: fleet.StateRun}})
	var writes atomic.Int64
	h.chainMu.Lock()
	h.beforeStatusWrite = func(hub.Key) { writes.Add(1) }
	h.chainMu.Unlock()
	stored := func() string {
		u, err := th.client.Resource(resources[fleet.KindClusterStagedUpdateRun]).Get(ctx, key.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		if len(conds) != 1 {
			return ""
		}
		return conds[0].(map[string]any)["message"].(string)
	}
	handOver := func(msg string) {
		t.Helper()
		r, err := h.GetUpdateRun(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		r.Status.Conditions = []metav1.Condition{{Type: fleet.StagedUpdateRunConditionInitialized, Status: metav1.ConditionTrue,
			ObservedGeneration: 1, Reason: "Test", Message: msg, LastTransitionTime: metav1.NewTime(clk.Now())}}
		if err := h.UpdateUpdateRunStatus(ctx, r); err != nil {
			t.Fatal(err)
		}
	}

	handOver("first")
	await.Until(t, "the first status on the API server, written at once", func() bool {
		return stored() == "first" && h.statusWritesPending() == 0
	})
	handOver("second")
	handOver("third")
	await.Until(t, "the writer to wait for the spacing on the hub's clock", func() bool { return clk.Pending() > 0 })
	if n := h.Pending(); n != 1 {
		t.Errorf("Pending() = %d while a status waits; want 1", n)
	}
	if got := stored(); got != "first" {
		t.Fatalf("the API server has %q before the spacing passed; want first", got)
	}
	// Step the clock until the write happens: the writer may register its
	// timer after any single step.
	await.Until(t, "the latest status on the API server after the spacing", func() bool {
		clk.Advance(time.Second)
		return stored() == "third" && h.statusWritesPending() == 0
	})
	if n := writes.Load(); n != 2 {
		t.Errorf("%d status writes; want 2 (first, then third: second was replaced while it waited)", n)
	}
}
