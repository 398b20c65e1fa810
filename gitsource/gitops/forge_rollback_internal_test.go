package gitops

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
)

// wholeReadsHub records the runs read whole: on a Kubernetes hub each is
// a GET from the API server of every cluster of the run.
type wholeReadsHub struct {
	hub.Hub
	whole []string // run names; "*" for a ListUpdateRuns
}

func (h *wholeReadsHub) GetUpdateRun(ctx context.Context, key hub.Key) (*fleet.UpdateRun, error) {
	h.whole = append(h.whole, key.Name)
	return h.Hub.GetUpdateRun(ctx, key)
}

func (h *wholeReadsHub) ListUpdateRuns(ctx context.Context) ([]*fleet.UpdateRun, error) {
	h.whole = append(h.whole, "*")
	return h.Hub.ListUpdateRuns(ctx)
}

// rollbackFleet is an embedded hub holding the runs given, each of
// placement/index/phase ("True" succeeded, "False" failed) ending at
// minute end, its one stage's clusters as "name=ok" or "name=failed", and
// snapshots 0 to 4 of placements web and api. The hub keeps the ended
// runs as husks.
func rollbackFleet(t *testing.T, runs ...string) *wholeReadsHub {
	t.Helper()
	ctx := context.Background()
	t0 := time.Date(2026, 11, 27, 5, 0, 0, 0, time.UTC)
	h := embedded.New(clock.NewFake(t0), embedded.NewMemoryStore())
	for _, p := range []string{"web", "api"} {
		for _, i := range []string{"0", "1", "2", "3", "4"} {
			s := snapshot(i, "", 1, "c"+i)
			s.Name = p + "-" + i + "-snapshot"
			s.Labels[fleet.PlacementTrackingLabel] = p
			if err := h.CreateResourceSnapshot(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, spec := range runs {
		f := strings.Fields(spec)
		name, placement, index, succeeded := f[0], f[1], f[2], f[3]
		end, _ := time.ParseDuration(f[4])
		h.ApplyUpdateRun(&fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: fleet.UpdateRunSpec{PlacementName: placement, StagedUpdateStrategyName: "s", ResourceSnapshotIndex: index, State: fleet.StateRun}})
		r, err := h.GetUpdateRun(ctx, hub.Key{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		at := metav1.NewTime(t0.Add(end))
		r.Status.ResourceSnapshotIndexUsed = index
		r.Status.Conditions = []metav1.Condition{
			{Type: fleet.StagedUpdateRunConditionInitialized, Status: metav1.ConditionTrue, Reason: "x", LastTransitionTime: at},
			{Type: fleet.StagedUpdateRunConditionSucceeded, Status: metav1.ConditionStatus(succeeded), Reason: "x", LastTransitionTime: at},
		}
		stage := fleet.StageUpdatingStatus{StageName: "all"}
		for _, c := range f[5:] {
			cluster, state, _ := strings.Cut(c, "=")
			cs := fleet.ClusterUpdatingStatus{ClusterName: cluster, Conditions: []metav1.Condition{
				{Type: fleet.ClusterUpdatingConditionStarted, Status: metav1.ConditionTrue, Reason: "x", LastTransitionTime: at},
				{Type: fleet.ClusterUpdatingConditionSucceeded, Status: metav1.ConditionStatus(map[string]string{"ok": "True", "failed": "False"}[state]),
					Reason: "x", LastTransitionTime: at},
			}}
			stage.Clusters = append(stage.Clusters, cs)
		}
		r.Status.StagesStatus = []fleet.StageUpdatingStatus{stage}
		if err := h.UpdateUpdateRunStatus(ctx, r); err != nil {
			t.Fatal(err)
		}
		if head, _ := h.GetUpdateRunWithoutClusters(ctx, hub.Key{Name: name}); len(head.Status.StagesStatus[0].Clusters) != 0 {
			t.Fatalf("the hub keeps ended run %s whole; the test wants husks", name)
		}
	}
	return &wholeReadsHub{Hub: h}
}

// The forge's rollback search reads the hub's runs as husks (without
// their clusters, which on a Kubernetes hub are read from the API server)
// and reads whole only the failed run and the successes of its placement
// it checks, most recent first, until one covers what the failed run
// changed: never a run of another placement, an older success, nor any
// run to find that a later run superseded the failed one. Handed husks
// where it needs clusters, it would find no target.
func TestRollbackSearchReadsWholeOnlyTheRunsItNeeds(t *testing.T) {
	ctx := context.Background()
	h := rollbackFleet(t,
		"web-1 web 1 True 10m m1=ok m2=ok",
		"web-2 web 2 True 20m m1=ok m2=ok",
		"web-3 web 3 True 25m m1=ok m2=failed", // the most recent success misses m2
		"api-9 api 0 True 28m m1=ok m2=ok",     // another placement, more recent
		"web-4 web 4 False 30m m1=ok m2=failed",
	)
	d := &Daemon{forge: &forgeSync{hub: h}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	failed, err := h.GetUpdateRunWithoutClusters(ctx, hub.Key{Name: "web-4"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.rollbackTarget(ctx, failed)
	if err != nil {
		t.Fatal(err)
	}
	if got.Index != "2" || got.From != "web-2" || !slices.Equal(got.Clusters, []string{"m1", "m2"}) {
		t.Errorf("target %+v; want snapshot 2 from web-2 on m1, m2", got)
	}
	if want := []string{"web-4", "web-3", "web-2"}; !slices.Equal(h.whole, want) {
		t.Errorf("runs read whole %q; want %q (the failed run, then the successes of web checked)", h.whole, want)
	}

	// A later run of the placement supersedes the failed one: that is
	// found from husks, nothing is read whole, nothing is proposed.
	h = rollbackFleet(t,
		"web-1 web 1 True 10m m1=ok m2=ok",
		"web-4 web 4 False 30m m1=ok m2=failed",
		"web-5 web 5 True 40m m1=ok m2=ok",
	)
	d.forge.hub = h
	var pushed bool
	if outcome, err := d.proposeRollback(ctx, nil, hub.Key{Name: "web-4"}, "", &pushed); err != nil || outcome != "" {
		t.Errorf("superseded: outcome %q, %v; want none", outcome, err)
	}
	if len(h.whole) != 0 {
		t.Errorf("superseded: runs read whole %q; want none", h.whole)
	}
}
