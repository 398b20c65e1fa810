package kube

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// TestAFinishedRunIsCachedWithoutItsClustersAndReadWhole: once a run has
// succeeded, the hub's cache keeps it without its stages' clusters (the
// status chain keeps no copy either), and every reader that shows or
// compares the clusters reads them whole from the API server: Get, List,
// the status tree, a hub started afresh; a run being deleted is cached
// whole again.
func TestAFinishedRunIsCachedWithoutItsClustersAndReadWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	f := startRunOnStore(t)
	th, h, key := f.th, f.h, f.key
	ctx := await.Context(t)
	const stages, perStage, deleted = 3, 40, 2
	clusters := stages*perStage + deleted

	r := f.run
	r.Status = progressedStatus(stages, perStage, deleted,
		testCondition(fleet.StagedUpdateRunConditionInitialized, metav1.ConditionTrue),
		testCondition(fleet.StagedUpdateRunConditionProgressing, metav1.ConditionTrue))
	if err := h.UpdateUpdateRunStatus(ctx, r); err != nil {
		t.Fatal(err)
	}
	runStatusHandled(t, h, th, key)
	if got := cachedClusters(t, h, key); got != clusters {
		t.Fatalf("the cache holds %d clusters of the running run; want all %d", got, clusters)
	}

	// The run's last pass.
	r, err := h.GetUpdateRun(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	r.Status.Conditions = []metav1.Condition{
		testCondition(fleet.StagedUpdateRunConditionInitialized, metav1.ConditionTrue),
		testCondition(fleet.StagedUpdateRunConditionProgressing, metav1.ConditionFalse),
		testCondition(fleet.StagedUpdateRunConditionSucceeded, metav1.ConditionTrue)}
	if err := h.UpdateUpdateRunStatus(ctx, r); err != nil {
		t.Fatal(err)
	}
	want := r.Status.DeepCopy()
	runStatusHandled(t, h, th, key)

	if got := cachedClusters(t, h, key); got != 0 {
		t.Errorf("the cache holds %d clusters of the finished run; want none", got)
	}
	h.chainMu.Lock()
	if c := h.chains[key]; c != nil && c.latest != nil {
		t.Errorf("the run's status chain keeps the finished run's status handed over (%d stages)", len(c.latest.Status.StagesStatus))
	}
	h.chainMu.Unlock()
	in := h.informers[fleet.KindClusterStagedUpdateRun]
	in.mu.Lock()
	if c, ok := in.converted[cacheKey(key.Namespace, key.Name)]; ok && countClusters(&c.obj.(*fleet.UpdateRun).Status) > 0 {
		t.Errorf("the cache keeps a conversion of the run with its clusters (resourceVersion %s)", c.resourceVersion)
	}
	in.mu.Unlock()

	whole := func(what string, got *fleet.UpdateRun, err error) {
		t.Helper()
		switch {
		case err != nil:
			t.Errorf("%s: %v", what, err)
		case !equality.Semantic.DeepEqual(&got.Status, want):
			t.Errorf("%s: %d clusters, phase %s; want the finished run whole, %d clusters", what,
				countClusters(&got.Status), got.Phase(), clusters)
		}
	}
	got, err := h.GetUpdateRun(ctx, key)
	whole("GetUpdateRun", got, err)
	runs, err := h.ListUpdateRuns(ctx)
	if len(runs) != 1 {
		t.Fatalf("ListUpdateRuns: %d runs, %v; want the one", len(runs), err)
	}
	whole("ListUpdateRuns", runs[0], err)
	f.store.mu.Lock()
	inStore, _ := f.store.put[f.ref].(*fleet.UpdateRun)
	f.store.mu.Unlock()
	whole("the status tree's copy", inStore, nil)

	// Unchanged, the status is not written again: it is compared whole.
	rv := got.ResourceVersion
	if err := h.UpdateUpdateRunStatus(ctx, got); err != nil || got.ResourceVersion != rv {
		t.Errorf("writing the finished run's status unchanged: resourceVersion %s -> %s, %v; want no write", rv, got.ResourceVersion, err)
	}

	// The readers of metadata and spec take the husk; the readers of
	// unfinished runs do not see it.
	head, err := h.GetUpdateRunWithoutClusters(ctx, key)
	if err != nil || countClusters(&head.Status) != 0 || head.Phase() != fleet.PhaseSucceeded || head.Spec.PlacementName != "app" {
		t.Errorf("GetUpdateRunWithoutClusters: %+v, %v; want the run without clusters", head, err)
	}
	if heads, err := h.ListUpdateRunsWithoutClusters(ctx); err != nil || len(heads) != 1 || countClusters(&heads[0].Status) != 0 {
		t.Errorf("ListUpdateRunsWithoutClusters: %d runs, %v; want the one without clusters", len(heads), err)
	}
	if unfinished, err := h.ListUnfinishedUpdateRunsReadOnly(ctx); err != nil || len(unfinished) != 0 {
		t.Errorf("ListUnfinishedUpdateRunsReadOnly: %d runs, %v; want none", len(unfinished), err)
	}

	// A hub started afresh lists the run as a husk and puts it whole into
	// its status tree.
	store := newFlushedStore()
	again := th.newHub(t, Config{Store: store})
	if _, err := again.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := cachedClusters(t, again, key); got != 0 {
		t.Errorf("a hub started afresh caches %d clusters of the finished run; want none", got)
	}
	store.mu.Lock()
	inStore, _ = store.put[f.ref].(*fleet.UpdateRun)
	store.mu.Unlock()
	whole("the status tree's copy of a hub started afresh", inStore, nil)

	// Deleted, the run is cached whole for its deletion pass.
	got.Finalizers = []string{fleet.UpdateRunFinalizer}
	if err := h.UpdateUpdateRunFinalizers(ctx, got); err != nil {
		t.Fatal(err)
	}
	th.deleteRun(t, h, key)
	if got := cachedClusters(t, h, key); got != clusters {
		t.Errorf("the cache holds %d clusters of the run being deleted; want all %d", got, clusters)
	}
	if err := h.RemoveUpdateRun(ctx, key); err != nil {
		t.Fatal(err)
	}
}

// TestTheCacheKeepsTheRunsThatEndedAsHusks: a run that succeeded, failed
// or failed to initialize is cached without its clusters; a running or
// stopped run (which a person may resume) whole. A husk that has not
// finished (its initialization failed) is listed whole with the runs
// that have not finished.
func TestTheCacheKeepsTheRunsThatEndedAsHusks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	th := startHub(t)
	th.reset(t)
	h := th.newHub(t, Config{})
	ctx := await.Context(t)
	const stages, perStage = 2, 5
	for _, c := range []struct {
		name       string
		conditions []metav1.Condition
		husk       bool
		unfinished bool
	}{
		{"running", []metav1.Condition{testCondition(fleet.StagedUpdateRunConditionInitialized, metav1.ConditionTrue),
			testCondition(fleet.StagedUpdateRunConditionProgressing, metav1.ConditionTrue)}, false, true},
		{"stopped", []metav1.Condition{testCondition(fleet.StagedUpdateRunConditionInitialized, metav1.ConditionTrue),
			testCondition(fleet.StagedUpdateRunConditionProgressing, metav1.ConditionFalse)}, false, true},
		{"succeeded", []metav1.Condition{testCondition(fleet.StagedUpdateRunConditionInitialized, metav1.ConditionTrue),
			testCondition(fleet.StagedUpdateRunConditionSucceeded, metav1.ConditionTrue)}, true, false},
		{"failed", []metav1.Condition{testCondition(fleet.StagedUpdateRunConditionInitialized, metav1.ConditionTrue),
			testCondition(fleet.StagedUpdateRunConditionSucceeded, metav1.ConditionFalse)}, true, false},
		{"init-failed", []metav1.Condition{testCondition(fleet.StagedUpdateRunConditionInitialized, metav1.ConditionFalse)}, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			key := hub.Key{Name: c.name}
			th.apply(t, h, &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: key.Name}, Spec: fleet.UpdateRunSpec{
				PlacementName: "app-" + c.name, StagedUpdateStrategyName: "strategy", ResourceSnapshotIndex: "0", State: fleet.StateRun}})
			r, err := h.GetUpdateRun(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			r.Status = progressedStatus(stages, perStage, 0, c.conditions...)
			if err := h.UpdateUpdateRunStatus(ctx, r); err != nil {
				t.Fatal(err)
			}
			want := r.Status.DeepCopy()
			runStatusHandled(t, h, th, key)
			cached, wantCached := cachedClusters(t, h, key), stages*perStage
			if c.husk {
				wantCached = 0
			}
			if cached != wantCached {
				t.Errorf("the cache holds %d clusters of the %s run; want %d", cached, c.name, wantCached)
			}
			unfinished, err := h.ListUnfinishedUpdateRunsReadOnly(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var listed *fleet.UpdateRun
			for _, u := range unfinished {
				if u.Name == key.Name {
					listed = u
				}
			}
			switch {
			case (listed != nil) != c.unfinished:
				t.Errorf("ListUnfinishedUpdateRunsReadOnly lists the %s run: %v; want %v", c.name, listed != nil, c.unfinished)
			case listed != nil && !equality.Semantic.DeepEqual(&listed.Status, want):
				t.Errorf("ListUnfinishedUpdateRunsReadOnly lists the %s run with %d clusters; want it whole", c.name, countClusters(&listed.Status))
			}
		})
	}
}

// cachedClusters counts the clusters of run key in h's cache, which must
// hold it with its stages.
func cachedClusters(t *testing.T, h *Hub, key hub.Key) int {
	t.Helper()
	u := h.cached(fleet.KindClusterStagedUpdateRun, key)
	if u == nil {
		t.Fatalf("the cache does not hold run %s", key.Name)
	}
	stages, _, _ := unstructured.NestedSlice(u.Object, "status", "stagesStatus")
	if len(stages) == 0 {
		t.Fatalf("the cache holds run %s without its stages", key.Name)
	}
	n := 0
	for _, st := range stages {
		cs, _, _ := unstructured.NestedSlice(st.(map[string]any), "clusters")
		n += len(cs)
	}
	cs, _, _ := unstructured.NestedSlice(u.Object, "status", "deletionStageStatus", "clusters")
	return n + len(cs)
}

func countClusters(st *fleet.UpdateRunStatus) int {
	n := 0
	for _, s := range st.StagesStatus {
		n += len(s.Clusters)
	}
	if st.DeletionStageStatus != nil {
		n += len(st.DeletionStageStatus.Clusters)
	}
	return n
}
