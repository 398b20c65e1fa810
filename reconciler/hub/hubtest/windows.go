package hubtest

import (
	"sync"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// rolloutWindowsAreKept: a person's RolloutWindow reads back, a change
// (and only a change) is an event, and one deleted is gone. Windows are
// cluster-scoped only.
func (s *suite) rolloutWindowsAreKept() {
	if s.ns != "" {
		return
	}
	wh, ok := s.h.(hub.RolloutWindows)
	if !ok {
		s.t.Fatal("the hub does not keep RolloutWindows")
	}
	var mu sync.Mutex
	events := 0
	s.h.(hub.Notifier).Subscribe(func(e hub.Event) {
		if e.Kind == hub.EventRolloutWindow && e.Key.Name == "prod" {
			mu.Lock()
			events++
			mu.Unlock()
		}
	})
	seen := func() int {
		mu.Lock()
		defer mu.Unlock()
		return events
	}
	held := func() []*fleet.RolloutWindow {
		ws, err := wh.ListRolloutWindows(s.ctx)
		s.must(err)
		return ws
	}
	w := &fleet.RolloutWindow{ObjectMeta: s.meta("prod", nil), Spec: fleet.RolloutWindowSpec{TimeZone: "Europe/Berlin",
		Windows: []fleet.WeeklyWindow{{Days: []string{"Mon"}, Start: "09:00", End: "17:00"}},
		Freezes: []fleet.Freeze{{Name: "holidays", Start: "2026-12-20", End: "2027-01-04", AllowedRuns: []string{"hotfix"}}}}}
	s.s.Apply(s.t, w)
	ws := held()
	if len(ws) != 1 || ws[0].Name != "prod" || ws[0].Spec.TimeZone != "Europe/Berlin" || ws[0].Spec.Freezes[0].AllowedRuns[0] != "hotfix" {
		s.t.Fatalf("the hub holds %v; want prod as applied", ws)
	}
	ws[0].Spec.TimeZone = "UTC"
	if held()[0].Spec.TimeZone != "Europe/Berlin" {
		s.t.Error("a listed window is not a copy")
	}
	s.s.Apply(s.t, w)
	if n := seen(); n != 1 {
		s.t.Errorf("%d events after a create and an unchanged apply; want 1", n)
	}
	longer := w.DeepCopy()
	longer.Spec.Freezes[0].End = "2027-01-06"
	s.s.Apply(s.t, longer)
	if got := held(); len(got) != 1 || got[0].Spec.Freezes[0].End != "2027-01-06" {
		s.t.Errorf("after a change the hub holds %v", got)
	}
	s.must(s.h.(hub.Desired).Delete(s.ctx, fleet.KindRolloutWindow, s.key("prod")))
	if got := held(); len(got) != 0 {
		s.t.Errorf("after the delete the hub holds %v", got)
	}
	if n := seen(); n != 3 {
		s.t.Errorf("%d events after create, change and delete; want 3", n)
	}
}
