package status

import (
	"encoding/json"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// t0 is the fixtures' creation time; whole seconds, as the tree stores them.
var t0 = time.Date(2026, 1, 9, 1, 49, 6, 0, time.UTC)

func at(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }

func cond(typ string, status metav1.ConditionStatus, reason, msg string, d time.Duration) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: 1, LastTransitionTime: at(d)}
}

func objMeta(name, ns string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, Generation: 1, CreationTimestamp: at(0)}
}

// waitingRun is the seed demo's run, waiting for the after-canary approval.
func waitingRun(ns string) *fleet.UpdateRun {
	one := intstr.FromInt32(1)
	return &fleet.UpdateRun{
		ObjectMeta: objMeta("example-run", ns, nil),
		Spec: fleet.UpdateRunSpec{PlacementName: "example-placement", ResourceSnapshotIndex: "1",
			StagedUpdateStrategyName: "example-strategy", State: fleet.StateRun},
		Status: fleet.UpdateRunStatus{
			PolicySnapshotIndexUsed: "0", PolicyObservedClusterCount: 3, ResourceSnapshotIndexUsed: "1",
			AppliedStrategy: &fleet.ApplyStrategy{Type: fleet.ApplyStrategyTypeClientSideApply,
				ComparisonOption: fleet.ComparisonOptionTypePartialComparison, WhenToApply: fleet.WhenToApplyTypeAlways,
				WhenToTakeOver: fleet.WhenToTakeOverTypeAlways},
			StagedUpdateStrategySnapshot: &fleet.UpdateStrategySpec{Stages: []fleet.StageConfig{
				{Name: "canary", MaxConcurrency: &one, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"environment": "canary"}},
					AfterStageTasks: []fleet.StageTask{{Type: fleet.StageTaskTypeApproval}}},
			}},
			StagesStatus: []fleet.StageUpdatingStatus{{
				StageName: "canary",
				Clusters: []fleet.ClusterUpdatingStatus{{ClusterName: "member1", Conditions: []metav1.Condition{
					cond("Started", "True", "ClusterUpdatingStarted", "Cluster update started", time.Minute),
					cond("Succeeded", "True", "ClusterUpdatingSucceeded", "Cluster update completed successfully", 2*time.Minute),
				}}},
				AfterStageTaskStatus: []fleet.StageTaskStatus{{Type: fleet.StageTaskTypeApproval, ApprovalRequestName: "example-run-after-canary",
					Conditions: []metav1.Condition{cond("ApprovalRequestCreated", "True", "StageTaskApprovalRequestCreated", "ApprovalRequest object is created", 2*time.Minute)}}},
				StartTime:  ptrTime(at(time.Minute)),
				Conditions: []metav1.Condition{cond("Progressing", "False", "StageUpdatingWaiting", "All clusters in the stage are updated, waiting for after-stage tasks to complete", 2*time.Minute)},
			}},
			DeletionStageStatus: &fleet.StageUpdatingStatus{StageName: fleet.UpdateRunDeleteStageName, Clusters: []fleet.ClusterUpdatingStatus{}},
			Conditions: []metav1.Condition{
				cond("Initialized", "True", "UpdateRunInitializedSuccessfully", "The UpdateRun initialized successfully", 0),
				cond("Progressing", "False", "UpdateRunWaiting", "The updateRun is waiting for after-stage tasks in stage canary to complete", 2*time.Minute),
			},
		},
	}
}

func ptrTime(t metav1.Time) *metav1.Time { return &t }

func approval(ns string) *fleet.ApprovalRequest {
	return &fleet.ApprovalRequest{
		ObjectMeta: objMeta("example-run-after-canary", ns, map[string]string{
			fleet.TargetUpdatingStageNameLabel: "canary", fleet.TargetUpdateRunLabel: "example-run",
			fleet.TaskTypeLabel: fleet.AfterStageTaskLabelValue, fleet.IsLatestUpdateRunApprovalLabel: "true"}),
		Spec: fleet.ApprovalRequestSpec{TargetUpdateRun: "example-run", TargetStage: "canary"},
	}
}

func snapshot(ns string, index int, sub int) *fleet.ResourceSnapshot {
	name := fmt.Sprintf(fleet.ResourceSnapshotNameFmt, "example-placement", index)
	s := &fleet.ResourceSnapshot{ObjectMeta: objMeta(name, ns, map[string]string{
		fleet.PlacementTrackingLabel: "example-placement", fleet.ResourceIndexLabel: fmt.Sprint(index)})}
	if sub >= 0 {
		s.Name = fmt.Sprintf(fleet.ResourceSnapshotSubNameFmt, "example-placement", index, sub)
		s.Annotations = map[string]string{fleet.SubindexOfResourceSnapshotAnnotation: fmt.Sprint(sub)}
	} else {
		s.Labels[fleet.IsLatestSnapshotLabel] = "true"
		s.Annotations = map[string]string{fleet.ResourceGroupHashAnnotation: "10dd7a3d", fleet.CommitAnnotation: "0123456789abcdef0123456789abcdef01234567"}
	}
	raw, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "test-cm", "namespace": "test-namespace"}, "data": map[string]any{"key": "value2"}})
	s.Spec.SelectedResources = []runtime.RawExtension{{Raw: raw}}
	return s
}

func policySnapshot(ns string) *fleet.PolicySnapshot {
	return &fleet.PolicySnapshot{
		ObjectMeta: objMeta("example-placement-0", ns, map[string]string{fleet.PlacementTrackingLabel: "example-placement",
			fleet.PolicyIndexLabel: "0", fleet.IsLatestSnapshotLabel: "true"}),
		Spec:   fleet.SchedulingPolicySnapshotSpec{Policy: &fleet.PlacementPolicy{PlacementType: fleet.PickAllPlacementType}, PolicyHash: []byte("hash")},
		Status: fleet.SchedulingPolicySnapshotStatus{ObservedCRPGeneration: 1, Conditions: []metav1.Condition{cond("Scheduled", "True", "SchedulingPolicyFulfilled", "found all cluster needed", 0)}},
	}
}

func binding(ns, cluster string) *fleet.Binding {
	return &fleet.Binding{
		ObjectMeta: objMeta("example-placement-"+cluster+"-e1a567da", ns, map[string]string{fleet.PlacementTrackingLabel: "example-placement"}),
		Spec: fleet.ResourceBindingSpec{State: fleet.BindingStateBound, ResourceSnapshotName: "example-placement-1-snapshot",
			SchedulingPolicySnapshotName: "example-placement-0", TargetCluster: cluster,
			ClusterDecision: fleet.ClusterDecision{ClusterName: cluster, Selected: true, Reason: "picked by scheduling policy"}},
		Status: fleet.ResourceBindingStatus{Conditions: []metav1.Condition{cond("Available", "True", "AllWorkAreAvailable", "All corresponding work objects are available", time.Minute)}},
	}
}

func placement(ns string) *fleet.Placement {
	return &fleet.Placement{
		ObjectMeta: objMeta("example-placement", ns, nil),
		Spec: fleet.PlacementSpec{ResourceSelectors: []fleet.ResourceSelectorTerm{{Group: "", Version: "v1", Kind: "Namespace", Name: "test-namespace"}},
			Policy: &fleet.PlacementPolicy{PlacementType: fleet.PickAllPlacementType}, Strategy: fleet.RolloutStrategy{Type: fleet.ExternalRolloutStrategyType}},
		Status: fleet.PlacementStatus{ObservedResourceIndex: "1"},
	}
}

func strategy(ns string) *fleet.UpdateStrategy {
	return &fleet.UpdateStrategy{ObjectMeta: objMeta("example-strategy", ns, nil),
		Spec: fleet.UpdateStrategySpec{Stages: []fleet.StageConfig{{Name: "canary", LabelSelector: &metav1.LabelSelector{}}}}}
}

func member(name string) *fleet.MemberCluster {
	return &fleet.MemberCluster{ObjectMeta: objMeta(name, "", map[string]string{"environment": "canary"})}
}

// allKinds returns one object of each of the 15 fleet kinds.
func allKinds() []runtime.Object {
	var out []runtime.Object
	for _, ns := range []string{"", "team-a"} {
		out = append(out, waitingRun(ns), approval(ns), snapshot(ns, 1, -1), policySnapshot(ns), binding(ns, "member1"), placement(ns), strategy(ns))
	}
	return append(out, member("member1"), clusterOverrideSnapshot(), overrideSnapshot())
}

// overridePolicy patches a label on every cluster, with a variable.
func overridePolicy() *fleet.OverridePolicy {
	return &fleet.OverridePolicy{OverrideRules: []fleet.OverrideRule{{
		ClusterSelector: &fleet.ClusterSelector{ClusterSelectorTerms: []fleet.ClusterSelectorTerm{}},
		OverrideType:    fleet.JSONPatchOverrideType,
		JSONPatchOverrides: []fleet.JSONPatchOverride{{Operator: fleet.JSONPatchOverrideOpAdd, Path: "/metadata/labels",
			Value: apiextensionsv1.JSON{Raw: []byte(`{"env":"${MEMBER-CLUSTER-LABEL-KEY-environment}"}`)}}},
	}}}
}

func clusterOverrideSnapshot() *fleet.ClusterResourceOverrideSnapshot {
	return &fleet.ClusterResourceOverrideSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: "env-label-0", Labels: map[string]string{
			fleet.OverrideTrackingLabel: "env-label", fleet.OverrideIndexLabel: "0", fleet.IsLatestSnapshotLabel: "true"}},
		Spec: fleet.ClusterResourceOverrideSnapshotSpec{
			OverrideSpec: fleet.ClusterResourceOverrideSpec{
				Placement:                &fleet.PlacementRef{Name: "example-placement", Scope: fleet.ClusterScoped},
				ClusterResourceSelectors: []fleet.ResourceSelectorTerm{{Version: "v1", Kind: "Namespace", Name: "app"}},
				Policy:                   overridePolicy(),
			},
			OverrideHash: []byte("0123abcd"),
		},
	}
}

func overrideSnapshot() *fleet.ResourceOverrideSnapshot {
	return &fleet.ResourceOverrideSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: "config-1", Namespace: "app", Labels: map[string]string{
			fleet.OverrideTrackingLabel: "config", fleet.OverrideIndexLabel: "1", fleet.IsLatestSnapshotLabel: "false"}},
		Spec: fleet.ResourceOverrideSnapshotSpec{
			OverrideSpec: fleet.ResourceOverrideSpec{
				ResourceSelectors: []fleet.ResourceSelector{{Version: "v1", Kind: "ConfigMap", Name: "settings"}},
				Policy:            overridePolicy(),
			},
			OverrideHash: []byte("4567cdef"),
		},
	}
}
