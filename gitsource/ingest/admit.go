package ingest

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/admission"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/render"
)

// admitter feeds the fleet objects of the tracked branch's tip into the hub,
// playing the API server's part: a spec change raises the generation,
// updates the API server would refuse are refused with its message, objects
// that failed to render are withheld (kept as they were), deleted files
// delete their objects.
type admitter struct {
	hub Hub
	// sources remembers where each object came from in the last render, so
	// a file that stops rendering withholds its objects instead of
	// deleting them.
	sources map[render.ObjectRef]render.Source
	// refusedStrategies are the strategies of the last render that were
	// refused, with their first error (StrategyRefusal), read by the
	// update-run engine through RefusedStrategy while runs initialize.
	refusedStrategies atomic.Pointer[map[hub.Key]string]
}

func refOf(group, kind, namespace, name string) render.ObjectRef {
	return render.ObjectRef{Group: group, Kind: kind, Namespace: namespace, Name: name}
}

// fleetObject is a fleet object as render and the hub hand it out.
type fleetObject = hub.Object

func keyOf(o metav1.Object) hub.Key { return hub.Key{Namespace: o.GetNamespace(), Name: o.GetName()} }

func refOfObject(group string, o fleetObject) render.ObjectRef {
	return refOf(group, hub.KindOf(o), o.GetNamespace(), o.GetName())
}

// newAdmitter returns an admitter feeding h.
func newAdmitter(h Hub) *admitter { return &admitter{hub: h} }

// kind is how one family of fleet objects is admitted: read, checked as
// an update (nil: any update is fine), noted on (nil: never), listed.
// Applying and deleting go through hub.Desired.
type kind[T fleetObject] struct {
	group    string
	get      func(context.Context, hub.Key) (T, error)
	validate func(old, cur T) field.ErrorList
	noted    bool
	list     func(context.Context) ([]T, error)
	// fromGit, when set, says which stored objects Git owns: only those
	// are deleted when their file is gone (nil: all of them).
	fromGit func(T) bool
}

// admitKind applies every object of a family from Git, refusing updates
// the API server would refuse (noted on the stored object), and deletes
// stored objects that are gone from Git unless their file failed to render.
func admitKind[T fleetObject](ctx context.Context, h hub.Desired, c *render.Content, objs []T, k kind[T], withheld func(render.ObjectRef) bool) ([]string, error) {
	var rejected []string
	seen := map[hub.Key]bool{}
	for _, o := range objs {
		key := keyOf(o)
		seen[key] = true
		kindName := hub.KindOf(o)
		if k.validate != nil {
			if old, err := k.get(ctx, key); err == nil {
				if errs := k.validate(old, o); len(errs) > 0 {
					msg := rejection(c, refOfObject(k.group, o), errs.ToAggregate().Error())
					if err := h.Annotate(ctx, kindName, key, fleet.RejectedChangeAnnotation, msg); err != nil {
						return nil, err
					}
					rejected = append(rejected, msg)
					continue
				}
			}
		}
		if err := h.Apply(ctx, o); err != nil {
			if !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) {
				return nil, err
			}
			// A Kubernetes hub's API server refused what gitfleet's own
			// validation let through: the object keeps its last accepted
			// spec, as with any refused change, and the sync goes on.
			msg := rejection(c, refOfObject(k.group, o), err.Error())
			if k.noted {
				if err := h.Annotate(ctx, kindName, key, fleet.RejectedChangeAnnotation, msg); err != nil && !hub.IsNotFound(err) {
					return nil, err
				}
			}
			rejected = append(rejected, msg)
			continue
		}
		if k.noted {
			if err := h.Annotate(ctx, kindName, key, fleet.RejectedChangeAnnotation, ""); err != nil {
				return nil, err
			}
		}
	}
	stored, err := k.list(ctx)
	if err != nil {
		return nil, err
	}
	for _, o := range stored {
		if !seen[keyOf(o)] && !withheld(refOfObject(k.group, o)) && (k.fromGit == nil || k.fromGit(o)) {
			if err := h.Delete(ctx, hub.KindOf(o), keyOf(o)); err != nil {
				return nil, err
			}
		}
	}
	return rejected, nil
}

// gitfleetManager is the field manager of what the Git loop applies to a
// Kubernetes hub (reconciler/hub/kube's FieldManager).
const gitfleetManager = "gitfleet"

// appliedFromGit reports whether the Git loop applied o: on the embedded
// hub every object (it records no managers), on a Kubernetes hub those
// gitfleet's field manager applied. An eviction a person created with
// kubectl there is theirs: one-off, it is in no file, and the loop does
// not delete it (KubeFleet keeps executed evictions for auditing).
func appliedFromGit[T fleetObject](o T) bool {
	managers := o.GetManagedFields()
	if len(managers) == 0 {
		return true
	}
	for _, m := range managers {
		if m.Manager == gitfleetManager && m.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}

// update is admission.Update for one family: what both hubs refuse when
// an object replaces the stored one.
func update[T fleetObject](old, cur T) field.ErrorList { return admission.Update(old, cur) }

// Admit applies content and returns the rejected changes, one line each.
func (a *admitter) Admit(ctx context.Context, c *render.Content) ([]string, error) {
	a.noteRefusedStrategies(c)
	withheld := func(ref render.ObjectRef) bool {
		return c.Withheld(ref, a.sources[ref].File)
	}
	h := a.hub
	h.SetResources(c.Resources)

	var rejected []string
	collect := func(r []string, err error) error {
		rejected = append(rejected, r...)
		return err
	}
	if err := collect(admitKind(ctx, h, c, c.Members, kind[*fleet.MemberCluster]{
		group: fleet.ClusterGroup, list: h.ListMemberClusters,
	}, withheld)); err != nil {
		return nil, err
	}
	if err := collect(admitKind(ctx, h, c, c.Placements, kind[*fleet.Placement]{
		group: fleet.PlacementGroup, get: h.GetPlacement, validate: update[*fleet.Placement],
		noted: true, list: h.ListPlacements,
	}, withheld)); err != nil {
		return nil, err
	}
	if err := collect(admitKind(ctx, h, c, c.ClusterResourceOverrides, kind[*fleet.ClusterResourceOverride]{
		group: fleet.PlacementGroup, list: h.ListClusterResourceOverrides,
	}, withheld)); err != nil {
		return nil, err
	}
	if err := collect(admitKind(ctx, h, c, c.ResourceOverrides, kind[*fleet.ResourceOverride]{
		group: fleet.PlacementGroup, list: h.ListResourceOverrides,
	}, withheld)); err != nil {
		return nil, err
	}
	if err := collect(admitKind(ctx, h, c, c.DisruptionBudgets, kind[*fleet.ClusterResourcePlacementDisruptionBudget]{
		group: fleet.PlacementGroup, list: h.ListDisruptionBudgets,
	}, withheld)); err != nil {
		return nil, err
	}
	if wh, ok := h.(hub.RolloutWindows); ok {
		if err := collect(admitKind(ctx, h, c, c.RolloutWindows, kind[*fleet.RolloutWindow]{
			group: fleet.GitfleetGroup, list: wh.ListRolloutWindows,
		}, withheld)); err != nil {
			return nil, err
		}
	}
	if err := collect(admitKind(ctx, h, c, c.Strategies, kind[*fleet.UpdateStrategy]{
		group: fleet.PlacementGroup, get: h.GetUpdateStrategy, validate: update[*fleet.UpdateStrategy],
		list: h.ListUpdateStrategies,
	}, withheld)); err != nil {
		return nil, err
	}
	// Runs for their metadata and spec, which is all admission reads:
	// without the clusters of finished runs, so admitting a commit costs
	// the same after a hundred finished runs as after one.
	runs := kind[*fleet.UpdateRun]{
		group: fleet.PlacementGroup, get: h.GetUpdateRunWithoutClusters, validate: update[*fleet.UpdateRun],
		noted: true, list: h.ListUpdateRunsWithoutClusters,
	}
	if err := collect(admitKind(ctx, h, c, c.Runs, runs, withheld)); err != nil {
		return nil, err
	}

	// Evictions last: one pushed with its placement finds the placement.
	if err := collect(admitKind(ctx, h, c, c.Evictions, kind[*fleet.ClusterResourcePlacementEviction]{
		group: fleet.PlacementGroup, get: h.GetEviction, validate: fleet.ValidateEvictionUpdate,
		noted: true, list: h.ListEvictions, fromGit: appliedFromGit[*fleet.ClusterResourcePlacementEviction],
	}, withheld)); err != nil {
		return nil, err
	}

	notes, err := a.noteWithheld(ctx, c)
	if err != nil {
		return nil, err
	}
	rejected = append(rejected, notes...)
	a.sources = c.Sources
	return rejected, nil
}

// noteRefusedStrategies keeps the first error of every strategy c refused,
// before the runs that name it are admitted.
func (a *admitter) noteRefusedStrategies(c *render.Content) {
	refused := map[hub.Key]string{}
	for _, e := range c.Errors {
		key := hub.Key{Namespace: e.Namespace, Name: e.Name}
		if _, seen := refused[key]; !seen && e.Name != "" && e.Kind == fleet.UpdateStrategyKind(e.Namespace) {
			refused[key] = StrategyRefusal(e)
		}
	}
	a.refusedStrategies.Store(&refused)
}

// RefusedStrategy says why the strategy at key was refused in the last
// render, or "" (updaterun.Reconciler.RefusedStrategy): a run naming a
// strategy that never rendered then fails as "strategy <name> is invalid:
// <why>", not as one that does not exist.
func (a *admitter) RefusedStrategy(key hub.Key) string {
	if m := a.refusedStrategies.Load(); m != nil {
		return (*m)[key]
	}
	return ""
}

// StrategyRefusal words a strategy's manifest error for the runs that name
// it: "<field>: <message> (<file>:<line>)".
func StrategyRefusal(e render.ManifestError) string {
	why := e.Message
	if e.Field != "" {
		why = e.Field + ": " + why
	}
	at := e.File
	if e.Line > 0 {
		at += fmt.Sprintf(":%d", e.Line)
	}
	return why + " (" + at + ")"
}

// noteWithheld tells, on the status file of a run or placement whose file
// no longer renders, why its last good version is still the one in use —
// the person who pushed the typo reads it where they look for progress.
func (a *admitter) noteWithheld(ctx context.Context, c *render.Content) ([]string, error) {
	var notes []string
	for _, e := range c.Errors {
		if e.Name == "" {
			continue
		}
		key := hub.Key{Namespace: e.Namespace, Name: e.Name}
		msg := fmt.Sprintf("the manifest no longer renders (%s); the last accepted spec is still in use", e.Error())
		var err error
		switch e.Kind {
		case fleet.KindClusterStagedUpdateRun, fleet.KindStagedUpdateRun:
			_, err = a.hub.GetUpdateRun(ctx, key)
		case fleet.KindClusterResourcePlacement, fleet.KindResourcePlacement:
			_, err = a.hub.GetPlacement(ctx, key)
		default:
			continue
		}
		if err != nil {
			continue
		}
		if err := a.hub.Annotate(ctx, e.Kind, key, fleet.RejectedChangeAnnotation, msg); err != nil {
			return notes, err
		}
		notes = append(notes, msg)
	}
	return notes, nil
}

// rejection words a refused update the way a person reads it in the status
// file: which file, what was refused, what keeps running.
func rejection(c *render.Content, ref render.ObjectRef, why string) string {
	file := c.Sources[ref].File
	if file == "" {
		file = "the repository"
	}
	why = strings.TrimSpace(why)
	return fmt.Sprintf("the change to %s %s in %s was rejected: %s; the last accepted spec is still in use", ref.Kind, ref.Name, file, why)
}
