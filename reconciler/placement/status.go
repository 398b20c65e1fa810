package placement

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// Updater recomputes placements' statuses, remembering its last pass over
// each placement: the per-cluster entries it computed and the binding each
// came from. A placement of 10,000 clusters gets a pass for every batch of
// binding changes, and most of its clusters did not change since the last
// one; on a hub that shares its bindings (hub.ReadOnlyBindings) the same
// binding object means the same binding, so their entries are reused and
// neither recomputed nor compared again. Anything else the entries depend
// on (the placement's status as written, its generation, the policy and
// resource snapshots) that changed drops the memory. Safe for concurrent
// use on different placements.
type Updater struct {
	Hub   hub.Hub
	Clock clock.Clock

	mu    sync.Mutex
	memos map[hub.Key]*memo
}

// memo is what an Updater remembers of a placement.
type memo struct {
	// inputs names what every entry depends on besides its binding and
	// decision; the memo holds only while it is the same.
	inputs  string
	entries map[string]memoEntry // by cluster
}

// memoEntry is what a picked cluster's entry was computed from, and the
// condition statuses it got. The entry itself is not kept: while the memo
// holds, the stored status has it, so a second copy of 10,000 entries
// would only cost memory.
type memoEntry struct {
	binding *fleet.Binding // the hub's own object, never modified
	reason  string         // the scheduling decision's reason
	set     condStatuses
}

// Update recomputes the placement's status and writes it when it changed
// (transition times are kept for conditions whose status did not change,
// so a pass that observes nothing new writes nothing). A placement that
// does not exist is not an error.
func (u *Updater) Update(ctx context.Context, placement hub.Key) error {
	h := u.Hub
	p, err := h.GetPlacement(ctx, placement)
	if hub.IsNotFound(err) {
		u.forget(placement)
		return nil
	}
	if err != nil {
		return err
	}
	in, err := gather(ctx, h, p)
	if err != nil {
		return err
	}
	next := p.DeepCopy()
	c := computation{p: next, in: in, now: metav1.NewTime(u.Clock.Now().UTC().Truncate(time.Second))}
	// Without shared bindings no entry would ever be reused, and the memo
	// would keep a copy of every binding alive.
	_, sharing := h.(hub.ReadOnlyBindings)
	inputs := memoInputs(p, in)
	if m := u.recall(placement); m != nil && m.inputs == inputs {
		c.memo = m.entries
	}
	if err := c.run(); err != nil {
		return fmt.Errorf("compute the status of %s %s: %w", p.Kind, placement, err)
	}
	changed := c.changed(&p.Status)
	if changed {
		err = h.UpdatePlacementStatus(ctx, next)
	}
	switch {
	case err != nil || !sharing:
		u.forget(placement)
	case changed:
		// The hub stamps the written status's resourceVersion on next; one
		// that does not leaves the memo stale, which only costs a full pass.
		u.remember(placement, memoInputs(next, in), c.entries)
	default:
		u.remember(placement, inputs, c.entries)
	}
	return err
}

// memoInputs names what a placement's entries depend on besides each
// cluster's binding and decision: the placement's status as stored (its
// resourceVersion) and generation, the apply strategy, the policy snapshot
// and the resource snapshots (a binding's snapshot name maps to an index).
func memoInputs(p *fleet.Placement, in inputs) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%d/", p.ResourceVersion, p.Generation)
	if as := p.Spec.Strategy.ApplyStrategy; as != nil {
		b.WriteString(string(as.Type))
	}
	if in.policy != nil {
		fmt.Fprintf(&b, "/%s@%s", in.policy.Name, in.policy.ResourceVersion)
	}
	for _, s := range in.snapshots.list {
		fmt.Fprintf(&b, "/%s@%s", s.Name, s.ResourceVersion)
	}
	return b.String()
}

func (u *Updater) recall(placement hub.Key) *memo {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.memos[placement]
}

func (u *Updater) remember(placement hub.Key, inputs string, entries map[string]memoEntry) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.memos == nil {
		u.memos = map[hub.Key]*memo{}
	}
	u.memos[placement] = &memo{inputs: inputs, entries: entries}
}

func (u *Updater) forget(placement hub.Key) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.memos, placement)
}

// inputs is what a placement's status is computed from.
type inputs struct {
	// policy is the latest policy snapshot; nil before the first schedule.
	policy *fleet.PolicySnapshot
	// bindings are the live bindings on the latest policy snapshot, by
	// target cluster.
	bindings  map[string]*fleet.Binding
	snapshots resourceSnapshots
}

func gather(ctx context.Context, h hub.Hub, p *fleet.Placement) (inputs, error) {
	key := hub.Key{Namespace: p.Namespace, Name: p.Name}
	var in inputs
	policies, err := h.ListPolicySnapshots(ctx, key)
	if err != nil {
		return in, fmt.Errorf("list the policy snapshots of %s: %w", key, err)
	}
	for _, s := range policies {
		if s.Labels[fleet.IsLatestSnapshotLabel] == "true" {
			in.policy = s
		}
	}
	// Read only: a pass looks at every binding of the placement (10,000 of
	// them) and copies none; what it takes over into the status (override
	// and failure lists) is copied by the status write.
	bindings, err := hub.ListBindingsReadOnly(ctx, h, key)
	if err != nil {
		return in, fmt.Errorf("list the bindings of %s: %w", key, err)
	}
	in.bindings = map[string]*fleet.Binding{}
	for _, b := range bindings {
		if b.DeletionTimestamp != nil || b.Spec.TargetCluster == "" || in.policy == nil ||
			b.Spec.SchedulingPolicySnapshotName != in.policy.Name {
			continue
		}
		in.bindings[b.Spec.TargetCluster] = b
	}
	snaps, err := h.ListResourceSnapshots(ctx, key)
	if err != nil {
		return in, fmt.Errorf("list the resource snapshots of %s: %w", key, err)
	}
	in.snapshots = newResourceSnapshots(snaps)
	return in, nil
}

// computation fills in p.Status from in, following KubeFleet's
// setPlacementStatus.
type computation struct {
	p   *fleet.Placement
	in  inputs
	now metav1.Time
	// memo are the entries of the last pass, valid for in (nil: none);
	// entries are this pass's, and reused marks the positions in
	// p.Status.PlacementStatuses taken from memo.
	memo    map[string]memoEntry
	entries map[string]memoEntry
	reused  []bool
}

func (c *computation) set(conds *[]metav1.Condition, cond metav1.Condition) {
	cond.LastTransitionTime = c.now
	meta.SetStatusCondition(conds, cond)
}

func (c *computation) run() error {
	st := &c.p.Status
	scheduled := c.scheduledCondition()
	c.set(&st.Conditions, scheduled)
	latest := c.in.snapshots.latestIndex()
	st.ObservedResourceIndex = latest
	selected, err := c.in.snapshots.identifiers(latest)
	if err != nil {
		return err
	}
	st.SelectedResources = selected

	if scheduled.Status == metav1.ConditionUnknown {
		st.PlacementStatuses = nil
		c.keepOnly(nil)
		return nil
	}

	picked, unpicked := classify(c.in.policy.Status.ClusterDecisions)
	expected := condTypesForApply
	if as := c.p.Spec.Strategy.ApplyStrategy; as != nil && as.Type == fleet.ApplyStrategyTypeReportDiff {
		expected = condTypesForReportDiff
	}
	old := make(map[string]*fleet.PerClusterPlacementStatus, len(st.PlacementStatuses))
	for i := range st.PlacementStatuses {
		old[st.PlacementStatuses[i].ClusterName] = &st.PlacementStatuses[i]
	}
	conditionsOf := func(cluster string) []metav1.Condition {
		if s := old[cluster]; s != nil {
			return s.Conditions
		}
		return nil
	}

	var counts [totalConditions]map[metav1.ConditionStatus]int
	for i := range counts {
		counts[i] = map[metav1.ConditionStatus]int{}
	}
	statuses := make([]fleet.PerClusterPlacementStatus, 0, len(picked))
	c.entries = make(map[string]memoEntry, len(picked))
	c.reused = make([]bool, 0, len(picked))
	for _, d := range picked {
		b := c.in.bindings[d.ClusterName]
		e, ok := c.memo[d.ClusterName]
		was := old[d.ClusterName]
		reuse := ok && b != nil && e.binding == b && e.reason == d.Reason && was != nil
		s := fleet.PerClusterPlacementStatus{ClusterName: d.ClusterName, Conditions: conditionsOf(d.ClusterName)}
		if reuse {
			s = *was
		} else {
			e = memoEntry{binding: b, reason: d.Reason}
			c.set(&s.Conditions, cond(scheduledSuffix, metav1.ConditionTrue, scheduleSucceededReason, d.Reason, c.p.Generation))
			e.set = c.perCluster(&s, b, expected)
			for rc := rolloutStarted; rc < totalConditions; rc++ {
				if e.set[rc] == "" {
					meta.RemoveStatusCondition(&s.Conditions, rc.suffix())
				}
			}
		}
		for rc := rolloutStarted; rc < totalConditions; rc++ {
			if status := e.set[rc]; status != "" {
				counts[rc][status]++
			}
		}
		if b != nil {
			c.entries[d.ClusterName] = e
		}
		c.reused = append(c.reused, reuse)
		statuses = append(statuses, s)
	}
	for _, d := range unpicked[:c.failedToSchedule(len(picked), len(unpicked))] {
		s := fleet.PerClusterPlacementStatus{ClusterName: d.ClusterName, Conditions: conditionsOf(d.ClusterName)}
		c.set(&s.Conditions, cond(scheduledSuffix, metav1.ConditionFalse, scheduleFailedReason, d.Reason, c.p.Generation))
		for rc := rolloutStarted; rc < totalConditions; rc++ {
			meta.RemoveStatusCondition(&s.Conditions, rc.suffix())
		}
		statuses = append(statuses, s)
	}
	st.PlacementStatuses = statuses

	if len(picked) == 0 {
		c.keepOnly(nil)
		return nil
	}
	if done, err := c.externalRollout(statuses[:len(picked)]); done || err != nil {
		return err
	}
	c.placementConditions(statuses, counts, expected)
	return nil
}

// changed reports whether the computed status differs from was, the
// status it was computed from. Entries reused from the memo are equal to
// was's entry of the same cluster (the memo holds only while the stored
// status is the one its entries were written in), so only the others are
// compared.
func (c *computation) changed(was *fleet.PlacementStatus) bool {
	st := &c.p.Status
	if !equality.Semantic.DeepEqual(was.Conditions, st.Conditions) ||
		was.ObservedResourceIndex != st.ObservedResourceIndex ||
		!equality.Semantic.DeepEqual(was.SelectedResources, st.SelectedResources) ||
		len(was.PlacementStatuses) != len(st.PlacementStatuses) {
		return true
	}
	for i := range st.PlacementStatuses {
		if i < len(c.reused) && c.reused[i] && was.PlacementStatuses[i].ClusterName == st.PlacementStatuses[i].ClusterName {
			continue
		}
		if !equality.Semantic.DeepEqual(was.PlacementStatuses[i], st.PlacementStatuses[i]) {
			return true
		}
	}
	return false
}

// scheduledCondition copies the policy snapshot's Scheduled condition, or
// is Unknown while the scheduler has not caught up with the placement.
func (c *computation) scheduledCondition() metav1.Condition {
	t := typeFor(c.p, scheduledSuffix)
	snap := c.in.policy
	var sc *metav1.Condition
	if snap != nil {
		sc = meta.FindStatusCondition(snap.Status.Conditions, fleet.PolicySnapshotScheduled)
	}
	if sc == nil || sc.ObservedGeneration < snap.Generation || snap.Status.ObservedCRPGeneration < c.p.Generation ||
		sc.Status == metav1.ConditionUnknown {
		return cond(t, metav1.ConditionUnknown, schedulingUnknownReason, schedulingUnknownMessage, c.p.Generation)
	}
	return cond(t, sc.Status, sc.Reason, sc.Message, c.p.Generation)
}

// classify splits the decisions into picked and not picked clusters, each
// sorted by cluster name.
func classify(decisions []fleet.ClusterDecision) (picked, unpicked []fleet.ClusterDecision) {
	for _, d := range decisions {
		if d.Selected {
			picked = append(picked, d)
		} else {
			unpicked = append(unpicked, d)
		}
	}
	byName := func(s []fleet.ClusterDecision) {
		sort.Slice(s, func(i, j int) bool { return s[i].ClusterName < s[j].ClusterName })
	}
	byName(picked)
	byName(unpicked)
	return picked, unpicked
}

// failedToSchedule is how many clusters the policy asked for and did not
// get (KubeFleet's calculateFailedToScheduleClusterCount), bounded by the
// unpicked decisions that can explain them.
func (c *computation) failedToSchedule(picked, unpicked int) int {
	policy, n := c.p.Spec.Policy, 0
	switch {
	case policy == nil:
	case policy.PlacementType == fleet.PickNPlacementType && policy.NumberOfClusters != nil:
		n = int(*policy.NumberOfClusters) - picked
	case policy.PlacementType == fleet.PickFixedPlacementType:
		n = len(policy.ClusterNames) - picked
	}
	return max(0, min(n, unpicked))
}

// condStatuses is the status a cluster's status got for each condition
// type; "" for the types it does not have. An array, not a map: a pass
// computes one for each of 10,000 clusters.
type condStatuses [totalConditions]metav1.ConditionStatus

// perCluster fills a picked cluster's status from its binding and returns
// the status set for each condition type (KubeFleet's
// setResourcePlacementStatusBasedOnBinding, External strategy): conditions
// are copied from the binding as long as they are True at the binding's
// generation; the first False one is copied and ends the list; the first
// missing or stale one is Unknown and ends the list.
func (c *computation) perCluster(s *fleet.PerClusterPlacementStatus, b *fleet.Binding, expected []resourceCondition) condStatuses {
	var set condStatuses
	if b == nil {
		// Picked, but the binding is not there (yet): an in-between state.
		c.set(&s.Conditions, rolloutStarted.unknownPerCluster(c.p.Generation))
		set[rolloutStarted] = metav1.ConditionUnknown
		return set
	}
	s.ObservedResourceIndex = c.in.snapshots.indexOf(b.Spec.ResourceSnapshotName)
	for _, rc := range expected {
		bc := meta.FindStatusCondition(b.Status.Conditions, rc.suffix())
		if bc == nil || bc.ObservedGeneration != b.Generation || bc.Status == metav1.ConditionUnknown {
			c.set(&s.Conditions, rc.unknownPerCluster(c.p.Generation))
			set[rc] = metav1.ConditionUnknown
			break
		}
		switch rc {
		case rolloutStarted:
			if bc.Status == metav1.ConditionTrue {
				s.ApplicableResourceOverrides = b.Spec.ResourceOverrideSnapshots
				s.ApplicableClusterResourceOverrides = b.Spec.ClusterResourceOverrideSnapshots
			}
		case applied, available:
			if bc.Status == metav1.ConditionFalse {
				s.FailedPlacements = b.Status.FailedPlacements
				s.DiffedPlacements = b.Status.DiffedPlacements
			}
			// Drifts are reported whether the apply succeeded or not.
			s.DriftedPlacements = b.Status.DriftedPlacements
		case diffReported:
			if bc.Status == metav1.ConditionTrue {
				s.DiffedPlacements = b.Status.DiffedPlacements
			}
		}
		c.set(&s.Conditions, cond(rc.suffix(), bc.Status, bc.Reason, bc.Message, c.p.Generation))
		set[rc] = bc.Status
		if bc.Status == metav1.ConditionFalse {
			break
		}
	}
	return set
}

// externalRollout is KubeFleet's
// determineRolloutStateForPlacementWithExternalRolloutStrategy: unless all
// picked clusters observe the same resource snapshot index, and all of them
// know whether they roll it out, RolloutStarted is Unknown and the
// placement reports no index. It reports whether the conditions are final.
func (c *computation) externalRollout(picked []fleet.PerClusterPlacementStatus) (bool, error) {
	st := &c.p.Status
	unknown := func(message string) {
		c.set(&st.Conditions, cond(typeFor(c.p, rolloutStarted.suffix()), metav1.ConditionUnknown,
			rolloutControlledByExternalControllerReason, message, c.p.Generation))
		c.keepOnly(map[resourceCondition]bool{rolloutStarted: true})
	}
	index := picked[0].ObservedResourceIndex
	for _, s := range picked[1:] {
		if s.ObservedResourceIndex != index {
			st.ObservedResourceIndex, st.SelectedResources = "", nil
			unknown(externalMixedMessage)
			return true, nil
		}
	}
	if index == "" {
		st.ObservedResourceIndex, st.SelectedResources = "", nil
		unknown(externalNoneMessage)
		return true, nil
	}
	st.ObservedResourceIndex = index
	selected, err := c.in.snapshots.identifiers(index)
	if err != nil {
		return true, err
	}
	st.SelectedResources = selected
	for _, s := range picked {
		rs := meta.FindStatusCondition(s.Conditions, rolloutStarted.suffix())
		if rs == nil || rs.ObservedGeneration != c.p.Generation || rs.Status == metav1.ConditionUnknown {
			unknown(fmt.Sprintf(externalClusterUnknownMessage, s.ClusterName))
			return true, nil
		}
	}
	return false, nil
}

// placementConditions summarizes the per-cluster conditions, type by type
// in order, stopping after the first type that is not True everywhere
// (KubeFleet's setPlacementConditions).
func (c *computation) placementConditions(statuses []fleet.PerClusterPlacementStatus,
	counts [totalConditions]map[metav1.ConditionStatus]int, expected []resourceCondition) {
	st := &c.p.Status
	kept := map[resourceCondition]bool{}
	for _, rc := range expected {
		kept[rc] = true
		switch {
		case counts[rc][metav1.ConditionUnknown] > 0:
			c.set(&st.Conditions, rc.placementCondition(c.p, metav1.ConditionUnknown, counts[rc][metav1.ConditionUnknown]))
		case counts[rc][metav1.ConditionFalse] > 0:
			c.set(&st.Conditions, rc.placementCondition(c.p, metav1.ConditionFalse, counts[rc][metav1.ConditionFalse]))
		default:
			pc := rc.placementCondition(c.p, metav1.ConditionTrue, counts[rc][metav1.ConditionTrue])
			if rc == overridden && !anyOverride(statuses) {
				pc.Reason, pc.Message = overrideNotSpecifiedReason, overrideNotSpecifiedMessage
			}
			c.set(&st.Conditions, pc)
			continue
		}
		break
	}
	c.keepOnly(kept)
}

func anyOverride(statuses []fleet.PerClusterPlacementStatus) bool {
	for _, s := range statuses {
		if len(s.ApplicableResourceOverrides) > 0 || len(s.ApplicableClusterResourceOverrides) > 0 {
			return true
		}
	}
	return false
}

// keepOnly drops the placement-level rollout conditions not in keep (the
// Scheduled condition always stays), so a status never shows a condition
// from an earlier computation.
func (c *computation) keepOnly(keep map[resourceCondition]bool) {
	for rc := rolloutStarted; rc < totalConditions; rc++ {
		if !keep[rc] {
			meta.RemoveStatusCondition(&c.p.Status.Conditions, typeFor(c.p, rc.suffix()))
		}
	}
}
