package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// The v1alpha1 staged update runs and strategies, as KubeFleet's
// apis/placement/v1alpha1/stagedupdate_types.go declares them (markers
// copied). Only their shape matters: gitfleet reads every version as
// api/v1beta1's types, and the API server stores v1beta1. Types of
// api/v1beta1 are reused where KubeFleet's v1alpha1 schema is the same
// (apply strategy, cluster and task status). What v1alpha1 lacks against
// v1beta1: a run's state (its whole spec is immutable) and
// resourceSnapshotIndexUsed, a stage's before-stage tasks and
// maxConcurrency, the task rules; its waitTime may be "0" and its run names
// 127 characters long. The doc comments below become the CRDs'
// descriptions.

// ClusterStagedUpdateStrategy groups member clusters into ordered stages
// for cluster staged update runs.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=csus,categories={fleet,fleet-placement}
// +kubebuilder:subresource:status
type ClusterStagedUpdateStrategy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:validation:Required
	Spec StagedUpdateStrategySpec `json:"spec"`
}

// StagedUpdateStrategySpec lists the stages, executed strictly in order.
type StagedUpdateStrategySpec struct {
	// +kubebuilder:validation:MaxItems=31
	// +kubebuilder:validation:Required
	Stages []StageConfig `json:"stages"`
}

// StageConfig selects the clusters of one stage and the tasks after it.
type StageConfig struct {
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern="^[a-z0-9]+$"
	// +kubebuilder:validation:Required
	Name string `json:"name"`
	// +kubebuilder:validation:Optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// +kubebuilder:validation:Optional
	SortingLabelKey *string `json:"sortingLabelKey,omitempty"`
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:Optional
	AfterStageTasks []AfterStageTask `json:"afterStageTasks,omitempty"`
}

// AfterStageTask is a gate after a stage.
type AfterStageTask struct {
	// +kubebuilder:validation:Enum=TimedWait;Approval
	// +kubebuilder:validation:Required
	Type fleet.StageTaskType `json:"type"`
	// +kubebuilder:validation:Pattern="^(?:0|(?:(?:0|[1-9][0-9]*)(\\.[0-9]+)?(?:s|m|h))+)$"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Optional
	WaitTime metav1.Duration `json:"waitTime,omitempty"`
}

// ClusterStagedUpdateRun rolls a resource snapshot of a
// ClusterResourcePlacement out stage by stage.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=csur,categories={fleet,fleet-placement}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:JSONPath=`.spec.placementName`,name="Placement",type=string
// +kubebuilder:printcolumn:JSONPath=`.spec.resourceSnapshotIndex`,name="Resource-Snapshot-Index",type=string
// +kubebuilder:printcolumn:JSONPath=`.status.policySnapshotIndexUsed`,name="Policy-Snapshot-Index",type=string
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="Initialized")].status`,name="Initialized",type=string
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="Succeeded")].status`,name="Succeeded",type=string
// +kubebuilder:printcolumn:JSONPath=`.metadata.creationTimestamp`,name="Age",type=date
// +kubebuilder:printcolumn:JSONPath=`.spec.stagedRolloutStrategyName`,name="Strategy",priority=1,type=string
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) < 128",message="metadata.name max length is 127"
type ClusterStagedUpdateRun struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:validation:Required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="The spec field is immutable"
	Spec StagedUpdateRunSpec `json:"spec"`
	// +kubebuilder:validation:Optional
	Status StagedUpdateRunStatus `json:"status,omitempty"`
}

// StagedUpdateRunSpec is immutable.
type StagedUpdateRunSpec struct {
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MaxLength=255
	PlacementName string `json:"placementName"`
	// +kubebuilder:validation:Required
	ResourceSnapshotIndex string `json:"resourceSnapshotIndex"`
	// +kubebuilder:validation:Required
	StagedUpdateStrategyName string `json:"stagedRolloutStrategyName"`
}

// StagedUpdateRunStatus is the plan frozen at initialization plus the
// progress.
type StagedUpdateRunStatus struct {
	// +kubebuilder:validation:Optional
	PolicySnapshotIndexUsed string `json:"policySnapshotIndexUsed,omitempty"`
	// +kubebuilder:validation:Optional
	PolicyObservedClusterCount int `json:"policyObservedClusterCount,omitempty"`
	// +kubebuilder:validation:Optional
	ApplyStrategy *fleet.ApplyStrategy `json:"appliedStrategy,omitempty"`
	// +kubebuilder:validation:Optional
	StagedUpdateStrategySnapshot *StagedUpdateStrategySpec `json:"stagedUpdateStrategySnapshot,omitempty"`
	// +kubebuilder:validation:Optional
	StagesStatus []StageUpdatingStatus `json:"stagesStatus,omitempty"`
	// +kubebuilder:validation:Optional
	DeletionStageStatus *StageUpdatingStatus `json:"deletionStageStatus,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:Optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// StageUpdatingStatus is the progress of one stage.
type StageUpdatingStatus struct {
	// +kubebuilder:validation:Required
	StageName string `json:"stageName"`
	// +kubebuilder:validation:Required
	Clusters []fleet.ClusterUpdatingStatus `json:"clusters"`
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:Optional
	AfterStageTaskStatus []fleet.StageTaskStatus `json:"afterStageTaskStatus,omitempty"`
	// +kubebuilder:validation:Optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +kubebuilder:validation:Optional
	EndTime *metav1.Time `json:"endTime,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:Optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
