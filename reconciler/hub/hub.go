// Package hub defines what the engine reads from and writes to the hub: the
// seam between gitfleet's reconcilers and where fleet state lives. The
// embedded hub (reconciler/hub/embedded) keeps the state itself and persists it through
// the Git status tree; reconciler/hub/kube serves the same interfaces from a
// Kubernetes API server through client-go.
//
// Keys are types.NamespacedName. An empty namespace addresses the
// cluster-scoped family (ClusterResourcePlacement, ClusterStagedUpdateRun,
// ClusterResourceBinding, ...); a non-empty one the namespaced family
// (ResourcePlacement, StagedUpdateRun, ResourceBinding, ...). Every method
// returns copies: callers may mutate what they get and must Update to write.
package hub

import (
	"context"
	"errors"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// Key addresses an object; see the package comment for scope.
type Key = types.NamespacedName

// Object is a fleet object of api/v1beta1.
type Object interface {
	metav1.Object
	runtime.Object
}

// KindOf is the kind of a fleet object: its TypeMeta's, or, when the
// caller left that empty, the one the registry gives its Go type in its
// scope.
func KindOf(o Object) string {
	if k := o.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	k, _ := fleet.KindFor(o)
	return k.Kind
}

// The hubs return the API errors a Kubernetes API server returns
// (k8s.io/apimachinery/pkg/api/errors), so the engine tests an error from
// either hub alike, and a wrapped one too (apierrors sees through %w).

// NotFound is the API server's NotFound for an object of kind.
func NotFound(kind string, key Key) error {
	return apierrors.NewNotFound(groupResource(kind), key.Name)
}

// Conflict is the API server's Conflict for a write based on a stale
// resourceVersion: the caller should re-read and retry.
func Conflict(kind string, key Key) error {
	return apierrors.NewConflict(groupResource(kind), key.Name, errStale)
}

// errStale is the API server's reason for a Conflict (its storage
// package's OptimisticLockErrorMsg).
var errStale = errors.New("the object has been modified; please apply your changes to the latest version and try again")

// AlreadyExists is the API server's AlreadyExists for a Create of an
// existing object of kind.
func AlreadyExists(kind string, key Key) error {
	return apierrors.NewAlreadyExists(groupResource(kind), key.Name)
}

// groupResource is kind's resource in the registry; a kind the registry
// does not hold is named as it is, which only a bug produces.
func groupResource(kind string) schema.GroupResource {
	if k, ok := fleet.LookupKind(kind); ok {
		return k.GroupResource()
	}
	return schema.GroupResource{Resource: kind}
}

// IsNotFound is apierrors.IsNotFound.
func IsNotFound(err error) bool { return apierrors.IsNotFound(err) }

// IsConflict is apierrors.IsConflict: a stale resourceVersion.
func IsConflict(err error) bool { return apierrors.IsConflict(err) }

// IsAlreadyExists is apierrors.IsAlreadyExists.
func IsAlreadyExists(err error) bool { return apierrors.IsAlreadyExists(err) }

// Hub is everything the reconcilers need.
type Hub interface {
	Placements
	PolicySnapshots
	ResourceSnapshots
	Bindings
	MemberClusters
	Strategies
	UpdateRuns
	ApprovalRequests
	Evictions
}

// Placements reads ClusterResourcePlacements and ResourcePlacements.
type Placements interface {
	GetPlacement(ctx context.Context, key Key) (*fleet.Placement, error)
	ListPlacements(ctx context.Context) ([]*fleet.Placement, error)
	// UpdatePlacementStatus replaces the status of an existing placement;
	// on success the caller's placement carries the new resourceVersion.
	UpdatePlacementStatus(ctx context.Context, p *fleet.Placement) error
}

// PolicySnapshots reads and writes the scheduler's policy snapshots.
type PolicySnapshots interface {
	// ListPolicySnapshots returns every policy snapshot of the placement.
	ListPolicySnapshots(ctx context.Context, placement Key) ([]*fleet.PolicySnapshot, error)
	CreatePolicySnapshot(ctx context.Context, s *fleet.PolicySnapshot) error
	UpdatePolicySnapshot(ctx context.Context, s *fleet.PolicySnapshot) error
}

// ResourceSnapshots reads and writes resource snapshots.
type ResourceSnapshots interface {
	// ListResourceSnapshots returns every resource snapshot of the placement.
	ListResourceSnapshots(ctx context.Context, placement Key) ([]*fleet.ResourceSnapshot, error)
	CreateResourceSnapshot(ctx context.Context, s *fleet.ResourceSnapshot) error
	UpdateResourceSnapshot(ctx context.Context, s *fleet.ResourceSnapshot) error
	DeleteResourceSnapshot(ctx context.Context, key Key) error
	// SelectResources returns the hub resources the placement selects now,
	// sorted deterministically; the engine snapshots them for runs without
	// a resourceSnapshotIndex.
	SelectResources(ctx context.Context, p *fleet.Placement) ([]*unstructured.Unstructured, error)
}

// Bindings reads and writes the bindings of placements to clusters.
type Bindings interface {
	// ListBindings returns every binding of the placement, sorted by name.
	ListBindings(ctx context.Context, placement Key) ([]*fleet.Binding, error)
	GetBinding(ctx context.Context, key Key) (*fleet.Binding, error)
	CreateBinding(ctx context.Context, b *fleet.Binding) error
	// UpdateBinding writes the binding's object: labels, annotations,
	// finalizers and spec; the stored status is kept. A spec change raises
	// metadata.generation. Removing the last finalizer of a terminating
	// binding removes it. A stale resourceVersion is a Conflict. On success
	// the caller's binding carries the new resourceVersion and generation.
	UpdateBinding(ctx context.Context, b *fleet.Binding) error
	// UpdateBindingStatus replaces the binding's status (the status
	// subresource on an API server); everything else is kept as stored. A
	// stale resourceVersion is a Conflict. Writing spec and status are two
	// calls because they are two requests on an API server, each of which
	// may fail alone.
	UpdateBindingStatus(ctx context.Context, b *fleet.Binding) error
	// DeleteBinding starts the deletion: the binding gets a
	// deletionTimestamp and disappears once its resources are removed from
	// the member cluster.
	DeleteBinding(ctx context.Context, key Key) error
}

// ReadOnlyBindings is implemented by hubs that can list a placement's
// bindings without copying them: the returned bindings are the hub's own,
// shared with every other reader, and must not be modified (the read-only
// contract of controller-runtime's client.UnsafeDisableDeepCopy). Readers
// that only look — the placement status, metrics — list 10,000 bindings a
// pass; copying them all was most of what a pass cost.
type ReadOnlyBindings interface {
	ListBindingsReadOnly(ctx context.Context, placement Key) ([]*fleet.Binding, error)
}

// ListBindingsReadOnly lists the placement's bindings, sorted by name, for
// a caller that promises not to modify them: without copies on a hub that
// implements ReadOnlyBindings, through ListBindings on any other.
func ListBindingsReadOnly(ctx context.Context, h Bindings, placement Key) ([]*fleet.Binding, error) {
	if ro, ok := h.(ReadOnlyBindings); ok {
		return ro.ListBindingsReadOnly(ctx, placement)
	}
	return h.ListBindings(ctx, placement)
}

// ReadOnlyGetter is implemented by hubs that can hand out one stored
// binding or member cluster without copying it, for readers that promise
// not to modify it (ReadOnlyBindings' contract): delivery reads the binding
// and its member once per delivery and per member report, and copies what
// it writes anyway.
type ReadOnlyGetter interface {
	GetBindingReadOnly(ctx context.Context, key Key) (*fleet.Binding, error)
	GetMemberClusterReadOnly(ctx context.Context, name string) (*fleet.MemberCluster, error)
}

// GetBindingReadOnly gets a binding for a caller that promises not to
// modify it: without a copy on a hub that implements ReadOnlyGetter,
// through GetBinding on any other.
func GetBindingReadOnly(ctx context.Context, h Bindings, key Key) (*fleet.Binding, error) {
	if ro, ok := h.(ReadOnlyGetter); ok {
		return ro.GetBindingReadOnly(ctx, key)
	}
	return h.GetBinding(ctx, key)
}

// BindingFinalizers is implemented by hubs that can add a finalizer to a
// stored binding without copying all of it: delivery guards every binding
// it delivers with the work-cleanup finalizer, 10,000 a run, and a full
// copy of each, twice (read, then write), was most of what guarding cost.
type BindingFinalizers interface {
	// AddBindingFinalizer adds f to the finalizers of the binding at key
	// unless it holds f already or is terminating (an API server refuses
	// new finalizers then); nothing else changes. It returns the binding
	// as stored after, on ReadOnlyBindings' terms: the caller must not
	// modify it.
	AddBindingFinalizer(ctx context.Context, key Key, f string) (*fleet.Binding, error)
}

// AddBindingFinalizer adds f to the binding at key as
// BindingFinalizers.AddBindingFinalizer does: in one call on a hub that
// implements it, else read, UpdateBinding, and again on a Conflict. The
// binding returned must not be modified.
func AddBindingFinalizer(ctx context.Context, h Bindings, key Key, f string) (*fleet.Binding, error) {
	if bf, ok := h.(BindingFinalizers); ok {
		return bf.AddBindingFinalizer(ctx, key, f)
	}
	var b *fleet.Binding
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		if b, err = h.GetBinding(ctx, key); err != nil {
			return err
		}
		if b.DeletionTimestamp != nil || slices.Contains(b.Finalizers, f) {
			return nil
		}
		b.Finalizers = append(b.Finalizers, f)
		return h.UpdateBinding(ctx, b)
	})
	return b, err
}

// BindingStatusHandover is implemented by hubs that can store a binding's
// new status without copying it, for a writer that built the status for
// this write alone (delivery's member reports, member.MergeReport's fresh
// copy): at 10,000 clusters the copy UpdateBindingStatus makes of every
// report was a tenth of what a report cost.
type BindingStatusHandover interface {
	// HandOverBindingStatus is UpdateBindingStatus, except that b.Status
	// (its slices, maps and pointers) becomes the hub's own: the caller
	// hands it over and must neither modify nor keep it after the call,
	// whether the call succeeds or not. b's resourceVersion is updated as
	// UpdateBindingStatus updates it.
	HandOverBindingStatus(ctx context.Context, b *fleet.Binding) error
}

// HandOverBindingStatus writes b's status, handing it over to a hub that
// implements BindingStatusHandover (the caller must not modify or keep
// b.Status after), through UpdateBindingStatus on any other.
func HandOverBindingStatus(ctx context.Context, h Bindings, b *fleet.Binding) error {
	if o, ok := h.(BindingStatusHandover); ok {
		return o.HandOverBindingStatus(ctx, b)
	}
	return h.UpdateBindingStatus(ctx, b)
}

// ReadOnlyResourceSnapshots is implemented by hubs that can list a
// placement's resource snapshots without copying them, for readers that
// promise not to modify them (ReadOnlyBindings' contract): delivery reads
// a snapshot group, up to megabytes, once per binding it delivers.
type ReadOnlyResourceSnapshots interface {
	ListResourceSnapshotsReadOnly(ctx context.Context, placement Key) ([]*fleet.ResourceSnapshot, error)
}

// ListResourceSnapshotsReadOnly lists the placement's resource snapshots
// for a caller that promises not to modify them: without copies on a hub
// that implements ReadOnlyResourceSnapshots, through ListResourceSnapshots
// on any other.
func ListResourceSnapshotsReadOnly(ctx context.Context, h ResourceSnapshots, placement Key) ([]*fleet.ResourceSnapshot, error) {
	if ro, ok := h.(ReadOnlyResourceSnapshots); ok {
		return ro.ListResourceSnapshotsReadOnly(ctx, placement)
	}
	return h.ListResourceSnapshots(ctx, placement)
}

// MemberClusters reads the fleet's clusters.
type MemberClusters interface {
	ListMemberClusters(ctx context.Context) ([]*fleet.MemberCluster, error)
}

// ReadOnlyMemberClusters is implemented by hubs that can list the member
// clusters without copying them, on ReadOnlyBindings' terms: every pass of
// a run places its clusters in stages by the labels of every member, and
// copying 1,000 members a pass was a tenth of what serve spent on 100
// concurrent runs.
type ReadOnlyMemberClusters interface {
	ListMemberClustersReadOnly(ctx context.Context) ([]*fleet.MemberCluster, error)
}

// ListMemberClustersReadOnly lists the member clusters for a caller that
// promises not to modify them: without copies on a hub that implements
// ReadOnlyMemberClusters, through ListMemberClusters on any other.
func ListMemberClustersReadOnly(ctx context.Context, h MemberClusters) ([]*fleet.MemberCluster, error) {
	if ro, ok := h.(ReadOnlyMemberClusters); ok {
		return ro.ListMemberClustersReadOnly(ctx)
	}
	return h.ListMemberClusters(ctx)
}

// Strategies reads staged update strategies.
type Strategies interface {
	GetUpdateStrategy(ctx context.Context, key Key) (*fleet.UpdateStrategy, error)
}

// UpdateRuns reads runs and writes their status.
type UpdateRuns interface {
	GetUpdateRun(ctx context.Context, key Key) (*fleet.UpdateRun, error)
	ListUpdateRuns(ctx context.Context) ([]*fleet.UpdateRun, error)
	// GetUpdateRunWithoutClusters and ListUpdateRunsWithoutClusters read
	// runs for their metadata, spec and conditions: a run that has ended
	// may come as the hub keeps it, a husk without the clusters of its
	// stages, which GetUpdateRun reads whole (the embedded hub unpacks
	// them; a Kubernetes hub reads the run from its API server, 400 KB at
	// 1,000 clusters). Readers of every run (admission at each sync, the
	// controller's start, the forge's rollback search) use these.
	GetUpdateRunWithoutClusters(ctx context.Context, key Key) (*fleet.UpdateRun, error)
	ListUpdateRunsWithoutClusters(ctx context.Context) ([]*fleet.UpdateRun, error)
	// UpdateUpdateRunStatus replaces the status of a run (the status
	// subresource on an API server); spec and metadata are kept as stored.
	// A stale resourceVersion is a Conflict; on success the caller's run
	// carries the new resourceVersion. A hub may write the status behind
	// the caller (reconciler/hub/kube does: the latest status handed over is written,
	// reads show it at once, a Conflict found later wakes the run), so a
	// run's status may trail its bindings, never lead them: the engine
	// writes bindings first and reads a started or finished cluster back
	// from its binding after a crash, as KubeFleet does.
	UpdateUpdateRunStatus(ctx context.Context, r *fleet.UpdateRun) error
	// UpdateUpdateRunFinalizers replaces the finalizers of a run, and
	// nothing else; removing the last one of a terminating run removes it.
	// A stale resourceVersion is a Conflict; on success the caller's run
	// carries the new resourceVersion.
	UpdateUpdateRunFinalizers(ctx context.Context, r *fleet.UpdateRun) error
	// RemoveUpdateRun finishes the deletion of a run whose deletion the
	// engine has processed (approval requests deleted, metrics dropped).
	RemoveUpdateRun(ctx context.Context, key Key) error
}

// ApprovalRequests reads and writes approval requests.
type ApprovalRequests interface {
	GetApprovalRequest(ctx context.Context, key Key) (*fleet.ApprovalRequest, error)
	// ListApprovalRequests lists the requests of a namespace ("" for the
	// cluster-scoped family) carrying the given labels.
	ListApprovalRequests(ctx context.Context, namespace string, labels map[string]string) ([]*fleet.ApprovalRequest, error)
	CreateApprovalRequest(ctx context.Context, a *fleet.ApprovalRequest) error
	UpdateApprovalRequestStatus(ctx context.Context, a *fleet.ApprovalRequest) error
	DeleteApprovalRequest(ctx context.Context, key Key) error
}

// Evictions reads ClusterResourcePlacementEvictions and
// ClusterResourcePlacementDisruptionBudgets (cluster-scoped: keys have no
// namespace) and writes evictions' status. People create both; the engine
// only writes an eviction's conditions, once (reconciler/eviction).
type Evictions interface {
	GetEviction(ctx context.Context, key Key) (*fleet.ClusterResourcePlacementEviction, error)
	ListEvictions(ctx context.Context) ([]*fleet.ClusterResourcePlacementEviction, error)
	// UpdateEvictionStatus replaces the status of an eviction (the status
	// subresource on an API server). A stale resourceVersion is a
	// Conflict; on success the caller's eviction carries the new one.
	UpdateEvictionStatus(ctx context.Context, e *fleet.ClusterResourcePlacementEviction) error
	// GetDisruptionBudget reads the budget of the placement of that name.
	GetDisruptionBudget(ctx context.Context, key Key) (*fleet.ClusterResourcePlacementDisruptionBudget, error)
}

// OverrideSnapshots reads and writes ClusterResourceOverrideSnapshots and
// ResourceOverrideSnapshots. It is optional: the Git loop records override
// snapshots, and runs freeze and deliver them, only on a hub that implements
// it (the embedded hub; reconciler/hub/kube does not yet, so runs there carry none).
// Override snapshots are written whole by one writer, the commit recorder,
// so Put creates or replaces without a resourceVersion check.
type OverrideSnapshots interface {
	ListClusterResourceOverrideSnapshots(ctx context.Context) ([]*fleet.ClusterResourceOverrideSnapshot, error)
	ListResourceOverrideSnapshots(ctx context.Context) ([]*fleet.ResourceOverrideSnapshot, error)
	// GetClusterResourceOverrideSnapshot and GetResourceOverrideSnapshot
	// read the one a binding froze, for delivery.
	GetClusterResourceOverrideSnapshot(ctx context.Context, name string) (*fleet.ClusterResourceOverrideSnapshot, error)
	GetResourceOverrideSnapshot(ctx context.Context, key Key) (*fleet.ResourceOverrideSnapshot, error)
	PutClusterResourceOverrideSnapshot(ctx context.Context, s *fleet.ClusterResourceOverrideSnapshot) error
	PutResourceOverrideSnapshot(ctx context.Context, s *fleet.ResourceOverrideSnapshot) error
	DeleteClusterResourceOverrideSnapshot(ctx context.Context, key Key) error
	DeleteResourceOverrideSnapshot(ctx context.Context, key Key) error
}

// Revisioner is implemented by hubs that can tell cheaply whether anything a
// run's validation reads has changed: placements, policy snapshots, member
// clusters, and the set of bindings with their states (not their status).
// The engine uses it to skip re-deriving the plan when nothing changed, so a
// pass costs what the active stage costs, not what the fleet costs.
type Revisioner interface {
	PlanRevision() uint64
}

// EventKind names what changed.
type EventKind string

const (
	EventBinding          EventKind = "Binding"
	EventApprovalRequest  EventKind = "ApprovalRequest"
	EventUpdateRun        EventKind = "UpdateRun"
	EventPlacement        EventKind = "Placement"
	EventMemberCluster    EventKind = "MemberCluster"
	EventResourceSnapshot EventKind = "ResourceSnapshot"
	EventPolicySnapshot   EventKind = "PolicySnapshot"
	EventEviction         EventKind = "Eviction"
)

// Event tells a subscriber that an object changed. Placement is set for
// bindings and snapshots; Run for approval requests (their target run).
type Event struct {
	Kind      EventKind
	Key       Key
	Placement Key
	Run       Key
}

// Notifier is implemented by hubs that push change events, so the engine
// reacts to a cluster becoming available at once (deliberate difference 1)
// instead of on its next poll.
type Notifier interface {
	Subscribe(func(Event))
}

// KeyString names an object as kubectl does: "name" for a cluster-scoped
// object, "namespace/name" otherwise (Key.String gives "/name" for the
// former, which logs should not show).
func KeyString(k Key) string {
	if k.Namespace == "" {
		return k.Name
	}
	return k.Namespace + "/" + k.Name
}

// ReplaceApprovalRequestStatus writes a's status onto the stored request
// a names, at its current resourceVersion: a person's conditions, as
// both hubs take them from Git (a's own resourceVersion, read from a file,
// means nothing to the hub).
func ReplaceApprovalRequestStatus(ctx context.Context, h ApprovalRequests, a *fleet.ApprovalRequest) error {
	cur, err := h.GetApprovalRequest(ctx, Key{Namespace: a.Namespace, Name: a.Name})
	if err != nil {
		return err
	}
	cur.Status = *a.Status.DeepCopy()
	return h.UpdateApprovalRequestStatus(ctx, cur)
}

// MemberClusterStatuses is implemented by hubs that store what member
// clusters report (both do): the property collector writes a member's
// properties and resource usage through it, as KubeFleet's member agent
// writes the MemberCluster status. A stale resourceVersion is a Conflict.
type MemberClusterStatuses interface {
	UpdateMemberClusterStatus(ctx context.Context, m *fleet.MemberCluster) error
}
