package hub

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// Loop is what the Git loop needs of a hub, besides the engine's Hub: what
// it feeds in (Desired: the fleet objects people write in Git, the
// workload resources they render to, the approvals they merge), where
// member drivers report (Delivery), and the end of every pass. What the
// loop reads back, the status written to Git, reaches it through the Store
// the hub was built with. reconciler/hub/embedded implements it with the
// state in memory and in the status tree; reconciler/hub/kube with the
// state on a Kubernetes API server.
type Loop interface {
	Hub
	Desired
	// Start brings the hub's state up before the engine runs (the
	// embedded hub restores it from its Store) and returns how many
	// objects it holds.
	Start(ctx context.Context) (int, error)
	// Commit ends a pass: it makes the pass's changes durable and then
	// performs the side effects they guard (deliveries to members).
	Commit(ctx context.Context) error
	// Pending is the number of deliveries and member changes still under
	// way; the fleet may progress without a person while it is not 0.
	Pending() int
	// Delivery is what member drivers report on their bindings to: the
	// hub's delivery controller (nil when the hub does not deliver).
	Delivery() Reporter
}

// Sealer is a Loop whose Commit comes in two steps, so passes may go on
// writing while a commit's writes travel: Seal, called while no pass
// writes, fixes the writes the commit carries and the side effects they
// guard; finish makes those writes durable and then performs those side
// effects, on the objects as they were sealed, never a later write's.
// finish must be called, once, before the next Seal or Commit.
type Sealer interface {
	Seal(ctx context.Context) (finish func(context.Context) error, err error)
}

// Desired is the fleet as people write it in Git. The Git loop plays an
// API server's clients: it checks admission itself, then applies what
// passes.
type Desired interface {
	// SetResources hands the hub the workload resources of the tracked
	// commit, which placements select from.
	SetResources(res []*unstructured.Unstructured)
	// Apply creates or updates a person's object (a member cluster,
	// placement, override, strategy or run) as `kubectl apply` does: spec, labels and
	// annotations are taken, the status is kept, a spec change raises the
	// generation.
	Apply(ctx context.Context, obj Object) error
	// Delete deletes a person's object of kind; a run's deletion is
	// finished by the engine. A missing object is no error.
	Delete(ctx context.Context, kind string, key Key) error
	// Annotate sets, or with an empty value removes, one of gitfleet's
	// notes on a run, placement, approval request or eviction (a refused change,
	// say), keeping its spec and generation.
	Annotate(ctx context.Context, kind string, key Key, name, value string) error
	// ListUpdateStrategies lists every strategy, so that those removed
	// from Git are deleted.
	ListUpdateStrategies(ctx context.Context) ([]*fleet.UpdateStrategy, error)
	// ListClusterResourceOverrides and ListResourceOverrides list every
	// override, so that those removed from Git are deleted.
	ListClusterResourceOverrides(ctx context.Context) ([]*fleet.ClusterResourceOverride, error)
	ListResourceOverrides(ctx context.Context) ([]*fleet.ResourceOverride, error)
	// ListDisruptionBudgets lists every disruption budget, so that those
	// removed from Git are deleted (evictions are listed by Evictions).
	ListDisruptionBudgets(ctx context.Context) ([]*fleet.ClusterResourcePlacementDisruptionBudget, error)
	// ApplyApprovalRequestStatus takes a person's change to an approval
	// request's conditions (an Approved condition merged in Git).
	ApplyApprovalRequestStatus(ctx context.Context, a *fleet.ApprovalRequest) error
}
