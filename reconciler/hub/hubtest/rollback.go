package hubtest

import (
	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// rejectionsAndRollbackNotesAreKept: a placement's rejected snapshots
// (gitfleet.io/rejected-snapshot-<index>, which the engine reads at
// initialization) come back from the hub as Git wrote them, adding and
// lifting one raises no generation; a failed run's rollback note is kept.
func (s *suite) rejectionsAndRollbackNotesAreKept(d hub.Desired) {
	p := s.placement("app")
	s.must(d.Apply(s.ctx, p))
	p.Annotations = map[string]string{fleet.RejectedSnapshotAnnotation("1"): "crash loop in canary"}
	s.must(d.Apply(s.ctx, p))
	got, err := s.h.GetPlacement(s.ctx, s.key("app"))
	s.must(err)
	if r := fleet.RejectedSnapshots(got.Annotations); r["1"] != "crash loop in canary" || len(r) != 1 || got.Generation != 1 {
		s.t.Errorf("placement after a rejection from Git: rejected %v, generation %d; want 1 rejected, generation 1", r, got.Generation)
	}
	p.Annotations = nil
	s.must(d.Apply(s.ctx, p))
	got, err = s.h.GetPlacement(s.ctx, s.key("app"))
	s.must(err)
	if r := fleet.RejectedSnapshots(got.Annotations); len(r) != 0 {
		s.t.Errorf("placement after the rejection was lifted: rejected %v", r)
	}

	s.must(d.Apply(s.ctx, s.run("run", "app")))
	s.must(d.Annotate(s.ctx, fleet.UpdateRunKind(s.ns), s.key("run"), fleet.RollbackAnnotation, "none: nothing succeeded before"))
	if r := s.getRun("run"); r.Annotations[fleet.RollbackAnnotation] != "none: nothing succeeded before" || r.Generation != 1 {
		s.t.Errorf("run after its rollback note: annotations %v, generation %d", r.Annotations, r.Generation)
	}
}
