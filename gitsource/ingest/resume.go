package ingest

import (
	"context"

	"github.com/go-git/go-git/v5/plumbing"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// RecordedCommits are the commits the hub's resource snapshots were
// recorded from (their CommitAnnotation): those a restart, or a
// simulation from a recorded state, has ingested already.
func RecordedCommits(ctx context.Context, h hub.Hub) (map[string]bool, error) {
	recorded := map[string]bool{}
	placements, err := h.ListPlacements(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range placements {
		snaps, err := h.ListResourceSnapshots(ctx, hub.Key{Namespace: p.Namespace, Name: p.Name})
		if err != nil {
			return nil, err
		}
		for _, s := range snaps {
			if c := s.Annotations[fleet.CommitAnnotation]; c != "" {
				recorded[c] = true
			}
		}
	}
	return recorded, nil
}

// ResumePoint is the index in history (first-parent commits, oldest first)
// of the newest commit a snapshot was recorded from, -1 when none was:
// the commits after it are ingested again. That is safe because recording
// a commit whose resources did not change creates nothing.
func ResumePoint(history []plumbing.Hash, recorded map[string]bool) int {
	for i := len(history) - 1; i >= 0; i-- {
		if recorded[history[i].String()] {
			return i
		}
	}
	return -1
}
