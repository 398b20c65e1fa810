package v1beta1

// Labels and annotations KubeFleet puts on its objects (spec §1.5–§1.7, §5.1).
const (
	FleetPrefix = "kubernetes-fleet.io/"

	// PlacementTrackingLabel names the placement that owns a snapshot or
	// binding. KubeFleet uses the same key for ResourcePlacements.
	PlacementTrackingLabel = FleetPrefix + "parent-CRP"
	// IsLatestSnapshotLabel marks the latest policy snapshot and the master of
	// the latest resource snapshot group.
	IsLatestSnapshotLabel = FleetPrefix + "is-latest-snapshot"
	// PolicyIndexLabel is the index of a scheduling policy snapshot.
	PolicyIndexLabel = FleetPrefix + "policy-index"
	// ResourceIndexLabel is the index of a resource snapshot group.
	ResourceIndexLabel = FleetPrefix + "resource-index"

	// NumberOfClustersAnnotation is the PickN target count on a policy snapshot.
	NumberOfClustersAnnotation = FleetPrefix + "number-of-clusters"
	// ResourceGroupHashAnnotation is the hash of a snapshot group's selected
	// resources; its presence identifies the master snapshot.
	ResourceGroupHashAnnotation = FleetPrefix + "resource-hash"
	// NumberOfResourceSnapshotsAnnotation is the size of a snapshot group.
	NumberOfResourceSnapshotsAnnotation = FleetPrefix + "number-of-resource-snapshots"
	// NumberOfEnvelopedObjectsAnnotation counts enveloped objects in a group.
	NumberOfEnvelopedObjectsAnnotation = FleetPrefix + "number-of-enveloped-object"
	// SubindexOfResourceSnapshotAnnotation is set on sub-snapshots.
	SubindexOfResourceSnapshotAnnotation = FleetPrefix + "subindex-of-resource-snapshot"

	// Approval request labels; all four are set at creation.
	TargetUpdatingStageNameLabel   = FleetPrefix + "targetUpdatingStage"
	TargetUpdateRunLabel           = FleetPrefix + "targetUpdateRun"
	TaskTypeLabel                  = FleetPrefix + "taskType"
	IsLatestUpdateRunApprovalLabel = FleetPrefix + "isLatestUpdateRunApproval"

	// Task type label values.
	BeforeStageTaskLabelValue = "beforeStage"
	AfterStageTaskLabelValue  = "afterStage"

	// UpdateRunFinalizer is added to every run.
	UpdateRunFinalizer = FleetPrefix + "stagedupdaterun-finalizer"
	// UpdateRunDeleteStageName names the deletion stage.
	UpdateRunDeleteStageName = FleetPrefix + "deleteStage"
	// DeleteStageShortName stands for the deletion stage where its name
	// cannot: in the name of its approval request
	// (<run>-before-delete-stage) and in the targetUpdatingStage label. A
	// strategy's stage cannot be called so (stage names have no dash).
	DeleteStageShortName = "delete-stage"

	// BeforeStageApprovalTaskNameFmt and AfterStageApprovalTaskNameFmt build
	// approval request names from the run and stage names.
	BeforeStageApprovalTaskNameFmt = "%s-before-%s"
	AfterStageApprovalTaskNameFmt  = "%s-after-%s"

	// ResourceSnapshotNameFmt is the master snapshot name
	// (<placement>-<index>-snapshot); sub-snapshots use
	// ResourceSnapshotSubNameFmt.
	ResourceSnapshotNameFmt    = "%s-%d-snapshot"
	ResourceSnapshotSubNameFmt = "%s-%d-%d"
	// PolicySnapshotNameFmt is <placement>-<index>.
	PolicySnapshotNameFmt = "%s-%d"

	// DefaultRevisionHistoryLimit bounds the resource snapshot groups kept.
	DefaultRevisionHistoryLimit = 10
)

// gitfleet's own annotations.
const (
	GitfleetPrefix = "gitfleet.io/"

	// CommitAnnotation records the commit a resource snapshot was rendered from.
	CommitAnnotation = GitfleetPrefix + "commit"
	// CommitLabel is the same commit as a label, so that `kubectl get
	// clusterresourcesnapshots --show-labels` on a Kubernetes hub shows it
	// beside the index (absent for a hash longer than a label value).
	CommitLabel = GitfleetPrefix + "commit"
	// RemovedResourcesAnnotation on the master of a resource snapshot group
	// counts the selected resources the previous index of the same
	// placement had and this one has not ("1"): a run that rolls the group
	// out deletes them from its clusters. Absent when nothing is removed
	// (and on the first index).
	RemovedResourcesAnnotation = GitfleetPrefix + "removed-resources"
	// DriverAnnotation on a MemberCluster names how gitfleet reaches it:
	// "simulated", "kubeconfig:<context>", or "work" (an agent on the
	// member pulls its Works from a Kubernetes hub).
	DriverAnnotation = GitfleetPrefix + "driver"
	// SimAvailableAfterAnnotation delays a simulated member's Available.
	SimAvailableAfterAnnotation = GitfleetPrefix + "sim-available-after"
	// SimUnavailableAnnotation makes a simulated member never available (the
	// seeds' stuck scenario: the placement status lists failed placements
	// with KubeFleet's messages); the value is a note for people, such as
	// "image pull failure", and is not interpreted.
	SimUnavailableAnnotation = GitfleetPrefix + "sim-unavailable"
	// RejectedChangeAnnotation on an object's status file says why what
	// people wrote in Git was not taken: a spec change the API server would
	// refuse, a manifest that no longer renders, an approval request file a
	// commit broke. The hub keeps its last accepted version meanwhile.
	RejectedChangeAnnotation = GitfleetPrefix + "rejected-change"
	// ApprovedByAnnotation on an approval request says who approved it in
	// Git: the author of the commit that changed its file, a person's merge
	// of gitfleet's approval branch made with --no-ff (a fast-forward
	// leaves gitfleet's own commit, so gitfleet is named), as
	// "Alice <alice@example.com> (merge commit abc1234)". KubeFleet's
	// ApprovalRequest has no approver field, and the Approved condition's
	// message is the person's own.
	ApprovedByAnnotation = GitfleetPrefix + "approved-by"

	DriverSimulated        = "simulated"
	DriverKubeconfigPrefix = "kubeconfig:"
	DriverWork             = "work"

	// PruneAnnotation set to PruneDisabled on a workload object keeps it on
	// the member clusters when it leaves the resource snapshot (deleted
	// from Git, or no longer selected) and when a cluster leaves the
	// placement. FluxPruneAnnotation is Flux's spelling of the same wish,
	// honoured alike so manifests written for Flux keep their meaning.
	PruneAnnotation     = GitfleetPrefix + "prune"
	FluxPruneAnnotation = "kustomize.toolkit.fluxcd.io/prune"
	PruneDisabled       = "disabled"
)
