package member

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"
	"weak"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// Simulated is an in-process member cluster. It applies a delivery at once
// and keeps what it holds in memory, so tests and `gitfleet simulate -o
// yaml` can show what each member has. Three annotations on the MemberCluster
// shape it:
//
//   - gitfleet.io/sim-available-after (Go duration, default 0s): how long
//     after applying the resources become available. With 0s the Available
//     report comes in the same call, so the engine is woken at once.
//   - gitfleet.io/sim-unavailable: "<reason>": the resources never become
//     available (the seeds' stuck rollout). The binding shows
//     Available=False and one failed placement per resource, as KubeFleet
//     shows a Deployment whose pods cannot start.
//   - gitfleet.io/sim-drift ("<kind>/<namespace>/<name>:<pointer>=<value>",
//     several separated by ";"): someone edits these fields of the
//     member's objects after every apply, and the member's next check
//     sees it at once. Under whenToApply: IfNotDrifted that is
//     Applied=False with driftedPlacements (the edit is kept); under
//     FullComparison a field the manifest does not set is a drift of an
//     applied work; ReportDiff reports the edit as a diff.
//
// A binding with the ReportDiff apply strategy is not applied: the member
// reports DiffReported=True with the diff of each resource against what
// it holds (the whole object when it holds none) and keeps what it had.
//
// What a newer delivery drops, or a removal takes off, is gone from the
// member, except objects annotated prune: disabled (PruneDisabled), which
// the member keeps (see Left) and the binding names in PruneSkipped.
type Simulated struct {
	name     string
	clock    clock.Clock
	reporter Reporter
	log      *slog.Logger
	shelf    *shelf // shared by the members of one Drivers

	mu     sync.Mutex
	placed map[hub.Key]*Placed
	timers map[hub.Key]clock.Timer
	left   map[string]Left // by placement and resource
}

// Left is an object a simulated member kept when it left its placement's
// snapshot, or its placement left the member, because it is annotated
// prune: disabled.
type Left struct {
	Placement hub.Key
	Resource  *unstructured.Unstructured
}

// Placed is what a simulated member holds for one binding.
type Placed struct {
	Binding          hub.Key
	Placement        hub.Key
	ResourceSnapshot string
	// Generation is the binding generation the resources were applied at.
	Generation int64
	Resources  []*unstructured.Unstructured
	Available  bool
	// overridden is the binding's Overridden condition, reported again
	// when the resources become available.
	overridden metav1.Condition
	// left names the objects of the placement the member kept although
	// they left the snapshot; reported with every condition of the
	// generation.
	left []fleet.ResourceIdentifier

	set *resourceSet // holds Resources on the shelf
}

func newSimulated(name string, c clock.Clock, r Reporter, log *slog.Logger, sh *shelf) *Simulated {
	return &Simulated{
		name: name, clock: c, reporter: r, log: log.With("member", name), shelf: sh,
		placed: map[hub.Key]*Placed{}, timers: map[hub.Key]clock.Timer{}, left: map[string]Left{},
	}
}

// Name is the member cluster's name.
func (s *Simulated) Name() string { return s.name }

// Placed returns copies of what the member holds, sorted by binding.
func (s *Simulated) Placed() []Placed {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Placed, 0, len(s.placed))
	for _, p := range s.placed {
		c := *p
		c.Resources = make([]*unstructured.Unstructured, len(p.Resources))
		for i, r := range p.Resources {
			c.Resources[i] = r.DeepCopy()
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Binding.String() < out[j].Binding.String() })
	return out
}

// Left returns copies of the objects the member kept although they left
// their placement's snapshot, sorted by placement and resource.
func (s *Simulated) Left() []Left {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0, len(s.left))
	for k := range s.left {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]Left, 0, len(keys))
	for _, k := range keys {
		l := s.left[k]
		out = append(out, Left{Placement: l.Placement, Resource: l.Resource.DeepCopy()})
	}
	return out
}

func leftKey(placement hub.Key, r *unstructured.Unstructured) string {
	id := Identify(r)
	return placement.String() + "|" + id.Group + "/" + id.Kind + "/" + id.Namespace + "/" + id.Name
}

// keepLocked is the prune of a simulated member: of the objects it held
// for placement (was), those not in now are gone, except the ones
// annotated prune: disabled, which it keeps. Objects in now are the
// placement's again, not left.
func (s *Simulated) keepLocked(placement hub.Key, was, now []*unstructured.Unstructured) {
	kept := make(map[string]bool, len(now))
	for _, r := range now {
		k := leftKey(placement, r)
		kept[k] = true
		delete(s.left, k)
	}
	for _, r := range was {
		if k := leftKey(placement, r); !kept[k] && PruneDisabled(r) {
			s.left[k] = Left{Placement: placement, Resource: r.DeepCopy()}
			s.log.Debug("prune skipped", "placement", hub.KeyString(placement), "resource", DescribeResource(Identify(r)))
		}
	}
}

// leftOfLocked names the objects kept for placement.
func (s *Simulated) leftOfLocked(placement hub.Key) []fleet.ResourceIdentifier {
	var out []fleet.ResourceIdentifier
	for _, l := range s.left {
		if l.Placement == placement {
			out = append(out, Identify(l.Resource))
		}
	}
	return out
}

// Simulation is a simulated member's behaviour, read from its
// annotations: how long after an apply its resources become available
// (gitfleet.io/sim-available-after), or never (gitfleet.io/sim-unavailable).
// Both simulated appliers (this transport and gitfleet agent's) read it.
type Simulation struct {
	AvailableAfter time.Duration
	Unavailable    bool
}

// SimulationOf reads m's simulated behaviour, or says which annotation is
// wrong.
func SimulationOf(m *fleet.MemberCluster) (Simulation, error) {
	var sim Simulation
	if v, ok := m.Annotations[fleet.SimAvailableAfterAnnotation]; ok && v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return sim, fmt.Errorf("member cluster %q has an invalid %s annotation %q: want a non-negative Go duration such as 30s",
				m.Name, fleet.SimAvailableAfterAnnotation, v)
		}
		sim.AvailableAfter = d
	}
	_, sim.Unavailable = m.Annotations[fleet.SimUnavailableAnnotation]
	return sim, nil
}

// Deliver applies the resources and reports; see the type's comment.
func (s *Simulated) Deliver(_ context.Context, d Delivery) error {
	key, gen := d.Key(), d.Generation()
	sim, err := SimulationOf(d.Member)
	if err != nil {
		return reportNotApplied(s.reporter, d, InvalidSimulationReason, err.Error())
	}

	drifts, err := parseSimDrifts(d.Member)
	if err != nil {
		return reportNotApplied(s.reporter, d, InvalidSimulationReason, err.Error())
	}
	strategy := fleet.DefaultApplyStrategy(d.Binding.Spec.ApplyStrategy)

	s.mu.Lock()
	s.stopTimerLocked(key)
	if d.ReportsDiff() {
		diffed, err := s.diffLocked(d.Resources, drifts, strategy.ComparisonOption)
		s.mu.Unlock()
		if err != nil {
			return s.reporter.ReportBindingStatus(key, gen,
				[]metav1.Condition{overridden(d.Binding), workSynchronized(gen), NotDiffReported(gen, d.WorkName())}, Placements{})
		}
		s.log.Debug("reported diff", "binding", hub.KeyString(key), "generation", gen, "diffed", len(diffed))
		return s.reporter.ReportBindingStatus(key, gen,
			[]metav1.Condition{overridden(d.Binding), workSynchronized(gen), diffReported(gen)}, Placements{Diffed: diffed})
	}
	var was []*unstructured.Unstructured
	if old, ok := s.placed[key]; ok {
		was = old.Resources
	}
	// The edit sim-drift makes after the apply, as the member's next check
	// sees it: under IfNotDrifted the edited objects are not applied
	// again (Applied=False); under FullComparison with Always, a field
	// the manifest does not set is a drift of an applied work.
	after := driftsOf(d.Resources, drifts, strategy.ComparisonOption, gen)
	drifted := strategy.WhenToApply == fleet.WhenToApplyTypeIfNotDrifted && len(after.Failed) > 0
	if !drifted {
		after.Failed = nil
		if strategy.ComparisonOption != fleet.ComparisonOptionTypeFullComparison {
			after.Drifted = nil // the apply restores what it owns
		}
	}
	s.keepLocked(d.Placement(), was, d.Resources)
	p := &Placed{
		Binding:          key,
		Placement:        d.Placement(),
		ResourceSnapshot: d.Binding.Spec.ResourceSnapshotName,
		Generation:       gen,
		set:              s.shelf.hold(d.Binding.Namespace+"/"+d.Binding.Spec.ResourceSnapshotName, d.Resources),
		Available:        !drifted && !sim.Unavailable && (sim.AvailableAfter == 0 || availableAt(d.Binding, gen)),
		overridden:       overridden(d.Binding),
		left:             s.leftOfLocked(d.Placement()),
	}
	p.Resources = p.set.resources
	s.placed[key] = p
	isAvailable := p.Available
	s.mu.Unlock()

	s.log.Debug("applied", "binding", hub.KeyString(key), "generation", gen, "snapshot", p.ResourceSnapshot,
		"resources", len(p.Resources), "available", isAvailable)
	if drifted {
		s.log.Debug("drifted", "binding", hub.KeyString(key), "generation", gen, "drifted", len(after.Drifted))
		return s.reporter.ReportBindingStatus(key, gen, WithPruneSkipped([]metav1.Condition{p.overridden, workSynchronized(gen),
			notApplied(gen, WorkNotAppliedReason, fmt.Sprintf(WorkFailedToApplyMessageFmt, d.WorkName()))}, gen, p.left), after)
	}
	conds := WithPruneSkipped([]metav1.Condition{p.overridden, workSynchronized(gen), applied(gen)}, gen, p.left)
	if isAvailable {
		return s.reporter.ReportBindingStatus(key, gen, append(conds, available(gen)), after)
	}
	if sim.Unavailable {
		// Never available: KubeFleet's failure report, which the engine
		// counts as an error and, after the stuck threshold, reports Stuck.
		return s.reporter.ReportBindingStatus(key, gen, append(conds, notAvailable(gen, d.WorkName())),
			Placements{Failed: d.Envelopes.Name(failedPlacements(d.Resources, gen)), Drifted: after.Drifted})
	}
	// Becoming available: in progress, not a failure (spec §3.5), so the
	// engine waits quietly and is woken by the Available report.
	err = s.reporter.ReportBindingStatus(key, gen, append(conds, notYetAvailable(gen, d.WorkName())), after)
	// Armed only now, so the Available report can never overtake the
	// not-yet-available one.
	s.mu.Lock()
	if s.placed[key] == p {
		s.timers[key] = s.clock.AfterFunc(sim.AvailableAfter, func() { s.becomeAvailable(key, gen) })
	}
	s.mu.Unlock()
	return err
}

// availableAt reports whether the binding already says its work is
// available at generation gen. A simulated member keeps no state across a
// restart of gitfleet, so the binding's status is its memory: the resync
// after a restart finds the work in place and available, as a real
// cluster would, instead of waiting sim-available-after again and
// re-stamping every finished binding's Available condition.
func availableAt(b *fleet.Binding, gen int64) bool {
	c := meta.FindStatusCondition(b.Status.Conditions, fleet.ResourceBindingAvailable)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == gen
}

// becomeAvailable is the end of a sim-available-after wait.
func (s *Simulated) becomeAvailable(key hub.Key, gen int64) {
	s.mu.Lock()
	p, ok := s.placed[key]
	if !ok || p.Generation != gen {
		s.mu.Unlock()
		return
	}
	p.Available = true
	delete(s.timers, key)
	over, left := p.overridden, p.left
	s.mu.Unlock()

	s.log.Debug("available", "binding", hub.KeyString(key), "generation", gen)
	err := s.reporter.ReportBindingStatus(key, gen,
		WithPruneSkipped([]metav1.Condition{over, workSynchronized(gen), applied(gen), available(gen)}, gen, left), Placements{})
	if err != nil {
		s.log.Error("report availability", "binding", hub.KeyString(key), "generation", gen, "err", err)
	}
}

// Remove takes off what the binding put on the member, except what is
// annotated prune: disabled.
func (s *Simulated) Remove(_ context.Context, d Delivery) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := d.Key()
	s.stopTimerLocked(key)
	if p, ok := s.placed[key]; ok {
		s.keepLocked(p.Placement, p.Resources, nil)
		delete(s.placed, key)
		s.log.Debug("removed", "binding", hub.KeyString(key))
	}
	return nil
}

func (s *Simulated) stopTimerLocked(key hub.Key) {
	if t, ok := s.timers[key]; ok {
		t.Stop()
		delete(s.timers, key)
	}
}

// shelf keeps one copy of each set of resources that simulated members
// hold: every member bound to a snapshot holds the same manifests, and a
// copy per member of a 10,000-cluster fleet is 32 MiB. Members only read
// what they hold (Placed hands out copies). The shelf holds its sets
// weakly, so a set no member holds any more is collected.
type shelf struct {
	mu   sync.Mutex
	sets map[string]weak.Pointer[resourceSet]
}

// resourceSet is the resources of one delivery, shared by the members
// that hold equal ones.
type resourceSet struct {
	resources []*unstructured.Unstructured
}

// hold returns a set equal to in, shared with the members that hold one
// already for the same snapshot; in is copied when there is none.
func (sh *shelf) hold(snapshot string, in []*unstructured.Unstructured) *resourceSet {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.sets == nil {
		sh.sets = map[string]weak.Pointer[resourceSet]{}
	}
	if set := sh.sets[snapshot].Value(); set != nil && sameResources(set.resources, in) {
		return set
	}
	set := &resourceSet{resources: copyResources(in)}
	sh.sets[snapshot] = weak.Make(set)
	for k, p := range sh.sets { // forget sets no member holds
		if p.Value() == nil {
			delete(sh.sets, k)
		}
	}
	return set
}

func sameResources(a, b []*unstructured.Unstructured) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !equality.Semantic.DeepEqual(a[i].Object, b[i].Object) {
			return false
		}
	}
	return true
}

func copyResources(in []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(in))
	for i, r := range in {
		out[i] = r.DeepCopy()
	}
	return out
}

// availabilityTracked are the kinds whose availability KubeFleet's work
// applier actually tracks; the others (Namespace, ConfigMap, ...) are
// available as soon as they are applied.
var availabilityTracked = map[string]bool{
	"apps/Deployment": true, "apps/StatefulSet": true, "apps/DaemonSet": true,
	"batch/Job": true, "/Service": true, "policy/PodDisruptionBudget": true,
	"apiextensions.k8s.io/CustomResourceDefinition": true,
}

// failedPlacements lists the resources that are not available: those whose
// availability is tracked, or every resource when none is (so an
// unavailable member always says what it is waiting for).
func failedPlacements(resources []*unstructured.Unstructured, gen int64) []fleet.FailedResourcePlacement {
	var tracked []*unstructured.Unstructured
	for _, r := range resources {
		gvk := r.GroupVersionKind()
		if availabilityTracked[gvk.Group+"/"+gvk.Kind] {
			tracked = append(tracked, r)
		}
	}
	if len(tracked) == 0 {
		tracked = resources
	}
	var out []fleet.FailedResourcePlacement
	for _, r := range tracked {
		if len(out) == maxFailedPlacements {
			break
		}
		out = append(out, fleet.FailedResourcePlacement{
			ResourceIdentifier: Identify(r),
			Condition: condition(fleet.ResourceBindingAvailable, metav1.ConditionFalse,
				ManifestNotAvailableYetReason, ManifestNotAvailableYetMessage, gen),
		})
	}
	return out
}

// holdsLocked is the member's copy of the object id names, from any
// binding; nil when it has none.
func (s *Simulated) holdsLocked(id fleet.ResourceIdentifier) *unstructured.Unstructured {
	keys := make([]hub.Key, 0, len(s.placed))
	for k := range s.placed {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	for _, k := range keys {
		for _, r := range s.placed[k].Resources {
			if Identify(r) == id {
				return r
			}
		}
	}
	return nil
}

// diffLocked is ReportDiff on a simulated member: each resource against
// the member's copy, edited as sim-drift says.
func (s *Simulated) diffLocked(resources []*unstructured.Unstructured, drifts []simDrift, option fleet.ComparisonOptionType) ([]fleet.DiffedResourcePlacement, error) {
	var out []fleet.DiffedResourcePlacement
	for _, r := range resources {
		held := s.holdsLocked(Identify(r))
		if held == nil {
			out = append(out, DiffedPlacement(r, nil, nil))
			continue
		}
		live := edited(held, drifts)
		if live == nil {
			live = held
		}
		details, err := compare(r, live, option)
		if err != nil {
			return nil, err
		}
		if len(details) > 0 {
			out = append(out, DiffedPlacement(r, live, details))
		}
	}
	return out, nil
}

// driftsOf finds the drifts sim-drift makes in the member's copies of
// resources, each also a failed placement (FoundDrifts) for when the
// strategy holds it back.
func driftsOf(resources []*unstructured.Unstructured, drifts []simDrift, option fleet.ComparisonOptionType, gen int64) Placements {
	var out Placements
	for _, r := range resources {
		live := edited(r, drifts)
		if live == nil {
			continue
		}
		details, err := compare(r, live, option)
		if err != nil || len(details) == 0 {
			continue
		}
		out.Failed = append(out.Failed, FailedPlacement(r, fleet.ResourceBindingApplied, FoundDriftsReason,
			fmt.Sprintf(ManifestNotAppliedMessageFmt, DriftsFoundError), gen))
		out.Drifted = append(out.Drifted, DriftedPlacement(r, live, details))
	}
	return out
}
