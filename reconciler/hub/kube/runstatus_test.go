package kube

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

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
	handOver := func(msg string) { t.Helper(); handOverStatus(ctx, t, h, key, clk.Now(), msg) }

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

// TestASlowRunStatusWriteSpacesTheNextFurther: the write after one that
// took long waits RunStatusCostFactor times as long as it took, so the
// run's large status takes a bounded share of the API server's time, up
// to MaxRunStatusSpacing; a fast write leaves the configured spacing. The write's time is provoked
// on the hub's clock (stepped while the write is held), and the wait read
// off the writer's timer.
func TestASlowRunStatusWriteSpacesTheNextFurther(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	th := startHub(t)
	th.reset(t)
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	const spacing = 100 * time.Millisecond
	h := th.newHub(t, Config{Clock: clk, RunStatusSpacing: spacing})
	ctx := await.Context(t)
	for _, tc := range []struct {
		name     string
		took     time.Duration
		wantWait time.Duration
	}{
		{"an instant write leaves the configured spacing", 0, spacing},
		{"a write faster than the spacing allows leaves it", spacing / RunStatusCostFactor / 2, spacing},
		{"a slow write spaces the next by its cost", 50 * time.Millisecond, RunStatusCostFactor * 50 * time.Millisecond},
		{"a very slow write spaces the next by the most", 2 * MaxRunStatusSpacing / RunStatusCostFactor, MaxRunStatusSpacing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := hub.Key{Name: fmt.Sprintf("run-%d", tc.took.Milliseconds())}
			th.apply(t, h, &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: key.Name},
				Spec: fleet.UpdateRunSpec{PlacementName: "app", StagedUpdateStrategyName: "strategy", ResourceSnapshotIndex: "0", State: fleet.StateRun}})
			var writes atomic.Int64
			h.chainMu.Lock()
			h.beforeStatusWrite = func(hub.Key) {
				if writes.Add(1) == 1 {
					clk.Advance(tc.took)
				}
			}
			h.chainMu.Unlock()
			handOver := func(msg string) { t.Helper(); handOverStatus(ctx, t, h, key, clk.Now(), msg) }
			handOver("first")
			await.Until(t, "the first status written", func() bool { return h.statusWritesPending() == 0 })
			handOver("second")
			await.Until(t, "the writer to wait on the hub's clock", func() bool { return clk.Pending() > 0 })
			next, _ := clk.Next()
			if wait := next.Sub(clk.Now()); wait != tc.wantWait {
				t.Errorf("the second write waits %v after a write of %v; want %v", wait, tc.took, tc.wantWait)
			}
			await.Until(t, "the second status written after the wait", func() bool {
				clk.Advance(tc.wantWait)
				return h.statusWritesPending() == 0
			})
			if n := writes.Load(); n != 2 {
				t.Errorf("%d status writes; want 2", n)
			}
		})
	}
}

// TestARunsLastStatusReachesTheStatusTreeAfterItsPassCommitted: a run's
// status is written behind the engine, so its pass's Commit may flush the
// status tree before the write lands (provoked: the write is held until
// that flush began). A status-only change of a run wakes no pass, and so
// no Commit: the write must ask for the flush that carries it itself, or
// the status tree keeps the run's previous status until some unrelated
// pass commits (a finished run: possibly never).
func TestARunsLastStatusReachesTheStatusTreeAfterItsPassCommitted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	f := startRunOnStore(t)
	th, h, store, key, ref, r := f.th, f.h, f.store, f.key, f.ref, f.run
	ctx := await.Context(t)
	condition := func(typ string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "Test",
			Message: "handed over by the test", LastTransitionTime: metav1.Now().Rfc3339Copy()}
	}
	// A pass of the run under way: its status is written and flushed.
	r.Status.Conditions = []metav1.Condition{condition(fleet.StagedUpdateRunConditionInitialized), condition(fleet.StagedUpdateRunConditionProgressing)}
	if err := h.UpdateUpdateRunStatus(ctx, r); err != nil {
		t.Fatal(err)
	}
	runStatusHandled(t, h, th, key)
	if err := h.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	await.Until(t, "the Progressing status flushed", func() bool { return store.phase(ref, true) == fleet.PhaseProgressing })

	// The run's last pass: it hands the Succeeded status over and commits.
	release, held := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h.chainMu.Lock()
	h.beforeStatusWrite = func(hub.Key) { once.Do(func() { close(held); <-release }) }
	h.chainMu.Unlock()
	r.Status.Conditions = append(r.Status.Conditions, condition(fleet.StagedUpdateRunConditionSucceeded))
	if err := h.UpdateUpdateRunStatus(ctx, r); err != nil {
		t.Fatal(err)
	}
	<-held
	flushing := store.hold()
	if err := h.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-flushing:
	case <-ctx.Done():
		t.Fatal("the pass's Commit asked for no flush of the status tree")
	}
	// The flush of the pass is under way (held): now the status is written
	// and the hub's informer hands it to the store.
	close(release)
	runStatusHandled(t, h, th, key)
	if got := store.phase(ref, false); got != fleet.PhaseSucceeded {
		t.Fatalf("the store was handed the run %s; want %s", got, fleet.PhaseSucceeded)
	}
	if len(h.flushes) == 0 {
		t.Fatalf("the run's Succeeded status reached the store after its pass's flush began, and no flush was asked for: "+
			"the status tree would show the run %s until an unrelated pass commits", store.phase(ref, true))
	}
	store.unhold()
	await.Until(t, "a flush carrying the Succeeded status", func() bool { return store.phase(ref, true) == fleet.PhaseSucceeded })
}

// TestARunsStatusWriteIsPendingUntilTheStoreHoldsIt: Hub.Pending counts a
// run's status write until the hub's informer handed it to the store, not
// only until the write returned, or Daemon.Idle could say idle (and serve
// --exit-when-idle stop) with the run's last status missing from the
// status tree. Provoked: the informer's event is held in the store's Put
// until the write has returned.
func TestARunsStatusWriteIsPendingUntilTheStoreHoldsIt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	f := startRunOnStore(t)
	h, store, key, ref, r := f.h, f.store, f.key, f.ref, f.run
	ctx := await.Context(t)

	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	store.mu.Lock()
	store.beforePut = func(got hub.ObjectRef, obj runtime.Object) {
		if run, ok := obj.(*fleet.UpdateRun); ok && got == ref && run.Phase() == fleet.PhaseSucceeded {
			once.Do(func() { close(held); <-release })
		}
	}
	store.mu.Unlock()
	for _, typ := range []string{fleet.StagedUpdateRunConditionInitialized, fleet.StagedUpdateRunConditionSucceeded} {
		r.Status.Conditions = append(r.Status.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionTrue,
			ObservedGeneration: 1, Reason: "Test", Message: "handed over by the test", LastTransitionTime: metav1.Now().Rfc3339Copy()})
	}
	if err := h.UpdateUpdateRunStatus(ctx, r); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("the run's Succeeded status never reached the store")
	}
	// The informer's event is held in Put; wait for the write to return.
	h.chainMu.Lock()
	idle := h.chains[key].idle
	h.chainMu.Unlock()
	select {
	case <-idle:
	case <-ctx.Done():
		t.Fatal("the run's status write did not return")
	}
	if n := h.Pending(); n != 1 {
		t.Errorf("with the run's status written and not yet in the store, Pending() = %d, want 1", n)
	}
	close(release)
	await.Until(t, "Pending() at 0 once the store holds the status", func() bool { return h.Pending() == 0 })
	if got := store.phase(ref, false); got != fleet.PhaseSucceeded {
		t.Fatalf("Pending() is 0 and the store holds the run %s; want %s", got, fleet.PhaseSucceeded)
	}
}

// TestTheCacheKeepsNoManagedFieldsAndTheAPIServerKeepsItsOwn: the hub's
// informers drop managedFields (nothing reads them, and a run's entries
// were kept for every cached object), and writes built from cached
// objects omit them, so the API server keeps the field managers it
// tracks, gitfleet's status writes among them.
func TestTheCacheKeepsNoManagedFieldsAndTheAPIServerKeepsItsOwn(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	th := startHub(t)
	th.reset(t)
	h := th.newHub(t, Config{})
	ctx := await.Context(t)
	key := hub.Key{Name: "run"}
	th.apply(t, h, &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: key.Name},
		Spec: fleet.UpdateRunSpec{PlacementName: "app", StagedUpdateStrategyName: "strategy", ResourceSnapshotIndex: "0", State: fleet.StateRun}})
	r, err := h.GetUpdateRun(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	r.Status.Conditions = []metav1.Condition{{Type: fleet.StagedUpdateRunConditionInitialized, Status: metav1.ConditionTrue,
		ObservedGeneration: 1, Reason: "Test", Message: "written by the test", LastTransitionTime: metav1.Now().Rfc3339Copy()}}
	if err := h.UpdateUpdateRunStatus(ctx, r); err != nil {
		t.Fatal(err)
	}
	runStatusHandled(t, h, th, key)

	onServer, err := th.client.Resource(resources[fleet.KindClusterStagedUpdateRun]).Get(ctx, key.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var statusManaged bool
	for _, m := range onServer.GetManagedFields() {
		statusManaged = statusManaged || (m.Manager == FieldManager && m.Subresource == "status")
	}
	if !statusManaged {
		t.Errorf("the API server's managedFields have no %s status entry: %+v", FieldManager, onServer.GetManagedFields())
	}
	if cached := h.cached(fleet.KindClusterStagedUpdateRun, key); cached == nil || cached.GetManagedFields() != nil {
		t.Errorf("the cache holds the run with managedFields (or not at all): %v", cached)
	}
	if got, err := h.GetUpdateRun(ctx, key); err != nil || got.ManagedFields != nil {
		t.Errorf("GetUpdateRun: managedFields %v, err %v; want none", got.ManagedFields, err)
	}
}

// runOnStore is a hub started on a store (the status tree), holding run
// "run" as a person applied it, without a status: the fixture of the
// tests of a run's status on its way to the store.
type runOnStore struct {
	th    *testHub
	h     *Hub
	store *flushedStore
	key   hub.Key
	ref   hub.ObjectRef
	// run is the run as the engine reads it before its first pass.
	run *fleet.UpdateRun
}

func startRunOnStore(t *testing.T) *runOnStore {
	t.Helper()
	th := startHub(t)
	th.reset(t)
	f := &runOnStore{th: th, store: newFlushedStore(), key: hub.Key{Name: "run"}}
	f.ref = hub.ObjectRef{Kind: fleet.KindClusterStagedUpdateRun, Key: f.key}
	f.h = th.newHub(t, Config{Store: f.store})
	ctx := await.Context(t)
	th.apply(t, f.h, &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: f.key.Name},
		Spec: fleet.UpdateRunSpec{PlacementName: "app", StagedUpdateStrategyName: "strategy", ResourceSnapshotIndex: "0", State: fleet.StateRun}})
	if _, err := f.h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var err error
	if f.run, err = f.h.GetUpdateRun(ctx, f.key); err != nil {
		t.Fatal(err)
	}
	return f
}

// runStatusHandled waits until the status writes of run key are done and the hub's
// informer has handled the last of them.
func runStatusHandled(t testing.TB, h *Hub, th *testHub, key hub.Key) {
	t.Helper()
	ctx := await.Context(t)
	await.Until(t, "the run's status written", func() bool { return h.statusWritesPending() == 0 })
	u, err := th.client.Resource(resources[fleet.KindClusterStagedUpdateRun]).Get(ctx, key.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.informers[fleet.KindClusterStagedUpdateRun].caughtUp(ctx, u); err != nil {
		t.Fatal(err)
	}
}

// flushedStore is a hub.Store that keeps what was put and, apart, what the
// last Flush carried: the status tree in Git as of its last commit. hold
// makes the next Flush wait until unhold.
type flushedStore struct {
	mu               sync.Mutex
	put, flushed     map[hub.ObjectRef]runtime.Object
	entered, release chan struct{}
	// beforePut, when set, runs before each Put (a test holds the hub's
	// informer event with it).
	beforePut func(ref hub.ObjectRef, obj runtime.Object)
}

func newFlushedStore() *flushedStore {
	return &flushedStore{put: map[hub.ObjectRef]runtime.Object{}, flushed: map[hub.ObjectRef]runtime.Object{}}
}

func (s *flushedStore) Load(context.Context) ([]runtime.Object, error) { return nil, nil }

func (s *flushedStore) Put(ref hub.ObjectRef, obj runtime.Object) {
	s.mu.Lock()
	before := s.beforePut
	s.mu.Unlock()
	if before != nil {
		before(ref, obj)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.put[ref] = obj.DeepCopyObject()
}

func (s *flushedStore) Delete(ref hub.ObjectRef) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.put, ref)
}

// Flush carries what was put when it begins, as the status tree's flush
// encodes the changes before it commits them.
func (s *flushedStore) Flush(ctx context.Context, _ bool) error {
	s.mu.Lock()
	carried := maps.Clone(s.put)
	entered, release := s.entered, s.release
	s.entered = nil
	s.mu.Unlock()
	if entered != nil {
		close(entered)
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushed = carried
	return nil
}

// hold makes the next Flush wait, as a status commit under way, until
// unhold; the channel it returns is closed once that Flush began.
func (s *flushedStore) hold() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entered, s.release = make(chan struct{}), make(chan struct{})
	return s.entered
}

func (s *flushedStore) unhold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.release)
}

// phase is the phase of the run ref as put (flushed false) or as flushed.
func (s *flushedStore) phase(ref hub.ObjectRef, flushed bool) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	objs := s.put
	if flushed {
		objs = s.flushed
	}
	r, ok := objs[ref].(*fleet.UpdateRun)
	if !ok {
		return "absent"
	}
	return r.Phase()
}

// handOverStatus hands h run key's status with one Initialized condition
// saying msg, as a pass of the engine hands over the status it built.
func handOverStatus(ctx context.Context, t *testing.T, h *Hub, key hub.Key, now time.Time, msg string) {
	t.Helper()
	r, err := h.GetUpdateRun(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	r.Status.Conditions = []metav1.Condition{{Type: fleet.StagedUpdateRunConditionInitialized, Status: metav1.ConditionTrue,
		ObservedGeneration: 1, Reason: "Test", Message: msg, LastTransitionTime: metav1.NewTime(now)}}
	if err := h.UpdateUpdateRunStatus(ctx, r); err != nil {
		t.Fatal(err)
	}
}
