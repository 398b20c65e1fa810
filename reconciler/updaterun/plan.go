package updaterun

import (
	"fmt"
	"sort"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// The helpers in this file derive a run's plan from the hub: the placement,
// its latest policy snapshot, its bindings and the stages. Initialization
// records what they derive; validation derives it again on every pass and
// compares (spec §2.2, §2.3). They write into a status so that a failing
// initialization persists everything derived before the failure.

// keyString prints a key the way KubeFleet's messages do: "<ns>/<name>",
// so a cluster-scoped object prints as "/<name>".
func keyString(k hub.Key) string { return k.Namespace + "/" + k.Name }

// objRef prints an object like klog.KObj: "<name>" or "<ns>/<name>".
func objRef(m metav1.Object) string {
	if m.GetNamespace() == "" {
		return m.GetName()
	}
	return m.GetNamespace() + "/" + m.GetName()
}

func (p *pass) placementKey() hub.Key {
	return hub.Key{Namespace: p.run.Namespace, Name: p.run.Spec.PlacementName}
}

// checkPlacement verifies the placement exists and hands rollouts to runs,
// and records its defaulted apply strategy (spec §2.2 step 1).
func (p *pass) checkPlacement(st *fleet.UpdateRunStatus) (*fleet.Placement, error) {
	pl, err := p.r.Hub.GetPlacement(p.ctx, p.placementKey())
	if hub.IsNotFound(err) {
		return nil, validationAbort(userErr("parent placement not found"))
	}
	if err != nil {
		return nil, fmt.Errorf("reading placement %s: %w", keyString(p.placementKey()), err)
	}
	t := pl.Spec.Strategy.Type
	if t == "" {
		t = fleet.RollingUpdateRolloutStrategyType
	}
	if t != fleet.ExternalRolloutStrategyType {
		return nil, validationAbort(userErr("parent placement does not have an external rollout strategy, current strategy: %s", t))
	}
	st.AppliedStrategy = fleet.DefaultApplyStrategy(pl.Spec.Strategy.ApplyStrategy)
	return pl, nil
}

// latestPolicySnapshot finds the placement's latest policy snapshot and
// records its index and cluster count (spec §2.2 step 2). The count is -1
// for PickAll; the bindings decide it.
func (p *pass) latestPolicySnapshot(st *fleet.UpdateRunStatus) (*fleet.PolicySnapshot, int, error) {
	pk := p.placementKey()
	all, err := p.r.Hub.ListPolicySnapshots(p.ctx, pk)
	if err != nil {
		return nil, -1, fmt.Errorf("listing the policy snapshots of placement %s: %w", keyString(pk), err)
	}
	var latest []*fleet.PolicySnapshot
	for _, s := range all {
		if s.Labels[fleet.IsLatestSnapshotLabel] == "true" {
			latest = append(latest, s)
		}
	}
	switch {
	case len(latest) == 0:
		return nil, -1, validationAbort(fmt.Sprintf("no latest policy snapshot found for placement %s", keyString(pk)))
	case len(latest) > 1:
		return nil, -1, validationAbort(unexpectedErr("multiple active policy snapshots found for placement %s: got %d, want 1", keyString(pk), len(latest)))
	}
	snap := latest[0]
	idx := snap.Labels[fleet.PolicyIndexLabel]
	if idx == "" {
		return nil, -1, validationAbort(unexpectedErr("policy snapshot `%s/%s` does not have a policy index label", snap.Namespace, snap.Name))
	}
	st.PolicySnapshotIndexUsed = idx

	count := -1
	if pol := snap.Spec.Policy; pol != nil {
		switch pol.PlacementType {
		case fleet.PickNPlacementType:
			n, err := numberOfClusters(snap)
			if err != nil {
				// KubeFleet joins this one with ", " instead of ": ".
				return nil, -1, fmt.Errorf("%w: %s, %s", errAborted, validationFailedMsg,
					unexpectedErr("%s: the policy snapshot `%s/%s` doesn't have valid cluster count annotation", err, snap.Namespace, snap.Name))
			}
			count = n
		case fleet.PickFixedPlacementType:
			count = len(pol.ClusterNames)
		}
	}
	st.PolicyObservedClusterCount = count
	if !isTrue(find(snap.Status.Conditions, fleet.PolicySnapshotScheduled), snap.Generation) {
		return nil, -1, validationAbort(fmt.Sprintf("policy snapshot `%s` not fully scheduled yet", snap.Name))
	}
	return snap, count, nil
}

func numberOfClusters(s *fleet.PolicySnapshot) (int, error) {
	v, ok := s.Annotations[fleet.NumberOfClustersAnnotation]
	if !ok {
		return 0, fmt.Errorf("cannot find annotation %s", fleet.NumberOfClustersAnnotation)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid annotation %s: %s is not a valid count: %w", fleet.NumberOfClustersAnnotation, v, err)
	}
	return n, nil
}

// collectBindings splits the placement's bindings into the ones to update
// and the ones to delete (spec §2.2 step 3).
func (p *pass) collectBindings(snap *fleet.PolicySnapshot, st *fleet.UpdateRunStatus) (selected, toDelete []*fleet.Binding, err error) {
	pk := p.placementKey()
	all, err := p.r.Hub.ListBindings(p.ctx, pk)
	if err != nil {
		return nil, nil, fmt.Errorf("listing the bindings of placement %s: %w", keyString(pk), err)
	}
	for _, b := range all {
		if b.Spec.SchedulingPolicySnapshotName == snap.Name {
			if b.Spec.State == fleet.BindingStateUnscheduled {
				toDelete = append(toDelete, b)
			} else {
				selected = append(selected, b)
			}
			continue
		}
		if b.Spec.State != fleet.BindingStateUnscheduled {
			// Retriable: the scheduler is moving bindings to the new snapshot.
			return nil, nil, fmt.Errorf("binding `%s/%s` with old policy snapshot `%s/%s` has state %s, we might observe a transient state, need retry",
				b.Namespace, b.Name, b.Namespace, b.Spec.SchedulingPolicySnapshotName, b.Spec.State)
		}
		toDelete = append(toDelete, b)
	}
	if len(selected) == 0 && len(toDelete) == 0 {
		return nil, nil, validationAbort(fmt.Sprintf("no scheduled or to-be-deleted bindings found for the latest policy snapshot %s/%s", snap.Namespace, snap.Name))
	}
	if st.PolicyObservedClusterCount == -1 {
		st.PolicyObservedClusterCount = len(selected)
	} else if st.PolicyObservedClusterCount != len(selected) {
		return nil, nil, validationAbort(unexpectedErr("the number of selected bindings %d is not equal to the observed cluster count %d", len(selected), st.PolicyObservedClusterCount))
	}
	return selected, toDelete, nil
}

// computeStages places the selected clusters into the stages of the
// recorded strategy snapshot, in order (spec §2.2 step 5).
func (p *pass) computeStages(selected []*fleet.Binding, st *fleet.UpdateRunStatus) error {
	strategy := st.StagedUpdateStrategySnapshot
	strategyKey := keyString(hub.Key{Namespace: p.run.Namespace, Name: p.run.Spec.StagedUpdateStrategyName})
	members, err := hub.ListMemberClustersReadOnly(p.ctx, p.r.Hub)
	if err != nil {
		return fmt.Errorf("listing member clusters: %w", err)
	}
	p.memberWindows = memberWindows(members)
	scheduled := make(map[string]bool, len(selected))
	for _, b := range selected {
		scheduled[b.Spec.TargetCluster] = true
	}
	placed := make(map[string]bool, len(selected))
	stages := make([]fleet.StageUpdatingStatus, len(strategy.Stages))
	for i := range strategy.Stages {
		cfg := &strategy.Stages[i]
		if err := validateBeforeStageTasks(cfg.BeforeStageTasks); err != nil {
			return validationAbort(userErr("the before stage tasks are invalid, updateStrategy: `%s`, stage: %s, err: %s", strategyKey, cfg.Name, err))
		}
		if err := validateAfterStageTasks(cfg.AfterStageTasks); err != nil {
			return validationAbort(userErr("the after stage tasks are invalid, updateStrategy: `%s`, stage: %s, err: %s", strategyKey, cfg.Name, err))
		}
		sel := labels.Nothing()
		if cfg.LabelSelector != nil {
			if sel, err = metav1.LabelSelectorAsSelector(cfg.LabelSelector); err != nil {
				return validationAbort(userErr("the stage label selector is invalid, updateStrategy: `%s`, stage: %s, err: %s", strategyKey, cfg.Name, err))
			}
		}
		type member struct {
			name string
			sort int
		}
		var in []member
		for _, m := range members {
			if !scheduled[m.Name] || !sel.Matches(labels.Set(m.Labels)) {
				continue
			}
			if placed[m.Name] {
				return validationAbort(userErr("cluster `%s` appears in more than one stages", m.Name))
			}
			placed[m.Name] = true
			mm := member{name: m.Name}
			if cfg.SortingLabelKey != nil {
				v := m.Labels[*cfg.SortingLabelKey]
				n, err := strconv.Atoi(v)
				if err != nil {
					return validationAbort(userErr("the sorting label `%s:%s` on cluster `%s` is not valid: %s", *cfg.SortingLabelKey, v, m.Name, err))
				}
				mm.sort = n
			}
			in = append(in, mm)
		}
		sort.SliceStable(in, func(a, b int) bool {
			if in[a].sort != in[b].sort {
				return in[a].sort < in[b].sort
			}
			return in[a].name < in[b].name
		})
		s := fleet.StageUpdatingStatus{StageName: cfg.Name, Clusters: make([]fleet.ClusterUpdatingStatus, len(in))}
		for j, m := range in {
			// Override snapshots are recorded once the resource
			// snapshot is known (recordOverrideSnapshots).
			s.Clusters[j] = fleet.ClusterUpdatingStatus{ClusterName: m.name}
		}
		for _, t := range cfg.BeforeStageTasks {
			ts := fleet.StageTaskStatus{Type: t.Type}
			if opensRequest(t.Type) {
				ts.ApprovalRequestName = fmt.Sprintf(fleet.BeforeStageApprovalTaskNameFmt, p.run.Name, cfg.Name)
			}
			s.BeforeStageTaskStatus = append(s.BeforeStageTaskStatus, ts)
		}
		for _, t := range cfg.AfterStageTasks {
			ts := fleet.StageTaskStatus{Type: t.Type}
			if opensRequest(t.Type) {
				ts.ApprovalRequestName = fmt.Sprintf(fleet.AfterStageApprovalTaskNameFmt, p.run.Name, cfg.Name)
			}
			s.AfterStageTaskStatus = append(s.AfterStageTaskStatus, ts)
		}
		stages[i] = s
	}
	if del := strategy.DeleteStage; del != nil {
		if err := validateDeleteStageTasks(del.BeforeStageTasks); err != nil {
			return validationAbort(userErr("the before stage tasks are invalid, updateStrategy: `%s`, stage: %s, err: %s", strategyKey, fleet.UpdateRunDeleteStageName, err))
		}
	}
	if err := p.leaveOutUnmatched(scheduled, placed, st); err != nil {
		return err
	}
	st.StagesStatus = stages
	return nil
}

// deletionStage lists the clusters whose bindings the run deletes last,
// sorted by name; the list is empty, never nil, so it prints as []. The
// strategy's deleteStage tasks get their statuses, as an update stage's.
func (p *pass) deletionStage(toDelete []*fleet.Binding, strategy *fleet.UpdateStrategySpec) *fleet.StageUpdatingStatus {
	names := make([]string, 0, len(toDelete))
	for _, b := range toDelete {
		names = append(names, b.Spec.TargetCluster)
	}
	sort.Strings(names)
	s := &fleet.StageUpdatingStatus{StageName: fleet.UpdateRunDeleteStageName, Clusters: make([]fleet.ClusterUpdatingStatus, len(names))}
	for i, n := range names {
		s.Clusters[i] = fleet.ClusterUpdatingStatus{ClusterName: n}
	}
	if strategy != nil && strategy.DeleteStage != nil {
		for _, t := range strategy.DeleteStage.BeforeStageTasks {
			ts := fleet.StageTaskStatus{Type: t.Type}
			if t.Type == fleet.StageTaskTypeApproval {
				ts.ApprovalRequestName = ApprovalRequestName(p.run.Name, s.StageName, fleet.BeforeStageTaskLabelValue)
			}
			s.BeforeStageTaskStatus = append(s.BeforeStageTaskStatus, ts)
		}
	}
	return s
}

// opensRequest reports whether a task of type t is decided on an approval
// request: Approval, and gitfleet's Metric (a gate that approves it).
func opensRequest(t fleet.StageTaskType) bool {
	return t == fleet.StageTaskTypeApproval || t == fleet.StageTaskTypeMetric
}

// validateDeleteStageTasks: the deletion stage's gate is a person's.
func validateDeleteStageTasks(tasks []fleet.StageTask) error {
	for i, t := range tasks {
		if t.Type == fleet.StageTaskTypeMetric {
			return fmt.Errorf("task %d of type Metric is not allowed in the delete stage's beforeStageTasks, allowed type: Approval", i)
		}
	}
	return validateBeforeStageTasks(tasks)
}

func validateBeforeStageTasks(tasks []fleet.StageTask) error {
	if len(tasks) > 1 {
		return fmt.Errorf("beforeStageTasks can have at most one task")
	}
	for i, t := range tasks {
		if t.Type == fleet.StageTaskTypeMetric {
			if t.Metric == nil {
				return fmt.Errorf("task %d of type Metric has no metric block", i)
			}
			continue
		}
		if t.Type != fleet.StageTaskTypeApproval {
			return fmt.Errorf("task %d of type %s is not allowed in beforeStageTasks, allowed type: Approval", i, t.Type)
		}
		if t.WaitTime != nil {
			return fmt.Errorf("task %d of type Approval cannot have wait duration set", i)
		}
	}
	return nil
}

func validateAfterStageTasks(tasks []fleet.StageTask) error {
	if len(tasks) == 2 && tasks[0].Type == tasks[1].Type {
		return fmt.Errorf("afterStageTasks cannot have two tasks of the same type: %s", tasks[0].Type)
	}
	if len(tasks) == 2 && opensRequest(tasks[0].Type) && opensRequest(tasks[1].Type) {
		return fmt.Errorf("afterStageTasks cannot have both an Approval and a Metric task: they would share one approval request")
	}
	for i, t := range tasks {
		if t.Type == fleet.StageTaskTypeMetric && t.Metric == nil {
			return fmt.Errorf("task %d of type Metric has no metric block", i)
		}
		if t.Type != fleet.StageTaskTypeTimedWait {
			continue
		}
		if t.WaitTime == nil {
			return fmt.Errorf("task %d of type TimedWait has wait duration set to nil", i)
		}
		if t.WaitTime.Duration <= 0 {
			return fmt.Errorf("task %d of type TimedWait has wait duration <= 0", i)
		}
	}
	return nil
}
