package updaterun

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// plan is what a pass derived about the fleet: the re-derived status
// (apply strategy, policy index and count, stages) and where the bindings
// of the stage clusters are.
type plan struct {
	derived  *fleet.UpdateRunStatus
	bindings *bindingLookup
	// toDelete are the to-be-deleted bindings; toDeleteClusters their
	// target clusters. A cached plan has only the clusters.
	toDelete         []*fleet.Binding
	toDeleteClusters []string
	cached           bool
	// memberWindows are the RolloutWindows the members name (window.go).
	memberWindows map[string][]string
}

func newPlan(p *pass, derived *fleet.UpdateRunStatus, selected, toDelete []*fleet.Binding) *plan {
	l := &bindingLookup{h: p.r.Hub, namespace: p.run.Namespace,
		objs: make(map[string]*fleet.Binding, len(selected)), names: make(map[string]string, len(selected))}
	for _, b := range selected {
		l.objs[b.Spec.TargetCluster] = b
		l.names[b.Spec.TargetCluster] = b.Name
	}
	pl := &plan{derived: derived, bindings: l, toDelete: toDelete, memberWindows: p.memberWindows}
	for _, b := range toDelete {
		pl.toDeleteClusters = append(pl.toDeleteClusters, b.Spec.TargetCluster)
	}
	return pl
}

// bindingLookup finds the selected binding of a stage cluster: in the list
// the plan was derived from, or — for a cached plan — by name in the hub, so
// a pass reads only the bindings of the clusters it looks at.
type bindingLookup struct {
	h         hub.Hub
	namespace string
	objs      map[string]*fleet.Binding // nil for a cached plan
	names     map[string]string
}

// errPlanChanged is a retriable error: the fleet changed under a cached
// plan; the next pass re-derives it.
var errPlanChanged = fmt.Errorf("the placement's bindings changed during the pass, re-deriving the plan")

// get returns the binding of cluster, or nil when the cluster has no
// selected binding.
func (l *bindingLookup) get(ctx context.Context, cluster string) (*fleet.Binding, error) {
	if l.objs != nil {
		return l.objs[cluster], nil
	}
	name, ok := l.names[cluster]
	if !ok {
		return nil, nil
	}
	b, err := l.h.GetBinding(ctx, hub.Key{Namespace: l.namespace, Name: name})
	if hub.IsNotFound(err) {
		return nil, errPlanChanged
	}
	if err != nil {
		return nil, fmt.Errorf("reading binding %s: %w", name, err)
	}
	return b, nil
}

// planCache keeps each run's last derived plan with the hub's plan revision
// it was derived at. While the revision is unchanged — nothing a plan is
// derived from (placements, policy snapshots, member clusters, bindings'
// states) changed — validation reuses it instead of listing the fleet, so a
// pass costs what the active stage costs.
type planCache struct {
	mu      sync.Mutex
	entries map[hub.Key]*planEntry
}

type planEntry struct {
	revision  uint64
	placement string
	strategy  *fleet.UpdateStrategySpec
	plan      *plan
}

func (c *planCache) forget(k hub.Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, k)
}

// store remembers a freshly derived plan, at the revision read when the
// pass started (a change during the derivation makes the next pass miss).
func (c *planCache) store(p *pass, pl *plan) {
	if !p.revisioner {
		return
	}
	names := make(map[string]string, len(pl.bindings.names))
	for k, v := range pl.bindings.names {
		names[k] = v
	}
	cached := &plan{
		derived:          pl.derived,
		bindings:         &bindingLookup{h: pl.bindings.h, namespace: pl.bindings.namespace, names: names},
		toDeleteClusters: pl.toDeleteClusters,
		cached:           true,
		memberWindows:    pl.memberWindows,
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[hub.Key]*planEntry{}
	}
	c.entries[p.key()] = &planEntry{
		revision:  p.planRevision,
		placement: p.run.Spec.PlacementName,
		strategy:  p.run.Status.StagedUpdateStrategySnapshot.DeepCopy(),
		plan:      cached,
	}
}

// lookup returns the cached plan of the run when it is still current.
func (c *planCache) lookup(p *pass) *plan {
	if !p.revisioner {
		return nil
	}
	c.mu.Lock()
	e := c.entries[p.key()]
	c.mu.Unlock()
	if e == nil || e.revision != p.planRevision || e.placement != p.run.Spec.PlacementName ||
		!equality.Semantic.DeepEqual(e.strategy, p.run.Status.StagedUpdateStrategySnapshot) {
		return nil
	}
	return e.plan
}

// keepPlan carries the run's cached plan over the engine's own binding
// writes: when the plan revision moved by exactly the number of state
// changes this pass made (Scheduled→Bound, which do not change what the
// plan says), nobody else changed the fleet and the plan is still current.
func (p *pass) keepPlan() {
	if !p.revisioner {
		return
	}
	c := &p.r.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[p.key()]
	if e != nil && p.finished() {
		// A finished run never reads its plan again (it ignores state
		// changes); keeping it would hold every finished run's stages.
		delete(c.entries, p.key())
		return
	}
	if e == nil || e.revision != p.planRevision {
		return
	}
	if p.invalidatePlan {
		delete(c.entries, p.key())
		return
	}
	now := p.r.Hub.(hub.Revisioner).PlanRevision()
	if now == p.planRevision {
		return
	}
	if now-p.planRevision == p.bindingStateWrites {
		e.revision = now
		return
	}
	delete(c.entries, p.key())
}

// finished reports whether the run has succeeded or failed.
func (p *pass) finished() bool {
	c := find(p.run.Status.Conditions, fleet.StagedUpdateRunConditionSucceeded)
	return isTrue(c, p.gen) || isFalse(c, p.gen)
}
