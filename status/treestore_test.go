package status

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// repo is a temp-dir fleet repository whose commits are recorded: the real
// Dir writes the files; the log keeps what each commit was told.
type repo struct {
	Dir
	mu      sync.Mutex
	commits []commit
	fail    error
}

type commit struct {
	changes Changeset
	message string
	urgent  bool
}

func newRepo(t *testing.T) *repo { return &repo{Dir: Dir(t.TempDir())} }

func (r *repo) Commit(ctx context.Context, ch Changeset, msg string, urgent bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	r.commits = append(r.commits, commit{ch, msg, urgent})
	return r.Dir.Commit(ctx, ch, msg, urgent)
}

func (r *repo) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.commits)
}

func (r *repo) lastCommit(t *testing.T) commit {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.commits) == 0 {
		t.Fatal("no commit")
	}
	return r.commits[len(r.commits)-1]
}

func refOfObj(obj runtime.Object) hub.ObjectRef {
	mo := obj.(metav1.Object)
	return hub.ObjectRef{Kind: kindFor(obj), Key: types.NamespacedName{Namespace: mo.GetNamespace(), Name: mo.GetName()}}
}

// withKind sets TypeMeta as the hub does before it persists.
func withKind(objs []runtime.Object) []runtime.Object {
	for _, o := range objs {
		if err := fillTypeMeta(o); err != nil {
			panic(err)
		}
	}
	return objs
}

func newStore(r *repo) (*TreeStore, *clock.Fake) {
	clk := clock.NewFake(t0)
	return NewTreeStore(r, r, clk), clk
}

func TestTreeStoreRoundTripsEveryKind(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	s, _ := newStore(r)
	objs := withKind(allKinds())
	for _, o := range objs {
		o.(metav1.Object).SetResourceVersion("7") // the hub's counter; not persisted
		s.Put(refOfObj(o), o)
	}
	if err := s.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}

	loaded, err := NewTreeStore(r, r, clock.NewFake(t0)).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded) != len(objs) {
		t.Fatalf("loaded %d objects, put %d", len(loaded), len(objs))
	}
	want := map[hub.ObjectRef]runtime.Object{}
	for _, o := range objs {
		o.(metav1.Object).SetResourceVersion("")
		want[refOfObj(o)] = o
	}
	for _, got := range loaded {
		w, ok := want[refOfObj(got)]
		if !ok {
			t.Errorf("loaded unexpected %s", describeObject(got))
			continue
		}
		if !equality.Semantic.DeepEqual(got, w) {
			t.Errorf("%s changed in the round trip:\ngot  %#v\nwant %#v", describeObject(got), got, w)
		}
	}
}

func TestTreeStoreFlushWithoutChangesCommitsNothing(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	s, _ := newStore(r)
	if err := s.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	if r.count() != 0 {
		t.Fatalf("empty flush made %d commits", r.count())
	}
}

func TestTreeStoreDropsWritesIdenticalToWhatIsStored(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	s, _ := newStore(r)
	run := withKind([]runtime.Object{waitingRun("")})[0]
	s.Put(refOfObj(run), run)
	if err := s.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}

	// Same process: the run is written again with only a new resourceVersion.
	again := run.DeepCopyObject()
	again.(metav1.Object).SetResourceVersion("99")
	s.Put(refOfObj(again), again)
	if err := s.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	if r.count() != 1 {
		t.Fatalf("identical write made a commit (%d commits)", r.count())
	}

	// After a restart: Load learns the stored bytes, so a re-Put is a no-op.
	s2, _ := newStore(r)
	if _, err := s2.Load(ctx); err != nil {
		t.Fatal(err)
	}
	s2.Put(refOfObj(run), run)
	if err := s2.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	if r.count() != 1 {
		t.Fatalf("identical write after Load made a commit (%d commits)", r.count())
	}
	if s2.Pending() {
		t.Error("store still reports pending changes")
	}
}

func TestTreeStoreDeleteRemovesTheFile(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	s, _ := newStore(r)
	b := withKind([]runtime.Object{binding("", "member1")})[0]
	s.Put(refOfObj(b), b)
	if err := s.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(string(r.Dir), "status/bindings/example-placement/member1.yaml")
	if _, err := os.Stat(file); err != nil {
		t.Fatal(err)
	}

	// A fresh store knows where the binding lives only from Load.
	s2, _ := newStore(r)
	if _, err := s2.Load(ctx); err != nil {
		t.Fatal(err)
	}
	s2.Delete(refOfObj(b))
	s2.Delete(hub.ObjectRef{Kind: fleet.KindClusterResourceBinding, Key: types.NamespacedName{Name: "never-stored"}})
	if err := s2.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("binding file still there: %v", err)
	}
	last := r.lastCommit(t)
	if !reflect.DeepEqual(last.changes.Deletes, []string{"status/bindings/example-placement/member1.yaml"}) || len(last.changes.Writes) != 0 {
		t.Errorf("delete commit = %+v", last.changes)
	}
	if last.message != "status: 1 binding removed" {
		t.Errorf("message = %q", last.message)
	}
}

func TestTreeStorePutThenDeleteBeforeFlushLeavesNoTrace(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	s, _ := newStore(r)
	a := withKind([]runtime.Object{approval("")})[0]
	s.Put(refOfObj(a), a)
	s.Delete(refOfObj(a))
	if err := s.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	if r.count() != 0 {
		t.Fatalf("made %d commits for an object that came and went", r.count())
	}
}

func TestTreeStoreBatchesNonUrgentFlushes(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	s, clk := newStore(r)
	put := func(cluster string) {
		b := withKind([]runtime.Object{binding("", cluster)})[0]
		s.Put(refOfObj(b), b)
	}

	put("member1")
	if err := s.Flush(ctx, false); err != nil { // first commit goes at once
		t.Fatal(err)
	}
	if r.count() != 1 {
		t.Fatalf("first non-urgent flush: %d commits, want 1", r.count())
	}

	clk.Advance(500 * time.Millisecond)
	put("member2")
	if err := s.Flush(ctx, false); err != nil {
		t.Fatal(err)
	}
	clk.Advance(500 * time.Millisecond)
	put("member3")
	if err := s.Flush(ctx, false); err != nil {
		t.Fatal(err)
	}
	if r.count() != 1 {
		t.Fatalf("flushes within the interval committed: %d commits", r.count())
	}

	clk.Advance(time.Second) // 2s after the first commit: the timer commits both
	if r.count() != 2 {
		t.Fatalf("after the interval: %d commits, want 2", r.count())
	}
	last := r.lastCommit(t)
	if got := last.changes.WritePaths(); !reflect.DeepEqual(got, []string{
		"status/bindings/example-placement/member2.yaml", "status/bindings/example-placement/member3.yaml"}) {
		t.Errorf("batched commit wrote %v", got)
	}
	if last.urgent || last.message != "status: 2 bindings updated" {
		t.Errorf("batched commit urgent=%v message=%q", last.urgent, last.message)
	}
	if clk.Pending() != 0 {
		t.Errorf("%d timers left armed", clk.Pending())
	}
}

// The end of a run is what people wait for and has nothing to be batched
// with: the flush that carries it commits at once, within the interval.
// Later changes of the ended run, and a run loaded as ended, batch again.
func TestTreeStoreCommitsTheEndOfARunAtOnce(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		status metav1.ConditionStatus
		loaded bool // the store restarted (Load) before the run ended
	}{
		{name: "succeeded", status: metav1.ConditionTrue},
		{name: "failed", status: metav1.ConditionFalse},
		{name: "succeeded after a restart", status: metav1.ConditionTrue, loaded: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRepo(t)
			s, clk := newStore(r)
			run := withKind([]runtime.Object{waitingRun("")})[0].(*fleet.UpdateRun)
			s.Put(refOfObj(run), run)
			if err := s.Flush(ctx, false); err != nil { // the first commit goes at once
				t.Fatal(err)
			}
			if tc.loaded {
				s, clk = newStore(r)
				if _, err := s.Load(ctx); err != nil {
					t.Fatal(err)
				}
				b := withKind([]runtime.Object{binding("", "member0")})[0]
				s.Put(refOfObj(b), b)
				if err := s.Flush(ctx, false); err != nil { // the first commit after a start goes at once
					t.Fatal(err)
				}
			}
			base := r.count()
			clk.Advance(100 * time.Millisecond)
			ended := run.DeepCopy()
			meta.SetStatusCondition(&ended.Status.Conditions, cond(fleet.StagedUpdateRunConditionSucceeded, tc.status, "UpdateRunEnded", "ended", 3*time.Minute))
			s.Put(refOfObj(ended), ended)
			// A commit in between would make the next one wait the
			// interval again; the end must not wait for it.
			b := withKind([]runtime.Object{binding("", "member1")})[0]
			s.Put(refOfObj(b), b)
			if err := s.Flush(ctx, false); err != nil {
				t.Fatal(err)
			}
			if got := r.count() - base; got != 1 {
				t.Fatalf("flush of the ended run: %d new commits, want 1 (at once)", got)
			}
			if r.lastCommit(t).urgent {
				t.Error("the end of a run was committed as urgent: nothing waits for it")
			}

			// Once ended, the run's further changes are batched again.
			clk.Advance(100 * time.Millisecond)
			again := ended.DeepCopy()
			again.Labels = map[string]string{"touched": "yes"}
			s.Put(refOfObj(again), again)
			if err := s.Flush(ctx, false); err != nil {
				t.Fatal(err)
			}
			if got := r.count() - base; got != 1 {
				t.Fatalf("a change of an ended run committed at once: %d new commits, want 1", got)
			}
			clk.Advance(DefaultInterval)
			if got := r.count() - base; got != 2 {
				t.Fatalf("after the interval: %d new commits, want 2", got)
			}
		})
	}
}

// A run loaded as ended does not make later flushes commit at once.
func TestTreeStoreBatchesARunLoadedAsEnded(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	s, _ := newStore(r)
	run := withKind([]runtime.Object{waitingRun("")})[0].(*fleet.UpdateRun)
	meta.SetStatusCondition(&run.Status.Conditions, cond(fleet.StagedUpdateRunConditionSucceeded, metav1.ConditionTrue, "UpdateRunSucceeded", "done", 3*time.Minute))
	s.Put(refOfObj(run), run)
	if err := s.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	s, clk := newStore(r)
	if _, err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	b := withKind([]runtime.Object{binding("", "member1")})[0]
	s.Put(refOfObj(b), b)
	if err := s.Flush(ctx, false); err != nil { // the first commit after a start goes at once
		t.Fatal(err)
	}
	clk.Advance(100 * time.Millisecond)
	again := run.DeepCopy()
	again.Labels = map[string]string{"touched": "yes"}
	s.Put(refOfObj(again), again)
	if err := s.Flush(ctx, false); err != nil {
		t.Fatal(err)
	}
	if got := r.count(); got != 2 {
		t.Fatalf("a change of a run loaded as ended committed at once: %d commits, want 2", got)
	}
}

func TestTreeStoreUrgentFlushCommitsAtOnce(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	s, clk := newStore(r)
	b1 := withKind([]runtime.Object{binding("", "member1")})[0]
	s.Put(refOfObj(b1), b1)
	if err := s.Flush(ctx, false); err != nil {
		t.Fatal(err)
	}
	clk.Advance(100 * time.Millisecond)
	b2 := withKind([]runtime.Object{binding("", "member2")})[0]
	s.Put(refOfObj(b2), b2)
	if err := s.Flush(ctx, false); err != nil { // deferred...
		t.Fatal(err)
	}
	if err := s.Flush(ctx, true); err != nil { // ...until a side effect needs it
		t.Fatal(err)
	}
	if r.count() != 2 || !r.lastCommit(t).urgent {
		t.Fatalf("urgent flush: %d commits, last urgent=%v", r.count(), r.lastCommit(t).urgent)
	}
	if clk.Pending() != 0 {
		t.Errorf("urgent commit left the batch timer armed")
	}
	clk.Advance(time.Minute)
	if r.count() != 2 {
		t.Errorf("timer committed again: %d commits", r.count())
	}
}

func TestTreeStoreKeepsChangesWhenTheCommitFails(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	s, clk := newStore(r)
	var lags []time.Duration
	s.OnCommit = func(_ Changeset, lag time.Duration, _ error) { lags = append(lags, lag) }
	run := withKind([]runtime.Object{waitingRun("")})[0]
	s.Put(refOfObj(run), run)
	r.fail = errors.New("push rejected")
	clk.Advance(3 * time.Second)
	if err := s.Flush(ctx, true); err == nil || !strings.Contains(err.Error(), "push rejected") {
		t.Fatalf("Flush = %v, want the commit error", err)
	}
	r.fail = nil
	clk.Advance(time.Second)
	if err := s.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	if r.count() != 1 || r.lastCommit(t).message != "status: example-run stage canary waiting for approval" {
		t.Fatalf("retry: %d commits, %q", r.count(), r.lastCommit(t).message)
	}
	if want := []time.Duration{3 * time.Second, 4 * time.Second}; !reflect.DeepEqual(lags, want) {
		t.Errorf("write-back lags = %v, want %v (measured from the Put)", lags, want)
	}
}

func TestTreeStoreTimerRetriesAFailedBatch(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	s, clk := newStore(r)
	var reported []error
	s.OnError = func(err error) { reported = append(reported, err) }
	put := func(cluster string) {
		b := withKind([]runtime.Object{binding("", cluster)})[0]
		s.Put(refOfObj(b), b)
	}
	put("member1")
	if err := s.Flush(ctx, false); err != nil {
		t.Fatal(err)
	}
	put("member2")
	if err := s.Flush(ctx, false); err != nil {
		t.Fatal(err)
	}
	r.fail = errors.New("remote down")
	clk.Advance(2 * time.Second)
	if len(reported) != 1 {
		t.Fatalf("timer commit failure reported %d times", len(reported))
	}
	r.fail = nil
	clk.Advance(2 * time.Second)
	if r.count() != 2 {
		t.Fatalf("failed batch not retried: %d commits", r.count())
	}
}

func TestTreeStoreReportsObjectsWithoutAPlace(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	s, _ := newStore(r)
	bad := withKind([]runtime.Object{snapshot("", 1, -1)})[0]
	delete(bad.(metav1.Object).GetLabels(), fleet.ResourceIndexLabel)
	good := withKind([]runtime.Object{member("member1")})[0]
	s.Put(refOfObj(bad), bad)
	s.Put(refOfObj(good), good)
	err := s.Flush(ctx, true)
	if err == nil || !strings.Contains(err.Error(), "resource-index") {
		t.Fatalf("Flush = %v, want the unplaceable snapshot named", err)
	}
	if r.count() != 1 || len(r.lastCommit(t).changes.Writes) != 1 {
		t.Fatalf("the placeable object was held back")
	}
	if err := s.Flush(ctx, true); err == nil {
		t.Error("second Flush forgot the unplaceable snapshot")
	}
}

func TestTreeStoreRefusesTwoObjectsInOneFile(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	s, _ := newStore(r)
	b1 := withKind([]runtime.Object{binding("", "member1")})[0]
	b2 := withKind([]runtime.Object{binding("", "member1")})[0]
	b2.(metav1.Object).SetName("example-placement-member1-ffffffff")
	s.Put(refOfObj(b1), b1)
	if err := s.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	s.Put(refOfObj(b2), b2)
	if err := s.Flush(ctx, true); err == nil || !strings.Contains(err.Error(), "both belong in status/bindings/example-placement/member1.yaml") {
		t.Fatalf("Flush = %v, want a collision error", err)
	}
}

func TestTreeStoreLoadNamesBrokenFiles(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	write := func(p, content string) {
		full := filepath.Join(string(r.Dir), p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	good, _ := Encode(withKind([]runtime.Object{member("member1")})[0])
	write("status/clusters/member1.yaml", string(good))
	write("status/clusters/member2.yaml", string(good)) // member1 in member2's file
	write("approvals/typo.yaml", "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterApprovalRequest\nmetadata:\n  name: typo\nspec:\n  parentStageRollout: r\n  targetStage: s\nstatus:\n  condition: []\n")
	write("status/README.md", "not yaml, ignored")

	objs, err := NewTreeStore(r, r, clock.NewFake(t0)).Load(ctx)
	if err == nil {
		t.Fatal("Load accepted broken files")
	}
	for _, want := range []string{
		"status/clusters/member2.yaml: holds MemberCluster member1, which belongs in status/clusters/member1.yaml",
		`approvals/typo.yaml: unknown field "status.condition"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Load error %q lacks %q", err, want)
		}
	}
	if len(objs) != 1 {
		t.Errorf("Load returned %d good objects, want 1", len(objs))
	}
}

func TestTreeStoreKeepsChangesMadeWhileCommitting(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	clk := clock.NewFake(t0)
	var s *TreeStore
	run := withKind([]runtime.Object{waitingRun("")})[0].(*fleet.UpdateRun)
	newer := run.DeepCopy()
	newer.Spec.State = fleet.StateStop
	once := false
	s = NewTreeStore(r, commitFunc(func(ctx context.Context, ch Changeset, msg string, urgent bool) error {
		if !once { // the hub writes again while the push is in flight
			once = true
			s.Put(refOfObj(newer), newer)
		}
		return r.Commit(ctx, ch, msg, urgent)
	}), clk)
	s.Put(refOfObj(run), run)
	if err := s.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	if !s.Pending() {
		t.Fatal("the write made during the commit was lost")
	}
	if err := s.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	data, err := r.Read("status/runs/example-run.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "state: Stop") {
		t.Errorf("stored run is not the newer one:\n%s", data)
	}
}

// A sealed flush carries what was recorded before Seal: a write after it
// goes into the next flush, which waits until the sealed one is finished.
func TestTreeStoreSealFixesWhatTheFlushCarries(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	s, _ := newStore(r)
	run := withKind([]runtime.Object{waitingRun("")})[0].(*fleet.UpdateRun)
	newer := run.DeepCopy()
	newer.Spec.State = fleet.StateStop
	s.Put(refOfObj(run), run)
	finish := s.Seal(true)
	s.Put(refOfObj(newer), newer) // a pass writes while the sealed flush travels
	next := make(chan error, 1)
	go func() { next <- s.Flush(ctx, true) }()
	if err := finish(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-next; err != nil {
		t.Fatal(err)
	}
	if n := r.count(); n != 2 {
		t.Fatalf("%d commits, want 2: the sealed one and the next", n)
	}
	r.mu.Lock()
	first := string(r.commits[0].changes.Writes["status/runs/example-run.yaml"])
	r.mu.Unlock()
	if strings.Contains(first, "state: Stop") {
		t.Errorf("the sealed commit carries the write made after Seal:\n%s", first)
	}
	if data, _ := r.Read("status/runs/example-run.yaml"); !strings.Contains(string(data), "state: Stop") {
		t.Errorf("stored run is not the newer one:\n%s", data)
	}
}

func TestTreeStoreRefreshLearnsAPersonsEdit(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	s, _ := newStore(r)
	a := withKind([]runtime.Object{approval("")})[0].(*fleet.ApprovalRequest)
	s.Put(refOfObj(a), a)
	if err := s.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	// A person merges an approval: the file changes behind the store's back.
	approved, _ := Encode(ApprovedCopy(a, t0))
	if err := r.Dir.Commit(ctx, Changeset{Writes: map[string][]byte{"approvals/example-run-after-canary.yaml": approved}}, "approve", false); err != nil {
		t.Fatal(err)
	}
	if err := s.Refresh("approvals/example-run-after-canary.yaml", "approvals/gone.yaml"); err != nil {
		t.Fatal(err)
	}
	// The hub writes the request as it knew it: that is a change now.
	s.Put(refOfObj(a), a)
	if err := s.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	if r.count() != 2 {
		t.Fatalf("write after Refresh was dropped: %d commits", r.count())
	}
}

// snapshotDir is a Dir that, like the daemon's copy of the trees, can be
// released.
type snapshotDir struct {
	Dir
	released bool
}

func (d *snapshotDir) Release() { d.released = true }

func TestTreeStoreReleasesASnapshotOnceLoaded(t *testing.T) {
	r := newRepo(t)
	s, _ := newStore(r)
	obj := withKind([]runtime.Object{binding("", "member1")})[0]
	s.Put(refOfObj(obj), obj)
	if err := s.Flush(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	snap := &snapshotDir{Dir: r.Dir}
	objs, err := NewTreeStore(snap, r, clock.NewFake(t0)).Load(context.Background())
	if err != nil || len(objs) != 1 {
		t.Fatalf("load: %d objects, %v", len(objs), err)
	}
	if !snap.released {
		t.Error("the store keeps the snapshot it loaded from: every file's first version stays in memory")
	}
}

// commitFunc is a Committer that calls the function, for tests that watch
// or fail commits.
type commitFunc func(ctx context.Context, changes Changeset, message string, urgent bool) error

func (f commitFunc) Commit(ctx context.Context, changes Changeset, message string, urgent bool) error {
	return f(ctx, changes, message, urgent)
}

// An ended run's parts are remembered by their digest once its end is
// committed: the store keeps neither their content nor their encoding
// (every run that ever ended would otherwise stay in memory, ~0.5 MB a run
// at 1,000 clusters), on the store that committed the end as on one that
// loaded it. Nothing else changes: writing the same run again commits
// nothing, a change writes only the part that changed, a Load reads the
// run whole, and its deletion removes every part.
func TestTreeStoreKeepsOnlyDigestsOfAnEndedRunsParts(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	s, _ := newStore(r)
	run := withKind([]runtime.Object{bigRun("", 0, 60, 60)})[0].(*fleet.UpdateRun)
	ref := refOfObj(run)
	flush := func(s *TreeStore) {
		t.Helper()
		if err := s.Flush(ctx, true); err != nil {
			t.Fatal(err)
		}
	}
	s.Put(ref, run)
	flush(s)
	held := func(s *TreeStore) (content, digests int) {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, p := range s.paths[ref][1:] {
			if _, ok := s.stored[p]; ok {
				content++
			}
			if _, ok := s.digests[p]; ok {
				digests++
			}
		}
		return content, digests
	}
	parts := len(s.paths[ref]) - 1
	if c, _ := held(s); parts < 2 || c != parts {
		t.Fatalf("a running run: content of %d of its %d parts kept, want all (it is written again soon)", c, parts)
	}

	ended := run.DeepCopy()
	meta.SetStatusCondition(&ended.Status.Conditions, cond(fleet.StagedUpdateRunConditionSucceeded, metav1.ConditionTrue, "UpdateRunSucceeded", "ended", 3*time.Minute))
	s.Put(ref, ended)
	flush(s)
	s2, _ := newStore(r)
	loaded, err := s2.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for name, st := range map[string]*TreeStore{"after its end was committed": s, "after a Load": s2} {
		if c, d := held(st); c != 0 || d != parts || st.cache[ref] != nil {
			t.Errorf("%s: content of %d parts, digests of %d, encoding kept %v; want digests of all %d parts and nothing else",
				name, c, d, st.cache[ref] != nil, parts)
		}
	}
	if len(loaded) != 1 || !equality.Semantic.DeepEqual(loaded[0], ended) {
		t.Fatalf("loaded %v, want the ended run", loaded)
	}

	base := r.count()
	for _, st := range []*TreeStore{s, s2} {
		st.Put(ref, ended.DeepCopy())
		flush(st)
	}
	if r.count() != base {
		t.Fatalf("writing the ended run again made %d commits, want none", r.count()-base)
	}
	changed := ended.DeepCopy()
	changed.Status.StagesStatus[1].Clusters[25].Conditions[0].Message = "changed by hand"
	s.Put(ref, changed)
	flush(s)
	if r.count() != base+1 {
		t.Fatalf("a change of the ended run made %d commits, want 1", r.count()-base)
	}
	if w := r.lastCommit(t).changes.Writes; len(w) != 1 {
		t.Errorf("a change of one cluster of the ended run wrote %d files, want its part only", len(w))
	}
	if loaded, err := NewTreeStore(r, r, clock.NewFake(t0)).Load(ctx); err != nil || len(loaded) != 1 || !equality.Semantic.DeepEqual(loaded[0], changed) {
		t.Fatalf("loaded %v (%v), want the changed run", loaded, err)
	}

	s.Delete(ref)
	flush(s)
	if got := files(t, string(r.Dir)); len(got) != 0 {
		t.Errorf("files left after the ended run's deletion: %v", got)
	}
}
