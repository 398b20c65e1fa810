package hub

import (
	"context"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// RolloutWindows reads and takes people's RolloutWindows (gitfleet's,
// cluster-scoped: keys have no namespace). The engine holds a cluster
// whose stage or member names a window while it is closed; a hub that
// does not implement it holds every such cluster, as a window it cannot
// find is never open.
type RolloutWindows interface {
	ListRolloutWindows(ctx context.Context) ([]*fleet.RolloutWindow, error)
}

// EventRolloutWindow says a RolloutWindow changed: every run re-checks
// what its clusters wait for.
const EventRolloutWindow EventKind = "RolloutWindow"
