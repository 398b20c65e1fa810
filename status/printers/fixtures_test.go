package printers

import (
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// The seed demo (seed 003, newest names): member2 is staging; member3
// (order=1) and member1 (order=2) are canary; strategy staging → TimedWait
// 1m, canary → Approval. Times follow the seed's timeline.
var (
	created = time.Date(2025, 7, 22, 21, 28, 8, 0, time.UTC)
	now     = created.Add(5*time.Minute + 28*time.Second)
)

func at(d time.Duration) metav1.Time { return metav1.NewTime(created.Add(d)) }

func cond(typ string, status metav1.ConditionStatus, reason, msg string, d time.Duration) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: 1, LastTransitionTime: at(d)}
}

func objMeta(name string, d time.Duration) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Generation: 1, CreationTimestamp: at(d)}
}

func clusterDone(name string, start, end time.Duration) fleet.ClusterUpdatingStatus {
	return fleet.ClusterUpdatingStatus{ClusterName: name, Conditions: []metav1.Condition{
		cond("Started", "True", "ClusterUpdatingStarted", "Cluster update started", start),
		cond("Succeeded", "True", "ClusterUpdatingSucceeded", "Cluster update completed successfully", end),
	}}
}

func demoStrategy() *fleet.UpdateStrategySpec {
	order := "order"
	return &fleet.UpdateStrategySpec{Stages: []fleet.StageConfig{
		{Name: "staging", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"environment": "staging"}},
			AfterStageTasks: []fleet.StageTask{{Type: fleet.StageTaskTypeTimedWait, WaitTime: &metav1.Duration{Duration: time.Minute}}}},
		{Name: "canary", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"environment": "canary"}},
			SortingLabelKey: &order, AfterStageTasks: []fleet.StageTask{{Type: fleet.StageTaskTypeApproval}}},
	}}
}

// waitingRun is example-run waiting for example-run-after-canary.
func waitingRun() *fleet.UpdateRun {
	one := intstr.FromInt32(1)
	strategy := demoStrategy()
	for i := range strategy.Stages {
		strategy.Stages[i].MaxConcurrency = &one
	}
	r := &fleet.UpdateRun{
		ObjectMeta: objMeta("example-run", 0),
		Spec: fleet.UpdateRunSpec{PlacementName: "example-placement", ResourceSnapshotIndex: "1",
			StagedUpdateStrategyName: "example-strategy", State: fleet.StateRun},
		Status: fleet.UpdateRunStatus{
			PolicySnapshotIndexUsed: "0", PolicyObservedClusterCount: 3, ResourceSnapshotIndexUsed: "1",
			AppliedStrategy: &fleet.ApplyStrategy{Type: fleet.ApplyStrategyTypeClientSideApply, ComparisonOption: fleet.ComparisonOptionTypePartialComparison,
				WhenToApply: fleet.WhenToApplyTypeAlways, WhenToTakeOver: fleet.WhenToTakeOverTypeAlways},
			StagedUpdateStrategySnapshot: strategy,
			StagesStatus: []fleet.StageUpdatingStatus{
				{
					StageName: "staging",
					Clusters:  []fleet.ClusterUpdatingStatus{clusterDone("member2", 0, 15*time.Second)},
					AfterStageTaskStatus: []fleet.StageTaskStatus{{Type: fleet.StageTaskTypeTimedWait, Conditions: []metav1.Condition{
						cond("WaitTimeElapsed", "True", "AfterStageTaskWaitTimeElapsed", "Wait time elapsed", 75*time.Second)}}},
					StartTime: ptr(at(0)), EndTime: ptr(at(75 * time.Second)),
					Conditions: []metav1.Condition{
						cond("Progressing", "False", "StageUpdatingSucceeded", "All clusters in the stage are updated and after-stage tasks are completed", 15*time.Second),
						cond("Succeeded", "True", "StageUpdatingSucceeded", "Stage update completed successfully", 75*time.Second),
					},
				},
				{
					StageName: "canary",
					Clusters:  []fleet.ClusterUpdatingStatus{clusterDone("member3", 75*time.Second, 90*time.Second), clusterDone("member1", 90*time.Second, 105*time.Second)},
					AfterStageTaskStatus: []fleet.StageTaskStatus{{Type: fleet.StageTaskTypeApproval, ApprovalRequestName: "example-run-after-canary",
						Conditions: []metav1.Condition{cond("ApprovalRequestCreated", "True", "StageTaskApprovalRequestCreated", "ApprovalRequest object is created", 105*time.Second)}}},
					StartTime: ptr(at(75 * time.Second)),
					Conditions: []metav1.Condition{
						cond("Progressing", "False", "StageUpdatingWaiting", "All clusters in the stage are updated, waiting for after-stage tasks to complete", 105*time.Second),
					},
				},
			},
			DeletionStageStatus: &fleet.StageUpdatingStatus{StageName: fleet.UpdateRunDeleteStageName, Clusters: []fleet.ClusterUpdatingStatus{}},
			Conditions: []metav1.Condition{
				cond("Initialized", "True", "UpdateRunInitializedSuccessfully", "The UpdateRun initialized successfully", 0),
				cond("Progressing", "False", "UpdateRunWaiting", "The updateRun is waiting for after-stage tasks in stage canary to complete", 105*time.Second),
			},
		},
	}
	r.Finalizers = []string{fleet.UpdateRunFinalizer}
	return r
}

// succeededRun is example-run after the canary approval.
func succeededRun() *fleet.UpdateRun {
	r := waitingRun()
	canary := &r.Status.StagesStatus[1]
	canary.AfterStageTaskStatus[0].Conditions = append(canary.AfterStageTaskStatus[0].Conditions,
		cond("ApprovalRequestApproved", "True", "StageTaskApprovalRequestApproved", "ApprovalRequest object is approved", 180*time.Second))
	canary.EndTime = ptr(at(180 * time.Second))
	canary.Conditions = []metav1.Condition{
		cond("Progressing", "False", "StageUpdatingSucceeded", "All clusters in the stage are updated and after-stage tasks are completed", 105*time.Second),
		cond("Succeeded", "True", "StageUpdatingSucceeded", "Stage update completed successfully", 180*time.Second),
	}
	del := r.Status.DeletionStageStatus
	del.StartTime, del.EndTime = ptr(at(180*time.Second)), ptr(at(180*time.Second))
	del.Conditions = []metav1.Condition{
		cond("Progressing", "False", "StageUpdatingSucceeded", "All clusters in the stage are updated and after-stage tasks are completed", 180*time.Second),
		cond("Succeeded", "True", "StageUpdatingSucceeded", "Stage update completed successfully", 180*time.Second),
	}
	r.Status.Conditions = []metav1.Condition{
		cond("Initialized", "True", "UpdateRunInitializedSuccessfully", "The UpdateRun initialized successfully", 0),
		cond("Progressing", "False", "UpdateRunSucceeded", "All stages are completed", 180*time.Second),
		cond("Succeeded", "True", "UpdateRunSucceeded", "All stages are completed successfully", 180*time.Second),
	}
	return r
}

func ptr[T any](v T) *T { return &v }

func approvalRequest(run, stage string, d time.Duration, approved bool) *fleet.ApprovalRequest {
	a := &fleet.ApprovalRequest{
		ObjectMeta: objMeta(fmt.Sprintf(fleet.AfterStageApprovalTaskNameFmt, run, stage), d),
		Spec:       fleet.ApprovalRequestSpec{TargetUpdateRun: run, TargetStage: stage},
	}
	a.Labels = map[string]string{fleet.TargetUpdatingStageNameLabel: stage, fleet.TargetUpdateRunLabel: run,
		fleet.TaskTypeLabel: fleet.AfterStageTaskLabelValue, fleet.IsLatestUpdateRunApprovalLabel: "true"}
	if approved {
		a.Status.Conditions = []metav1.Condition{
			cond("Approved", "True", "ClusterApprovalRequestApproved", "ClusterApprovalRequest has been approved", d+time.Minute),
			cond("ApprovalAccepted", "True", "ApprovalRequestApprovalAccepted", "The approval request has been approved and cannot be reverted", d+time.Minute),
		}
	}
	return a
}

func resourceSnapshot(index, sub int, latest bool, commit string, d time.Duration) *fleet.ResourceSnapshot {
	s := &fleet.ResourceSnapshot{ObjectMeta: objMeta(fmt.Sprintf(fleet.ResourceSnapshotNameFmt, "example-placement", index), d)}
	s.Labels = map[string]string{fleet.PlacementTrackingLabel: "example-placement", fleet.ResourceIndexLabel: fmt.Sprint(index)}
	if sub >= 0 {
		s.Name = fmt.Sprintf(fleet.ResourceSnapshotSubNameFmt, "example-placement", index, sub)
		s.Annotations = map[string]string{fleet.SubindexOfResourceSnapshotAnnotation: fmt.Sprint(sub)}
	} else {
		s.Labels[fleet.IsLatestSnapshotLabel] = fmt.Sprint(latest)
		s.Annotations = map[string]string{fleet.CommitAnnotation: commit, fleet.ResourceGroupHashAnnotation: "10dd7a3d1e5f9849"}
	}
	raw, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "test-cm", "namespace": "test-namespace"}, "data": map[string]any{"key": "value" + fmt.Sprint(index+1)}})
	s.Spec.SelectedResources = []runtime.RawExtension{{Raw: raw}}
	return s
}

func demoSnapshots() []*fleet.ResourceSnapshot {
	return []*fleet.ResourceSnapshot{
		resourceSnapshot(10, -1, false, "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b", 4*time.Minute),
		resourceSnapshot(1, -1, true, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4", -2*time.Minute),
		resourceSnapshot(1, 1, false, "", -2*time.Minute),
		resourceSnapshot(0, -1, false, "2c26b46b68ffc68ff99b453c1d30413413422d70", -4*time.Minute),
	}
}

func binding(cluster, suffix string, applied bool) *fleet.Binding {
	b := &fleet.Binding{ObjectMeta: objMeta("example-placement-"+cluster+"-"+suffix, -3*time.Minute)}
	b.Labels = map[string]string{fleet.PlacementTrackingLabel: "example-placement"}
	b.Spec = fleet.ResourceBindingSpec{State: fleet.BindingStateScheduled, TargetCluster: cluster, SchedulingPolicySnapshotName: "example-placement-0",
		ClusterDecision: fleet.ClusterDecision{ClusterName: cluster, Selected: true, Reason: "picked by scheduling policy"}}
	if applied {
		b.Spec.State = fleet.BindingStateBound
		b.Spec.ResourceSnapshotName = "example-placement-1-snapshot"
		b.Status.Conditions = []metav1.Condition{
			cond("RolloutStarted", "True", "RolloutStarted", "Detected the new changes on the resources and started the rollout process, resourceSnapshotIndex: 1, updateRun: example-run", time.Minute),
			cond("WorkSynchronized", "True", "AllWorkSynced", "All of the works are synchronized to the latest", time.Minute),
			cond("Applied", "True", "AllWorkHaveBeenApplied", "All corresponding work objects are applied", time.Minute),
			cond("Available", "False", "NotAllWorkAreAvailable", "Work object example-placement-work is not yet available", time.Minute),
		}
	}
	return b
}

func demoPlacement() *fleet.Placement {
	p := &fleet.Placement{ObjectMeta: objMeta("example-placement", -8*time.Minute)}
	p.Spec = fleet.PlacementSpec{ResourceSelectors: []fleet.ResourceSelectorTerm{{Group: "", Version: "v1", Kind: "Namespace", Name: "test-namespace"}},
		Policy: &fleet.PlacementPolicy{PlacementType: fleet.PickAllPlacementType}, Strategy: fleet.RolloutStrategy{Type: fleet.ExternalRolloutStrategyType}}
	p.Status = fleet.PlacementStatus{ObservedResourceIndex: "1", Conditions: []metav1.Condition{
		cond("ClusterResourcePlacementScheduled", "True", "SchedulingPolicyFulfilled", "found all cluster needed as specified by the scheduling policy, found 3 cluster(s)", 0),
		cond("ClusterResourcePlacementAvailable", "True", "ResourceAvailable", "The selected resources are available on 3 cluster(s)", 3*time.Minute),
	}}
	return p
}

func memberCluster(name string, labels map[string]string, joined bool) *fleet.MemberCluster {
	m := &fleet.MemberCluster{ObjectMeta: objMeta(name, -time.Hour)}
	m.Labels = labels
	m.Annotations = map[string]string{fleet.DriverAnnotation: fleet.DriverSimulated}
	if joined {
		m.Status.Conditions = []metav1.Condition{cond("Joined", "True", "MemberClusterJoined", "", -time.Hour)}
	}
	return m
}

// withProperties gives m the node count and available capacity a property
// collector reports.
func withProperties(m *fleet.MemberCluster, nodes, cpu, memory string) *fleet.MemberCluster {
	m.Status.Properties = map[fleet.PropertyName]fleet.PropertyValue{fleet.NodeCountProperty: {Value: nodes}}
	m.Status.ResourceUsage.Available = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	return m
}
