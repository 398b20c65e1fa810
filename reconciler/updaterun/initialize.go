package updaterun

import (
	"context"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/overridesnapshot"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
)

// initialize freezes the run's plan (spec §2.2): apply strategy, policy
// snapshot index and cluster count, strategy snapshot, stages with their
// cluster order and tasks, deletion stage, resource snapshot index, and the
// override snapshots of each cluster. Each
// step records into the run's status as it goes, so a terminal failure
// persists what was derived before it. On success the status is written at
// once with Initialized=True, before any side effect of execution.
func (p *pass) initialize() (*plan, error) {
	st := &p.run.Status
	retried, err := p.retriedRun()
	if err != nil {
		return nil, err
	}
	placement, err := p.checkPlacement(st)
	if err != nil {
		return nil, err
	}
	snap, _, err := p.latestPolicySnapshot(st)
	if err != nil {
		return nil, err
	}
	selected, toDelete, err := p.collectBindings(snap, st)
	if err != nil {
		return nil, err
	}
	selected, toDelete = retried.scope(selected, toDelete)
	if err := p.recordStrategyOf(retried, st); err != nil {
		return nil, err
	}
	if err := p.checkConcurrentRuns(st); err != nil {
		return nil, err
	}
	if err := p.computeStages(selected, st); err != nil {
		return nil, err
	}
	st.DeletionStageStatus = p.deletionStage(toDelete, st.StagedUpdateStrategySnapshot)
	if err := p.recordResourceSnapshotOf(retried, placement, st); err != nil {
		return nil, err
	}
	if err := p.checkRejected(placement, st); err != nil {
		return nil, err
	}
	if err := p.recordOverrideSnapshots(st); err != nil {
		return nil, err
	}
	if err := p.checkRetriedOverrides(retried, st); err != nil {
		return nil, err
	}
	p.set(&st.Conditions, fleet.StagedUpdateRunConditionInitialized, metav1.ConditionTrue,
		fleet.UpdateRunInitializeSucceededReason, InitializedSucceededMessage)
	if err := p.writeStatusAndContinue(); err != nil {
		return nil, err
	}
	pl := newPlan(p, st, selected, toDelete)
	p.r.cache.store(p, pl)
	return pl, nil
}

// recordStrategy freezes the strategy into the run (spec §2.2 step 4).
func (p *pass) recordStrategy(st *fleet.UpdateRunStatus) error {
	key := hub.Key{Namespace: p.run.Namespace, Name: p.run.Spec.StagedUpdateStrategyName}
	s, err := p.r.Hub.GetUpdateStrategy(p.ctx, key)
	if hub.IsNotFound(err) {
		if p.r.RefusedStrategy != nil {
			if why := p.r.RefusedStrategy(key); why != "" {
				return validationAbort(userErr(StrategyInvalidFmt, keyName(key), why))
			}
		}
		return validationAbort(userErr("referenced updateStrategy not found: `%s`", keyString(key)))
	}
	if err != nil {
		return fmt.Errorf("reading update strategy %s: %w", keyString(key), err)
	}
	st.StagedUpdateStrategySnapshot = s.Spec.DeepCopy()
	fleet.SetDefaultsUpdateStrategySpec(st.StagedUpdateStrategySnapshot)
	StripApprovalWaitTimes(st.StagedUpdateStrategySnapshot)
	return nil
}

// unfinishedRuns is a hub that lists the runs that have not finished
// without reading the finished ones (the embedded hub keeps them packed),
// which the check of concurrent runs skips: a run initializing after a
// hundred finished runs of 1,000 clusters no longer unpacks them all.
type unfinishedRuns interface {
	ListUnfinishedUpdateRunsReadOnly(ctx context.Context) ([]*fleet.UpdateRun, error)
}

// checkConcurrentRuns enforces what KubeFleet only documents (deliberate
// difference 3): runs that are in flight on the same placement at the same
// time must use identical strategy snapshots, otherwise their stage plans
// would fight over the same bindings.
func (p *pass) checkConcurrentRuns(st *fleet.UpdateRunStatus) error {
	var runs []*fleet.UpdateRun
	var err error
	if u, ok := p.r.Hub.(unfinishedRuns); ok {
		runs, err = u.ListUnfinishedUpdateRunsReadOnly(p.ctx) // read only, as below
	} else {
		runs, err = p.r.Hub.ListUpdateRuns(p.ctx)
	}
	if err != nil {
		return fmt.Errorf("listing update runs: %w", err)
	}
	for _, o := range runs {
		if o.Namespace != p.run.Namespace || o.Name == p.run.Name || o.Spec.PlacementName != p.run.Spec.PlacementName ||
			o.DeletionTimestamp != nil {
			continue
		}
		if !isTrue(find(o.Status.Conditions, fleet.StagedUpdateRunConditionInitialized), o.Generation) ||
			find(o.Status.Conditions, fleet.StagedUpdateRunConditionSucceeded) != nil {
			continue
		}
		theirs := o.Status.StagedUpdateStrategySnapshot.DeepCopy()
		if theirs != nil {
			fleet.SetDefaultsUpdateStrategySpec(theirs)
		}
		StripApprovalWaitTimes(theirs)
		if !equality.Semantic.DeepEqual(theirs, st.StagedUpdateStrategySnapshot) {
			return validationAbort(userErr(ConcurrentStrategyMismatchFmt, o.Name, p.run.Spec.PlacementName))
		}
	}
	return nil
}

// StrategyInvalidFmt is gitfleet's initialization error for a strategy
// that is in Git but was refused (never accepted, so the hub has none):
// upstream's API server would have refused it, and the run would say
// "referenced updateStrategy not found". It takes the strategy's name
// (namespace/name when namespaced) and its first error.
const StrategyInvalidFmt = "strategy %s is invalid: %s"

// keyName prints a key like klog.KRef: "<name>" or "<ns>/<name>".
func keyName(k hub.Key) string {
	if k.Namespace == "" {
		return k.Name
	}
	return keyString(k)
}

// ConcurrentStrategyMismatchFmt is gitfleet's initialization error for
// deliberate difference 3; it takes the other run and the placement.
const ConcurrentStrategyMismatchFmt = "update run `%s` is still in progress on placement `%s` with a different update strategy snapshot; " +
	"concurrent update runs on one placement must use identical strategies: wait for it to finish, delete it, or use the same strategy"

// recordResourceSnapshot resolves the resource snapshot the run rolls out
// (spec §2.2 step 6, §5.2): the given index, or the latest snapshot of what
// the placement selects now, created when it changed.
func (p *pass) recordResourceSnapshot(placement *fleet.Placement, st *fleet.UpdateRunStatus) error {
	pk := p.placementKey()
	if p.run.Spec.ResourceSnapshotIndex == "" {
		resources, err := p.r.Hub.SelectResources(p.ctx, placement)
		if err != nil {
			return fmt.Errorf("selecting the resources of placement %s: %w", keyString(pk), err)
		}
		master, _, err := resourcesnapshot.Ensure(p.ctx, p.r.Hub, placement, resources, "")
		if err != nil {
			return err
		}
		st.ResourceSnapshotIndexUsed = master.Labels[fleet.ResourceIndexLabel]
		return nil
	}
	idx, err := strconv.Atoi(p.run.Spec.ResourceSnapshotIndex)
	if err != nil || idx < 0 {
		return validationAbort(userErr("invalid resource snapshot index `%s` provided, expected an integer >= 0", p.run.Spec.ResourceSnapshotIndex))
	}
	all, err := p.r.Hub.ListResourceSnapshots(p.ctx, pk)
	if err != nil {
		return fmt.Errorf("listing the resource snapshots of placement %s: %w", keyString(pk), err)
	}
	g, ok := resourcesnapshot.Of(all).At(idx)
	if !ok {
		return validationAbort(userErr("no resourceSnapshots with index `%d` found for placement `%s`", idx, keyString(pk)))
	}
	if g.Master == nil {
		return validationAbort(unexpectedErr("no master resourceSnapshot found for placement %s", keyString(pk)))
	}
	st.ResourceSnapshotIndexUsed = strconv.Itoa(idx)
	return nil
}

// recordOverrideSnapshots freezes, for each cluster of the stages (not the
// deletion stage), the latest override snapshots that select a resource of
// the run's resource snapshot and match the cluster (spec §2.2 step 7,
// KubeFleet's recordOverrideSnapshots). Bindings take them from there and
// delivery applies exactly those, whatever the overrides become later. A
// hub without override snapshots records none.
func (p *pass) recordOverrideSnapshots(st *fleet.UpdateRunStatus) error {
	oh, ok := p.r.Hub.(hub.OverrideSnapshots)
	if !ok {
		return nil
	}
	pk := p.placementKey()
	all, err := p.r.Hub.ListResourceSnapshots(p.ctx, pk)
	if err != nil {
		return fmt.Errorf("listing the resource snapshots of placement %s: %w", keyString(pk), err)
	}
	group, _ := resourcesnapshot.Of(all).Find(st.ResourceSnapshotIndexUsed)
	selected, err := resourcesnapshot.Manifests(group.Snapshots())
	if err != nil {
		return validationAbort(unexpectedErr("%s", err))
	}
	// Overrides select what an envelope wraps, never the envelope
	// (KubeFleet's collectOverrideCandidatesFromSelectedResource).
	resources := make([]*unstructured.Unstructured, 0, len(selected))
	for _, r := range selected {
		if !fleet.IsEnvelope(r) {
			resources = append(resources, r)
			continue
		}
		wrapped, err := fleet.Unwrap(r)
		if err != nil {
			return validationAbort(unexpectedErr("%s", err))
		}
		for _, w := range wrapped {
			resources = append(resources, w.Object)
		}
	}
	placementKey := pk.Name
	if pk.Namespace != "" {
		placementKey = pk.Namespace + "/" + pk.Name
	}
	cros, ros, err := overridesnapshot.Matching(p.ctx, oh, placementKey, resources)
	if err != nil {
		return err
	}
	if len(cros) == 0 && len(ros) == 0 {
		return nil
	}
	members, err := hub.ListMemberClustersReadOnly(p.ctx, p.r.Hub)
	if err != nil {
		return fmt.Errorf("listing member clusters: %w", err)
	}
	byName := make(map[string]*fleet.MemberCluster, len(members))
	for _, m := range members {
		byName[m.Name] = m
	}
	for i := range st.StagesStatus {
		for j := range st.StagesStatus[i].Clusters {
			cs := &st.StagesStatus[i].Clusters[j]
			m, ok := byName[cs.ClusterName]
			if !ok {
				return validationAbort(fmt.Sprintf("expected behavior which can be recovered by itself: memberclusters.cluster.kubernetes-fleet.io %q not found", cs.ClusterName))
			}
			if cs.ClusterResourceOverrideSnapshots, cs.ResourceOverrideSnapshots, err = overridesnapshot.ForCluster(m, cros, ros); err != nil {
				return validationAbort(unexpectedErr("%s", err))
			}
		}
	}
	return nil
}
