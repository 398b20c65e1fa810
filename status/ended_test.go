package status

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
)

// endedRun is a split run of 80 clusters in two stages, named name, created
// after d, that succeeded; its stages are named prefix-0 and prefix-1.
func endedRun(name, prefix string, d time.Duration) *fleet.UpdateRun {
	r := stagedRun(80)
	r.Name, r.CreationTimestamp = name, at(d)
	for i := range r.Status.StagesStatus {
		r.Status.StagesStatus[i].StageName = fmt.Sprintf("%s-%d", prefix, i)
	}
	meta.SetStatusCondition(&r.Status.Conditions, metav1.Condition{Type: fleet.StagedUpdateRunConditionSucceeded,
		Status: metav1.ConditionTrue, Reason: "UpdateRunSucceeded", Message: "The update run succeeded", LastTransitionTime: at(d + time.Hour)})
	return withKind([]runtime.Object{r})[0].(*fleet.UpdateRun)
}

// A store that forgets the record of every ended run commits exactly what
// one that keeps them all commits, step by step: it reads the records back
// from the tree when a forgotten run is put again, changed or not, when it
// is deleted, and when its layout becomes its placement's again.
func TestAForgottenEndedRunIsReadBackAndWrittenAsIfKept(t *testing.T) {
	ctx := context.Background()
	type step struct {
		name string
		do   func(s *TreeStore)
	}
	a, b := endedRun("run-a", "a", 0), endedRun("run-b", "b", time.Hour)
	changed := a.DeepCopy()
	changed.Status.StagesStatus[1].Clusters[3].Conditions[0].Message = "edited by a person"
	bindings := withKind([]runtime.Object{binding("", "member-00000"), binding("", "member-00001"), binding("", "member-00002")})
	steps := []step{
		{"the bindings", func(s *TreeStore) {
			for _, o := range bindings {
				s.Put(refOfObj(o), o)
			}
		}},
		{"run a ends", func(s *TreeStore) { s.Put(refOfObj(a), a) }},
		{"run b ends, newer: the bindings follow its stages", func(s *TreeStore) { s.Put(refOfObj(b), b) }},
		{"run a is put again as it is", func(s *TreeStore) { s.Put(refOfObj(a), a.DeepCopy()) }},
		{"run a changes", func(s *TreeStore) { s.Put(refOfObj(a), changed) }},
		{"run b is deleted: the bindings go back to run a's stages", func(s *TreeStore) { s.Delete(refOfObj(b)) }},
		{"run a is deleted", func(s *TreeStore) { s.Delete(refOfObj(a)) }},
	}
	kept, forgetting := newRepo(t), newRepo(t)
	sk, _ := newStore(kept)
	sf, _ := newStore(forgetting)
	sk.EndedKept, sf.EndedKept = 100, 0
	for _, s := range []*TreeStore{sk, sf} {
		s.Interval = 0
	}
	forgot := false
	for _, st := range steps {
		for _, s := range []*TreeStore{sk, sf} {
			st.do(s)
			if err := s.Flush(ctx, true); err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
		}
		if len(sk.forgotten) != 0 {
			t.Fatalf("%s: the store that keeps 100 ended runs forgot %v", st.name, sk.forgotten)
		}
		if len(sf.ended) != 0 {
			t.Errorf("%s: the store that keeps none still holds the records of %v", st.name, sf.ended)
		}
		forgot = forgot || len(sf.forgotten) > 0
		if !reflect.DeepEqual(kept.commits, forgetting.commits) {
			t.Fatalf("%s: the commits differ\nkept:\n%s\nforgetting:\n%s", st.name, commitLog(kept.commits), commitLog(forgetting.commits))
		}
		if got, want := files(t, filepath.Join(string(forgetting.Dir), StatusDir)), files(t, filepath.Join(string(kept.Dir), StatusDir)); !slices.Equal(got, want) {
			t.Fatalf("%s: files\n%v\nwant\n%v", st.name, got, want)
		}
	}
	if !forgot {
		t.Error("the store never forgot an ended run")
	}
	if n := kept.count(); n != 6 {
		t.Errorf("%d commits, want 6 (putting run a again as it was commits nothing)", n)
	}
}

// A restart loads every ended run and keeps the records of the last
// EndedKept only; a forgotten one is still deleted whole.
func TestARestartForgetsAllButTheLastEndedRuns(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	s, _ := newStore(r)
	s.Interval = 0
	var runs []*fleet.UpdateRun
	for i := range 3 {
		run := endedRun(fmt.Sprintf("run-%d", i), "s", time.Duration(i)*time.Hour)
		runs = append(runs, run)
		s.Put(refOfObj(run), run)
	}
	if err := s.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	s = NewTreeStore(r, r, clock.NewFake(t0))
	s.Interval, s.EndedKept = 0, 1
	if _, err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if len(s.ended) != 1 || len(s.forgotten) != 2 {
		t.Fatalf("after a restart the store holds %d ended runs and forgot %d, want 1 and 2", len(s.ended), len(s.forgotten))
	}
	for _, run := range runs {
		s.Delete(refOfObj(run))
	}
	if err := s.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	if left := files(t, filepath.Join(string(r.Dir), StatusDir)); len(left) != 0 {
		t.Errorf("deleting the runs left %v", left)
	}
}

// commitLog names what each commit wrote and deleted, and its message.
func commitLog(commits []commit) string {
	var out strings.Builder
	for _, c := range commits {
		fmt.Fprintf(&out, "- writes %v, deletes %v, urgent %v:\n%s\n", c.changes.WritePaths(), c.changes.Deletes, c.urgent, c.message)
	}
	return out.String()
}
