package embedded

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/randfill"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

var huskT0 = time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)

// randomStatus fills every field of a run's status at random (lists nil,
// empty or not; times in UTC or Local, with nanoseconds) and marks the run
// finished.
func randomStatus(seed int64) fleet.UpdateRunStatus {
	f := randfill.NewWithSeed(seed).NilChance(0.2).NumElements(0, 4).Funcs(
		func(t *metav1.Time, c randfill.Continue) {
			t.Time = time.Unix(c.Int63n(4e9), c.Int63n(1e9))
			if c.Bool() {
				t.Time = t.UTC()
			}
		},
		func(v *intstr.IntOrString, c randfill.Continue) { *v = intstr.FromInt32(c.Int31()) },
	)
	var st fleet.UpdateRunStatus
	f.Fill(&st)
	st.Conditions = append(st.Conditions, metav1.Condition{Type: fleet.StagedUpdateRunConditionSucceeded,
		Status: metav1.ConditionFalse, Reason: "UpdateRunFailed", LastTransitionTime: metav1.NewTime(huskT0)})
	return st
}

// writeFinished creates a run named name and writes status to it.
func writeFinished(t *testing.T, h *Hub, name string, status fleet.UpdateRunStatus) *fleet.UpdateRun {
	t.Helper()
	ctx := context.Background()
	h.ApplyUpdateRun(&fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: fleet.UpdateRunSpec{PlacementName: "app"}})
	run, err := h.GetUpdateRun(ctx, hub.Key{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	run.Status = *status.DeepCopy()
	if err := h.UpdateUpdateRunStatus(ctx, run); err != nil {
		t.Fatal(err)
	}
	return run
}

func husked(h *Hub, name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.runs.packed[hub.Key{Name: name}]
	return ok
}

// TestAFinishedRunReadsAsItWasWritten: a finished run, every field of its
// status filled at random, is kept as a husk and reads back deep-equal
// (conditions' times to the nanosecond and in their zone, nil lists nil
// and empty ones empty) through GetUpdateRun, ListUpdateRuns and
// ListUpdateRunsReadOnly, on the hub that wrote it and on a hub restored
// from its store; a reader that modifies what it got changes nothing
// stored.
func TestAFinishedRunReadsAsItWasWritten(t *testing.T) {
	ctx := context.Background()
	for seed := range int64(200) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			store := NewMemoryStore()
			h := New(clock.NewFake(huskT0), store)
			want := randomStatus(seed)
			writeFinished(t, h, "run", want)
			hasClusters := len(want.StagesStatus) > 0 || want.DeletionStageStatus != nil
			if got := husked(h, "run"); got != hasClusters {
				t.Fatalf("husked = %v; want %v (stages %d, deletion stage %v)", got, hasClusters, len(want.StagesStatus), want.DeletionStageStatus != nil)
			}
			restored := New(clock.NewFake(huskT0), store)
			if _, err := restored.Restore(ctx); err != nil {
				t.Fatal(err)
			}
			for hubName, h := range map[string]*Hub{"written": h, "restored": restored} {
				got, err := h.GetUpdateRun(ctx, hub.Key{Name: "run"})
				if err != nil {
					t.Fatal(err)
				}
				check := func(how string, got *fleet.UpdateRun) {
					if !reflect.DeepEqual(got.Status, want) {
						t.Errorf("%s hub, %s: the status differs from the one written:\n got %#v\nwant %#v", hubName, how, got.Status, want)
					}
				}
				check("GetUpdateRun", got)
				list, _ := h.ListUpdateRuns(ctx)
				check("ListUpdateRuns", list[0])
				shared, _ := h.ListUpdateRunsReadOnly(ctx)
				check("ListUpdateRunsReadOnly", shared[0])
				for _, s := range append(got.Status.StagesStatus, list[0].Status.StagesStatus...) {
					for i := range s.Clusters {
						s.Clusters[i].ClusterName += "-changed"
						for j := range s.Clusters[i].Conditions {
							s.Clusters[i].Conditions[j].Message += "-changed"
						}
						s.Clusters[i].Conditions = append(s.Clusters[i].Conditions, metav1.Condition{Type: "Appended"})
					}
				}
				again, _ := h.GetUpdateRun(ctx, hub.Key{Name: "run"})
				check("GetUpdateRun after a reader changed its copies", again)
			}
		})
	}
}

// TestARunThatDoesNotPackExactlyIsKeptWhole: a finished run whose times
// would not come back as they are (a zone other than UTC and Local, a
// monotonic clock reading) is kept whole, and reads as written.
func TestARunThatDoesNotPackExactlyIsKeptWhole(t *testing.T) {
	for name, at := range map[string]time.Time{
		"a fixed zone":       huskT0.In(time.FixedZone("CET", 3600)),
		"a monotonic clock":  time.Now(),
		"UTC (it is husked)": huskT0,
	} {
		t.Run(name, func(t *testing.T) {
			h := New(clock.NewFake(huskT0), nil)
			want := fleet.UpdateRunStatus{
				StagesStatus: []fleet.StageUpdatingStatus{{StageName: "s", Clusters: []fleet.ClusterUpdatingStatus{{ClusterName: "m",
					Conditions: []metav1.Condition{{Type: "Started", Status: "True", LastTransitionTime: metav1.Time{Time: at}}}}}}},
				Conditions: []metav1.Condition{{Type: fleet.StagedUpdateRunConditionSucceeded, Status: metav1.ConditionTrue}},
			}
			writeFinished(t, h, "run", want)
			if got, wantHusk := husked(h, "run"), name == "UTC (it is husked)"; got != wantHusk {
				t.Errorf("husked = %v; want %v", got, wantHusk)
			}
			got, _ := h.GetUpdateRun(context.Background(), hub.Key{Name: "run"})
			if !reflect.DeepEqual(got.Status, want) {
				t.Errorf("the status differs from the one written:\n got %#v\nwant %#v", got.Status, want)
			}
		})
	}
}

// TestOnlyAFinishedRunIsHusked: a run in progress is stored whole; the
// write that finishes it husks it; a later write that takes its end away
// (a person's edit of the status file, restored) stores it whole again.
func TestOnlyAFinishedRunIsHusked(t *testing.T) {
	h := New(clock.NewFake(huskT0), nil)
	st := randomStatus(1)
	st.StagesStatus = []fleet.StageUpdatingStatus{{StageName: "s", Clusters: []fleet.ClusterUpdatingStatus{{ClusterName: "m"}}}}
	running := *st.DeepCopy()
	running.Conditions = running.Conditions[:len(running.Conditions)-1]
	run := writeFinished(t, h, "run", running)
	if husked(h, "run") {
		t.Fatal("a run in progress was husked")
	}
	run.Status = *st.DeepCopy()
	if err := h.UpdateUpdateRunStatus(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	if !husked(h, "run") {
		t.Fatal("the write that finished the run did not husk it")
	}
	run.Status = *running.DeepCopy()
	if err := h.UpdateUpdateRunStatus(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	if husked(h, "run") {
		t.Fatal("a run no longer finished is still a husk")
	}
	got, _ := h.GetUpdateRun(context.Background(), hub.Key{Name: "run"})
	if !reflect.DeepEqual(got.Status, running) {
		t.Errorf("the status differs from the one written:\n got %#v\nwant %#v", got.Status, running)
	}
}

// TestAHuskedRunIsNeverWrittenBack: reading a husked run and writing it
// back as it was read (its status, its finalizers, its spec from Git, an
// annotation it already has) writes nothing: no new resourceVersion,
// nothing for the store, no event.
func TestAHuskedRunIsNeverWrittenBack(t *testing.T) {
	ctx := context.Background()
	store := NewMemoryStore()
	h := New(clock.NewFake(huskT0), store)
	st := randomStatus(7)
	st.StagesStatus = append(st.StagesStatus, fleet.StageUpdatingStatus{StageName: "s", Clusters: []fleet.ClusterUpdatingStatus{{ClusterName: "m"}}})
	writeFinished(t, h, "run", st)
	h.AnnotateUpdateRun(hub.Key{Name: "run"}, "gitfleet.io/note", "kept")
	if !husked(h, "run") {
		t.Fatal("the finished run was not husked")
	}
	if err := store.Flush(ctx, false); err != nil {
		t.Fatal(err)
	}
	flushes := store.Flushes
	events := 0
	h.Subscribe(func(hub.Event) { events++ })
	before, _ := h.GetUpdateRun(ctx, hub.Key{Name: "run"})
	for name, write := range map[string]func(r *fleet.UpdateRun) error{
		"UpdateUpdateRunStatus":     func(r *fleet.UpdateRun) error { return h.UpdateUpdateRunStatus(ctx, r) },
		"UpdateUpdateRunFinalizers": func(r *fleet.UpdateRun) error { return h.UpdateUpdateRunFinalizers(ctx, r) },
		"ApplyUpdateRun": func(r *fleet.UpdateRun) error {
			if h.ApplyUpdateRun(r) {
				return fmt.Errorf("ApplyUpdateRun reports a change")
			}
			return nil
		},
		"AnnotateUpdateRun": func(*fleet.UpdateRun) error {
			h.AnnotateUpdateRun(hub.Key{Name: "run"}, "gitfleet.io/note", "kept")
			return nil
		},
	} {
		got, err := h.GetUpdateRun(ctx, hub.Key{Name: "run"})
		if err != nil {
			t.Fatal(err)
		}
		if err := write(got); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if got.ResourceVersion != before.ResourceVersion {
			t.Errorf("%s: resourceVersion %s; want %s as before", name, got.ResourceVersion, before.ResourceVersion)
		}
	}
	if err := store.Flush(ctx, false); err != nil {
		t.Fatal(err)
	}
	if store.Flushes != flushes || events != 0 {
		t.Errorf("writing the run back as read flushed %d times and emitted %d events; want none", store.Flushes-flushes, events)
	}
	after, _ := h.GetUpdateRun(ctx, hub.Key{Name: "run"})
	if !reflect.DeepEqual(after, before) {
		t.Errorf("the run changed:\n got %#v\nwant %#v", after, before)
	}
}

// TestCorruptPackedClustersAreAnError: unpacking any prefix of a packed
// run, or the packed run with a byte more, is an error, never a panic or a
// run with clusters missing.
func TestCorruptPackedClustersAreAnError(t *testing.T) {
	st := randomStatus(3)
	st.StagesStatus = append(st.StagesStatus, fleet.StageUpdatingStatus{StageName: "s", Clusters: []fleet.ClusterUpdatingStatus{
		{ClusterName: "m", Conditions: []metav1.Condition{{Type: "Started", LastTransitionTime: metav1.NewTime(huskT0)}}}}})
	h, packed, ok := husk(&fleet.UpdateRun{Status: st})
	if !ok {
		t.Fatal("not husked")
	}
	for n := range len(packed) {
		if _, err := unhusk(h, packed[:n]); err == nil {
			t.Errorf("unpacking the first %d of %d bytes: no error", n, len(packed))
		}
	}
	if _, err := unhusk(h, append(packed[:len(packed):len(packed)], 0)); err == nil {
		t.Error("unpacking with a byte more: no error")
	}
}

// TestAFinishedRunOfAThousandClustersPacksSmall: the clusters of a run of
// 1,000 clusters that succeeded take under 32 bytes each packed, against
// about 290 in memory, and nothing more is allocated for them.
func TestAFinishedRunOfAThousandClustersPacksSmall(t *testing.T) {
	run := &fleet.UpdateRun{}
	for s := range 3 {
		stage := fleet.StageUpdatingStatus{StageName: fmt.Sprint(s)}
		for c := range 334 {
			at := func(d int) metav1.Time { return metav1.NewTime(huskT0.Add(time.Duration(s*1000+c+d) * time.Second)) }
			stage.Clusters = append(stage.Clusters, fleet.ClusterUpdatingStatus{ClusterName: fmt.Sprintf("member-%04d", s*334+c),
				Conditions: []metav1.Condition{
					{Type: "Started", Status: "True", ObservedGeneration: 1, LastTransitionTime: at(0), Reason: "ClusterUpdatingStarted", Message: "Cluster update started"},
					{Type: "Succeeded", Status: "True", ObservedGeneration: 1, LastTransitionTime: at(1), Reason: "ClusterUpdatingSucceeded", Message: "Cluster update completed successfully"},
				}})
		}
		run.Status.StagesStatus = append(run.Status.StagesStatus, stage)
	}
	_, packed, ok := husk(run)
	if !ok {
		t.Fatal("not husked")
	}
	if per := len(packed) / 1002; per >= 32 {
		t.Errorf("%d bytes a cluster packed (%d in all); want under 32", per, len(packed))
	}
	if cap(packed) != len(packed) {
		t.Errorf("%d bytes allocated for %d packed", cap(packed), len(packed))
	}
	t.Logf("%d bytes packed, %d a cluster", len(packed), len(packed)/1002)
}

// TestReadingAFinishedRunsSpecLeavesItPacked: what the Git loop does to
// every run at every sync (apply it unchanged, clear its note, read and
// list it for admission) and removing it never unpack a husk, so a
// hundred finished runs cost a sync no more than one. The packed clusters
// are made unreadable: any unpack would panic. The runs read without
// their clusters have the metadata and spec GetUpdateRun had.
func TestReadingAFinishedRunsSpecLeavesItPacked(t *testing.T) {
	ctx := context.Background()
	h := New(clock.NewFake(huskT0), nil)
	st := randomStatus(3)
	st.StagesStatus = append(st.StagesStatus, fleet.StageUpdatingStatus{StageName: "s", Clusters: []fleet.ClusterUpdatingStatus{{ClusterName: "m"}}})
	writeFinished(t, h, "run", st)
	key := hub.Key{Name: "run"}
	whole, err := h.GetUpdateRun(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if !husked(h, "run") {
		t.Fatal("the finished run was not husked; the test shows nothing")
	}
	h.mu.Lock()
	h.runs.packed[key] = []byte{0xff}
	h.mu.Unlock()

	if h.ApplyUpdateRun(&fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: "run"}, Spec: whole.Spec}) {
		t.Error("applying the run's own spec reports a change")
	}
	h.AnnotateUpdateRun(key, fleet.RejectedChangeAnnotation, "")
	got, err := h.GetUpdateRunWithoutClusters(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	listed, err := h.ListUpdateRunsWithoutClusters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*fleet.UpdateRun{"GetUpdateRunWithoutClusters": got, "ListUpdateRunsWithoutClusters": listed[0]} {
		if !reflect.DeepEqual(r.ObjectMeta, whole.ObjectMeta) || !reflect.DeepEqual(r.Spec, whole.Spec) {
			t.Errorf("%s: metadata and spec differ from GetUpdateRun's:\n got %#v %#v\nwant %#v %#v", name, r.ObjectMeta, r.Spec, whole.ObjectMeta, whole.Spec)
		}
	}
	if len(listed) != 1 {
		t.Errorf("ListUpdateRunsWithoutClusters listed %d runs, want 1", len(listed))
	}
	if err := h.RemoveUpdateRun(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := h.GetUpdateRunWithoutClusters(ctx, key); !hub.IsNotFound(err) {
		t.Errorf("the removed run reads %v, want not found", err)
	}
}
