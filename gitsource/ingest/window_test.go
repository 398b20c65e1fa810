package ingest_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource/ingest"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/render"
)

// RolloutWindows in Git reach the hub, a change wakes the runs (an event),
// and one removed from Git leaves it.
func TestRolloutWindowsInGitReachTheHubAndLeaveWithTheirFile(t *testing.T) {
	ctx := context.Background()
	h := embedded.New(clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), embedded.NewMemoryStore())
	var events []hub.Event
	h.Subscribe(func(e hub.Event) {
		if e.Kind == hub.EventRolloutWindow {
			events = append(events, e)
		}
	})
	a := ingest.New(h, nil)
	w := &fleet.RolloutWindow{ObjectMeta: metav1.ObjectMeta{Name: "prod"},
		Spec: fleet.RolloutWindowSpec{TimeZone: "Europe/Berlin", Freezes: []fleet.Freeze{{Name: "holidays", Start: "2026-12-20", End: "2027-01-04"}}}}
	sources := map[render.ObjectRef]render.Source{{Group: fleet.GitfleetGroup, Kind: fleet.KindRolloutWindow, Name: "prod"}: {File: "prod.yaml"}}
	admit := func(c *render.Content) []string {
		t.Helper()
		if rejected, err := a.Admit(ctx, c); err != nil || len(rejected) > 0 {
			t.Fatalf("Admit: %v, rejected %v", err, rejected)
		}
		ws, err := h.ListRolloutWindows(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, w := range ws {
			names = append(names, w.Name+"/"+w.Spec.Freezes[0].End)
		}
		return names
	}
	if got := admit(&render.Content{RolloutWindows: []*fleet.RolloutWindow{w}, Sources: sources}); len(got) != 1 || got[0] != "prod/2027-01-04" {
		t.Fatalf("the hub holds %v, want prod", got)
	}
	admit(&render.Content{RolloutWindows: []*fleet.RolloutWindow{w}, Sources: sources})
	if len(events) != 1 {
		t.Errorf("%d window events after one change and one unchanged commit, want 1", len(events))
	}
	longer := w.DeepCopy()
	longer.Spec.Freezes[0].End = "2027-01-06"
	if got := admit(&render.Content{RolloutWindows: []*fleet.RolloutWindow{longer}, Sources: sources}); len(got) != 1 || got[0] != "prod/2027-01-06" {
		t.Fatalf("the hub holds %v, want the longer freeze", got)
	}
	if got := admit(&render.Content{}); len(got) != 0 {
		t.Fatalf("after its file was deleted the hub holds %v", got)
	}
	if len(events) != 3 {
		t.Errorf("%d window events, want 3 (create, change, delete)", len(events))
	}
}
