package rollback

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

var t0 = time.Date(2026, 11, 27, 5, 0, 0, 0, time.UTC)

// run builds a finished (or, with succeeded "", running) run of placement
// p rolling out index, its one stage's clusters in the states given
// ("ok", "failed", "updating", "pending"), finished at minute end.
func run(name, index, succeeded string, end int, clusters ...string) *fleet.UpdateRun {
	r := &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: fleet.UpdateRunSpec{PlacementName: "p", StagedUpdateStrategyName: "s", ResourceSnapshotIndex: index}}
	r.Status.ResourceSnapshotIndexUsed = index
	at := metav1.NewTime(t0.Add(time.Duration(end) * time.Minute))
	r.Status.Conditions = []metav1.Condition{{Type: fleet.StagedUpdateRunConditionInitialized, Status: metav1.ConditionTrue, Reason: "x", LastTransitionTime: at}}
	if succeeded != "" {
		r.Status.Conditions = append(r.Status.Conditions, metav1.Condition{Type: fleet.StagedUpdateRunConditionSucceeded,
			Status: metav1.ConditionStatus(succeeded), Reason: "x", Message: "cluster member2 failed", LastTransitionTime: at})
	}
	stage := fleet.StageUpdatingStatus{StageName: "all"}
	for _, c := range clusters {
		name, state, _ := strings.Cut(c, "=")
		cs := fleet.ClusterUpdatingStatus{ClusterName: name}
		cond := func(typ string, st metav1.ConditionStatus) {
			cs.Conditions = append(cs.Conditions, metav1.Condition{Type: typ, Status: st, Reason: "x", LastTransitionTime: at})
		}
		switch state {
		case "ok":
			cond(fleet.ClusterUpdatingConditionStarted, metav1.ConditionTrue)
			cond(fleet.ClusterUpdatingConditionSucceeded, metav1.ConditionTrue)
		case "failed":
			cond(fleet.ClusterUpdatingConditionStarted, metav1.ConditionTrue)
			cond(fleet.ClusterUpdatingConditionSucceeded, metav1.ConditionFalse)
		case "updating":
			cond(fleet.ClusterUpdatingConditionStarted, metav1.ConditionTrue)
		}
		stage.Clusters = append(stage.Clusters, cs)
	}
	r.Status.StagesStatus = []fleet.StageUpdatingStatus{stage}
	return r
}

func TestFindPicksTheLastSnapshotThatSucceededOnTheChangedClusters(t *testing.T) {
	failed := run("r3", "3", "False", 30, "m1=ok", "m2=failed", "m3=pending")
	tests := []struct {
		name     string
		runs     []*fleet.UpdateRun
		rejected map[string]string
		exists   func(string) bool
		want     string // index, or the start of the reason there is none
	}{
		{name: "the most recent success", runs: []*fleet.UpdateRun{run("r1", "1", "True", 10, "m1=ok", "m2=ok"), run("r2", "2", "True", 20, "m1=ok", "m2=ok", "m3=ok")}, want: "2"},
		{name: "by time, not by name or index", runs: []*fleet.UpdateRun{run("z", "1", "True", 25, "m1=ok", "m2=ok"), run("r2", "2", "True", 20, "m1=ok", "m2=ok")}, want: "1"},
		{name: "a rejected snapshot is skipped", runs: []*fleet.UpdateRun{run("r1", "1", "True", 10, "m1=ok", "m2=ok"), run("r2", "2", "True", 20, "m1=ok", "m2=ok")},
			rejected: map[string]string{"2": "bad"}, want: "1"},
		{name: "a pruned snapshot is skipped", runs: []*fleet.UpdateRun{run("r1", "1", "True", 10, "m1=ok", "m2=ok"), run("r2", "2", "True", 20, "m1=ok", "m2=ok")},
			exists: func(i string) bool { return i == "2" }, want: "2"},
		{name: "a run that missed a changed cluster does not count", runs: []*fleet.UpdateRun{run("r1", "1", "True", 10, "m1=ok", "m2=ok"), run("r2", "2", "True", 20, "m1=ok", "m2=failed")}, want: "1"},
		{name: "the failed index itself does not count", runs: []*fleet.UpdateRun{run("r3b", "3", "True", 40, "m1=ok", "m2=ok")}, want: "no run of placement `p` succeeded"},
		{name: "failed and running runs do not count", runs: []*fleet.UpdateRun{run("r1", "1", "False", 10, "m1=ok", "m2=ok"), run("r2", "2", "", 20, "m1=ok", "m2=ok")},
			want: "no run of placement `p` succeeded with another resource snapshot than `3` (not a rejected one, still recorded) on every cluster run `r3` changed (m1, m2)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Find(failed, append(tt.runs, failed), tt.rejected, tt.exists)
			var none *NoTarget
			switch {
			case errors.As(err, &none):
				if !strings.HasPrefix(none.Reason, tt.want) {
					t.Errorf("no target: %s, want %s", none.Reason, tt.want)
				}
			case err != nil:
				t.Fatal(err)
			case got.Index != tt.want:
				t.Errorf("target %+v, want index %s", got, tt.want)
			}
		})
	}
}

func TestFindRefusesWhatHasNothingToRollBack(t *testing.T) {
	ok := run("r1", "1", "True", 10, "m1=ok")
	rb := run("r3-rollback", "1", "False", 30, "m1=failed")
	rb.Annotations = map[string]string{fleet.RollbackOfAnnotation: "r3"}
	for _, tt := range []struct {
		failed *fleet.UpdateRun
		want   string
	}{
		{run("r3", "3", "False", 30, "m1=pending"), "run `r3` failed before it changed any cluster"},
		{rb, "run `r3-rollback` is itself the rollback of `r3`"},
	} {
		_, err := Find(tt.failed, []*fleet.UpdateRun{ok}, nil, nil)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %s", tt.failed.Name, err, tt.want)
		}
	}
}

func TestManifestAndNames(t *testing.T) {
	failed := run("r3", "3", "False", 30, "m1=ok", "m2=failed")
	failed.Spec.StagedUpdateStrategyName = "example-strategy"
	got := string(Manifest(failed, Target{Index: "2", From: "r2", Clusters: []string{"m1", "m2"}}, ""))
	want := `# Rolls back run r3 (resource snapshot 3): it failed: cluster member2 failed
# Resource snapshot 2 is the last that succeeded on m1, m2 (run r2).
# Merging this file starts the rollback through the strategy's stages and approvals.
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateRun
metadata:
  name: r3-rollback
  annotations:
    gitfleet.io/rollback-of: r3
spec:
  placementName: p
  resourceSnapshotIndex: "2"
  stagedRolloutStrategyName: example-strategy
  state: Run
`
	if got != want {
		t.Errorf("manifest:\n%s\nwant:\n%s", got, want)
	}
	long := strings.Repeat("a", 60)
	if n := Name(long); len(n) > 63 || !strings.HasPrefix(n, strings.Repeat("a", 45)+"-rollback-") {
		t.Errorf("Name(60 a) = %s (%d)", n, len(n))
	}
	failed.Namespace = "team"
	if File(failed) != "rollbacks/team.r3.yaml" || Branch(failed) != "team.r3" {
		t.Errorf("file %s branch %s", File(failed), Branch(failed))
	}
}

func TestSupersededBy(t *testing.T) {
	failed := run("r3", "3", "False", 30, "m1=ok")
	rb := run("r3-rollback", "1", "", 40, "m1=ok")
	rb.Annotations = map[string]string{fleet.RollbackOfAnnotation: "r3"}
	if got := SupersededBy(failed, []*fleet.UpdateRun{run("r1", "1", "True", 10), failed, rb}); got != "" {
		t.Errorf("an older run and its own rollback supersede it: %s", got)
	}
	if got := SupersededBy(failed, []*fleet.UpdateRun{failed, run("r4", "4", "", 35)}); got != "r4" {
		t.Errorf("superseded by %q, want r4", got)
	}
}

// husk is r as a hub lists an ended run without its clusters.
func husk(r *fleet.UpdateRun) *fleet.UpdateRun {
	h := r.DeepCopy()
	for i := range h.Status.StagesStatus {
		h.Status.StagesStatus[i].Clusters = nil
	}
	return h
}

// FindReading is handed husks and reads whole only the runs whose
// clusters decide: the successes of the placement that could be the
// target, most recent first, until one covers the changed clusters. A
// husk alone never covers them (Find on husks finds nothing), a run of
// another placement, a failed run, a rejected index and an older success
// are never read, and a run deleted since it was listed is skipped.
func TestFindReadingReadsWholeOnlyTheRunsItChecks(t *testing.T) {
	failed := run("r3", "3", "False", 30, "m1=ok", "m2=failed", "m3=pending")
	other := run("q1", "1", "True", 25, "m1=ok", "m2=ok")
	other.Spec.PlacementName = "q"
	whole := map[string]*fleet.UpdateRun{}
	for _, r := range []*fleet.UpdateRun{
		run("r0", "0", "True", 5, "m1=ok", "m2=ok"),
		run("r1", "1", "True", 10, "m1=ok", "m2=ok"),
		run("r2", "2", "True", 20, "m1=ok", "m2=failed"), // the most recent success misses m2
		run("gone", "2", "True", 21, "m1=ok", "m2=ok"),
		run("f", "2", "False", 22, "m1=ok", "m2=ok"),
		run("rej", "4", "True", 27, "m1=ok", "m2=ok"),
		other,
	} {
		whole[r.Name] = r
	}
	var husks []*fleet.UpdateRun
	for _, r := range whole {
		husks = append(husks, husk(r))
	}
	husks = append(husks, husk(failed))
	rejected := map[string]string{"4": "bad"}

	var none *NoTarget
	if _, err := Find(failed, husks, rejected, nil); !errors.As(err, &none) {
		t.Fatalf("Find on husks: %v; want no target (a husk has no clusters to cover the changed ones)", err)
	}

	var read []string
	got, err := FindReading(failed, husks, func(r *fleet.UpdateRun) (*fleet.UpdateRun, error) {
		read = append(read, r.Name)
		if r.Name == "gone" {
			return nil, nil
		}
		return whole[r.Name], nil
	}, rejected, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Index != "1" || got.From != "r1" {
		t.Errorf("target %+v; want index 1 from r1", got)
	}
	if want := []string{"gone", "r2", "r1"}; !slices.Equal(read, want) {
		t.Errorf("read whole %q; want %q", read, want)
	}

	boom := errors.New("the API server is away")
	if _, err := FindReading(failed, husks, func(*fleet.UpdateRun) (*fleet.UpdateRun, error) { return nil, boom }, rejected, nil); !errors.Is(err, boom) {
		t.Errorf("a failed read: %v; want %v", err, boom)
	}
}
