package printers

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/runview"
)

// Runs prints ClusterStagedUpdateRuns/StagedUpdateRuns with KubeFleet's
// columns: NAME PLACEMENT RESOURCE-SNAPSHOT-INDEX POLICY-SNAPSHOT-INDEX
// INITIALIZED PROGRESSING SUCCEEDED AGE, and STRATEGY with -o wide.
// RESOURCE-SNAPSHOT-INDEX is the spec's index (KubeFleet's printer column is
// .spec.resourceSnapshotIndex), empty for runs that roll out the latest
// snapshot; showing the status there would break scripts written for
// KubeFleet. -o wide adds gitfleet's RESOURCE-INDEX-USED (the index the run
// rolls out, latest included), PHASE (api/v1beta1's Phase: Waiting, Stopped
// and Stuck apart), and from reconciler/runview STAGE (the current stage)
// and WAITING-FOR (the approval requests, the end of a timed wait, the
// clusters updating or stuck, spec.state, or a generation of the spec
// gitfleet has not acted on yet).
func Runs(w io.Writer, runs []*fleet.UpdateRun, now time.Time, opts Options) error {
	return printTable(w, runs, []column[*fleet.UpdateRun]{
		nameColumn[*fleet.UpdateRun](),
		{header: "PLACEMENT", cell: func(r *fleet.UpdateRun) string { return r.Spec.PlacementName }},
		{header: "RESOURCE-SNAPSHOT-INDEX", cell: func(r *fleet.UpdateRun) string { return r.Spec.ResourceSnapshotIndex }},
		{header: "POLICY-SNAPSHOT-INDEX", cell: func(r *fleet.UpdateRun) string { return r.Status.PolicySnapshotIndexUsed }},
		{header: "INITIALIZED", cell: func(r *fleet.UpdateRun) string {
			return conditionStatus(r.Status.Conditions, fleet.StagedUpdateRunConditionInitialized)
		}},
		{header: "PROGRESSING", cell: func(r *fleet.UpdateRun) string {
			return conditionStatus(r.Status.Conditions, fleet.StagedUpdateRunConditionProgressing)
		}},
		{header: "SUCCEEDED", cell: func(r *fleet.UpdateRun) string {
			return conditionStatus(r.Status.Conditions, fleet.StagedUpdateRunConditionSucceeded)
		}},
		ageColumn[*fleet.UpdateRun](now),
		{header: "STRATEGY", wide: true, cell: func(r *fleet.UpdateRun) string { return r.Spec.StagedUpdateStrategyName }},
		{header: "RESOURCE-INDEX-USED", wide: true, cell: func(r *fleet.UpdateRun) string { return r.Status.ResourceSnapshotIndexUsed }},
		{header: "PHASE", wide: true, cell: func(r *fleet.UpdateRun) string { return r.Phase() }},
		{header: "STAGE", wide: true, cell: func(r *fleet.UpdateRun) string {
			if s := runview.Of(r).Stage(); s != nil {
				return s.Name
			}
			return ""
		}},
		{header: "WAITING-FOR", wide: true, cell: func(r *fleet.UpdateRun) string { return runview.Of(r).Waiting.String() }},
	}, opts)
}

// Approvals prints ClusterApprovalRequests/ApprovalRequests: NAME UPDATE-RUN
// STAGE APPROVED AGE, KubeFleet's current columns (seeds 000/001). With -o
// wide, APPROVALACCEPTED follows APPROVED, as an older KubeFleet printed by
// default (seed 003): in gitfleet it answers "did the merged approval
// count?" — an Approved condition at the wrong generation is never accepted.
func Approvals(w io.Writer, approvals []*fleet.ApprovalRequest, now time.Time, opts Options) error {
	return printTable(w, approvals, []column[*fleet.ApprovalRequest]{
		nameColumn[*fleet.ApprovalRequest](),
		{header: "UPDATE-RUN", cell: func(a *fleet.ApprovalRequest) string { return a.Spec.TargetUpdateRun }},
		{header: "STAGE", cell: func(a *fleet.ApprovalRequest) string { return a.Spec.TargetStage }},
		{header: "APPROVED", cell: func(a *fleet.ApprovalRequest) string {
			return conditionStatus(a.Status.Conditions, fleet.ApprovalRequestConditionApproved)
		}},
		{header: "APPROVALACCEPTED", wide: true, cell: func(a *fleet.ApprovalRequest) string {
			return conditionStatus(a.Status.Conditions, fleet.ApprovalRequestConditionApprovalAccepted)
		}},
		ageColumn[*fleet.ApprovalRequest](now),
	}, opts)
}

// Snapshots prints resource snapshots: NAME GEN INDEX LATEST COMMIT AGE.
// KubeFleet shows only GEN and AGE; gitfleet adds the index and latest
// labels and the commit the snapshot was rendered from (short; full with -o
// wide). Rows are ordered by placement and index (numerically), so a
// placement's history reads top to bottom.
func Snapshots(w io.Writer, snapshots []*fleet.ResourceSnapshot, now time.Time, opts Options) error {
	commit := func(s *fleet.ResourceSnapshot) string {
		c := s.Annotations[fleet.CommitAnnotation]
		if !opts.Wide && len(c) > 7 {
			c = c[:7]
		}
		return c
	}
	return printSorted(w, snapshots, []column[*fleet.ResourceSnapshot]{
		nameColumn[*fleet.ResourceSnapshot](),
		{header: "GEN", cell: func(s *fleet.ResourceSnapshot) string { return fmt.Sprint(s.Generation) }},
		{header: "INDEX", cell: func(s *fleet.ResourceSnapshot) string { return s.Labels[fleet.ResourceIndexLabel] }},
		{header: "LATEST", cell: func(s *fleet.ResourceSnapshot) string { return s.Labels[fleet.IsLatestSnapshotLabel] }},
		{header: "COMMIT", cell: commit},
		ageColumn[*fleet.ResourceSnapshot](now),
	}, opts, snapshotLess)
}

// snapshotLess orders snapshots by namespace, placement, index, then master
// before its sub-snapshots in sub-index order; names break ties.
func snapshotLess(a, b *fleet.ResourceSnapshot) bool {
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	pa, pb := a.Labels[fleet.PlacementTrackingLabel], b.Labels[fleet.PlacementTrackingLabel]
	if pa != pb {
		return pa < pb
	}
	ia, ib := number(a.Labels[fleet.ResourceIndexLabel]), number(b.Labels[fleet.ResourceIndexLabel])
	if ia != ib {
		return ia < ib
	}
	sa, sb := number(a.Annotations[fleet.SubindexOfResourceSnapshotAnnotation]), number(b.Annotations[fleet.SubindexOfResourceSnapshotAnnotation])
	if sa != sb {
		return sa < sb
	}
	return a.Name < b.Name
}

// number parses a label value; absent or malformed sorts first.
func number(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

// Placements prints ClusterResourcePlacements/ResourcePlacements with
// KubeFleet's columns: NAME GEN SCHEDULED SCHEDULED-GEN AVAILABLE
// AVAILABLE-GEN AGE. With -o wide gitfleet adds RESOURCE-INDEX, the snapshot
// index all clusters observe (empty while they differ).
func Placements(w io.Writer, placements []*fleet.Placement, now time.Time, opts Options) error {
	cond := func(p *fleet.Placement, what string) string {
		if p.Namespace != "" {
			return "ResourcePlacement" + what
		}
		return "ClusterResourcePlacement" + what
	}
	return printTable(w, placements, []column[*fleet.Placement]{
		nameColumn[*fleet.Placement](),
		{header: "GEN", cell: func(p *fleet.Placement) string { return fmt.Sprint(p.Generation) }},
		{header: "SCHEDULED", cell: func(p *fleet.Placement) string {
			return conditionStatus(p.Status.Conditions, cond(p, "Scheduled"))
		}},
		{header: "SCHEDULED-GEN", cell: func(p *fleet.Placement) string {
			return conditionGeneration(p.Status.Conditions, cond(p, "Scheduled"))
		}},
		{header: "AVAILABLE", cell: func(p *fleet.Placement) string {
			return conditionStatus(p.Status.Conditions, cond(p, "Available"))
		}},
		{header: "AVAILABLE-GEN", cell: func(p *fleet.Placement) string {
			return conditionGeneration(p.Status.Conditions, cond(p, "Available"))
		}},
		ageColumn[*fleet.Placement](now),
		{header: "RESOURCE-INDEX", wide: true, cell: func(p *fleet.Placement) string { return p.Status.ObservedResourceIndex }},
	}, opts)
}

// Bindings prints ClusterResourceBindings/ResourceBindings with KubeFleet's
// columns: NAME WORKSYNCHRONIZED RESOURCESAPPLIED AGE; -o wide adds
// KubeFleet's RESOURCEAVAILABLE (before AGE) and gitfleet's CLUSTER, STATE
// and RESOURCE-SNAPSHOT (after it): which cluster, whether it is bound, and
// to which snapshot — the binding's name only hints at the cluster.
func Bindings(w io.Writer, bindings []*fleet.Binding, now time.Time, opts Options) error {
	return printTable(w, bindings, []column[*fleet.Binding]{
		nameColumn[*fleet.Binding](),
		{header: "WORKSYNCHRONIZED", cell: func(b *fleet.Binding) string {
			return conditionStatus(b.Status.Conditions, fleet.ResourceBindingWorkSynchronized)
		}},
		{header: "RESOURCESAPPLIED", cell: func(b *fleet.Binding) string {
			return conditionStatus(b.Status.Conditions, fleet.ResourceBindingApplied)
		}},
		{header: "RESOURCEAVAILABLE", wide: true, cell: func(b *fleet.Binding) string {
			return conditionStatus(b.Status.Conditions, fleet.ResourceBindingAvailable)
		}},
		ageColumn[*fleet.Binding](now),
		{header: "CLUSTER", wide: true, cell: func(b *fleet.Binding) string { return b.Spec.TargetCluster }},
		{header: "STATE", wide: true, cell: func(b *fleet.Binding) string { return string(b.Spec.State) }},
		{header: "RESOURCE-SNAPSHOT", wide: true, cell: func(b *fleet.Binding) string { return b.Spec.ResourceSnapshotName }},
	}, opts)
}

// MemberClusterJoined is the condition KubeFleet's JOINED column reads.
const MemberClusterJoined = "Joined"

// Clusters prints MemberClusters: NAME JOINED AGE, and with -o wide
// KubeFleet's NODE-COUNT, AVAILABLE-CPU and AVAILABLE-MEMORY (the
// properties the scheduler reads), gitfleet's DRIVER (how gitfleet reaches
// the cluster) and LABELS (what stages select on).
func Clusters(w io.Writer, clusters []*fleet.MemberCluster, now time.Time, opts Options) error {
	return printTable(w, clusters, []column[*fleet.MemberCluster]{
		nameColumn[*fleet.MemberCluster](),
		{header: "JOINED", cell: func(m *fleet.MemberCluster) string {
			return conditionStatus(m.Status.Conditions, MemberClusterJoined)
		}},
		ageColumn[*fleet.MemberCluster](now),
		{header: "NODE-COUNT", wide: true, cell: func(m *fleet.MemberCluster) string {
			return m.Status.Properties[fleet.NodeCountProperty].Value
		}},
		{header: "AVAILABLE-CPU", wide: true, cell: func(m *fleet.MemberCluster) string { return available(m, corev1.ResourceCPU) }},
		{header: "AVAILABLE-MEMORY", wide: true, cell: func(m *fleet.MemberCluster) string { return available(m, corev1.ResourceMemory) }},
		{header: "DRIVER", wide: true, cell: func(m *fleet.MemberCluster) string { return m.Annotations[fleet.DriverAnnotation] }},
		{header: "LABELS", wide: true, cell: func(m *fleet.MemberCluster) string { return labels.FormatLabels(m.Labels) }},
	}, opts)
}

// available is the member's available capacity of r, empty when it
// reports none.
func available(m *fleet.MemberCluster, r corev1.ResourceName) string {
	q, ok := m.Status.ResourceUsage.Available[r]
	if !ok {
		return ""
	}
	return q.String()
}

// Sources prints how serve follows the fleet repository, as `flux get
// sources git` does: NAME BRANCH FETCHED (the newest commit a person
// pushed that serve fetched) APPLIED (the newest commit whose manifests it
// applied; behind FETCHED while a commit does not render) READY SINCE
// (when Ready last changed: since when it fails) MESSAGE (the error while
// it fails: the fetch's, or the refused commit and its error). Commits are
// short; -o wide prints them whole and adds LAST-ERROR, kept after the
// failure ended.
func Sources(w io.Writer, sources []*fleet.GitSource, now time.Time, opts Options) error {
	commit := func(c string) string {
		if !opts.Wide && len(c) > 7 {
			return c[:7]
		}
		return c
	}
	ready := func(s *fleet.GitSource) *metav1.Condition {
		return meta.FindStatusCondition(s.Status.Conditions, fleet.GitSourceConditionReady)
	}
	return printTable(w, sources, []column[*fleet.GitSource]{
		nameColumn[*fleet.GitSource](),
		{header: "BRANCH", cell: func(s *fleet.GitSource) string { return s.Spec.Branch }},
		{header: "FETCHED", cell: func(s *fleet.GitSource) string { return commit(s.Status.LastFetchedCommit) }},
		{header: "APPLIED", cell: func(s *fleet.GitSource) string { return commit(s.Status.LastAppliedCommit) }},
		{header: "READY", cell: func(s *fleet.GitSource) string {
			return conditionStatus(s.Status.Conditions, fleet.GitSourceConditionReady)
		}},
		{header: "SINCE", cell: func(s *fleet.GitSource) string {
			if c := ready(s); c != nil {
				return Age(c.LastTransitionTime, now)
			}
			return ""
		}},
		{header: "MESSAGE", cell: func(s *fleet.GitSource) string {
			msg := ""
			if c := ready(s); c != nil {
				msg = c.Message
			}
			if r := meta.FindStatusCondition(s.Status.Conditions, fleet.GitSourceConditionReconciling); r != nil && r.Status == metav1.ConditionTrue {
				msg = r.Message + " for " + Age(r.LastTransitionTime, now) + "; " + msg
			}
			return msg
		}},
		{header: "LAST-ERROR", wide: true, cell: func(s *fleet.GitSource) string {
			if s.Status.LastError == "" || s.Status.LastErrorTime == nil {
				return ""
			}
			return Age(*s.Status.LastErrorTime, now) + " ago: " + s.Status.LastError
		}},
	}, opts)
}

// OverrideSnapshots prints ClusterResourceOverrideSnapshots and
// ResourceOverrideSnapshots (KubeFleet defines no printer columns for them;
// these follow Snapshots): the override, its index, whether it is the one
// new runs freeze, and the commit it came from.
func OverrideSnapshots(w io.Writer, snapshots []metav1.Object, now time.Time, opts Options) error {
	return printSorted(w, snapshots, []column[metav1.Object]{
		nameColumn[metav1.Object](),
		{header: "OVERRIDE", cell: func(s metav1.Object) string { return s.GetLabels()[fleet.OverrideTrackingLabel] }},
		{header: "INDEX", cell: func(s metav1.Object) string { return s.GetLabels()[fleet.OverrideIndexLabel] }},
		{header: "LATEST", cell: func(s metav1.Object) string { return s.GetLabels()[fleet.IsLatestSnapshotLabel] }},
		{header: "COMMIT", cell: func(s metav1.Object) string {
			c := s.GetAnnotations()[fleet.CommitAnnotation]
			if !opts.Wide && len(c) > 7 {
				c = c[:7]
			}
			return c
		}},
		ageColumn[metav1.Object](now),
	}, opts, func(a, b metav1.Object) bool {
		if a.GetNamespace() != b.GetNamespace() {
			return a.GetNamespace() < b.GetNamespace()
		}
		oa, ob := a.GetLabels()[fleet.OverrideTrackingLabel], b.GetLabels()[fleet.OverrideTrackingLabel]
		if oa != ob {
			return oa < ob
		}
		return number(a.GetLabels()[fleet.OverrideIndexLabel]) < number(b.GetLabels()[fleet.OverrideIndexLabel])
	})
}

// Evictions prints ClusterResourcePlacementEvictions with KubeFleet's
// columns (NAME VALID EXECUTED, no AGE: the CRD names its columns); -o
// wide adds the placement, the cluster and the message of the condition
// that decided.
func Evictions(w io.Writer, evictions []*fleet.ClusterResourcePlacementEviction, _ time.Time, opts Options) error {
	return printTable(w, evictions, []column[*fleet.ClusterResourcePlacementEviction]{
		nameColumn[*fleet.ClusterResourcePlacementEviction](),
		{header: "VALID", cell: func(e *fleet.ClusterResourcePlacementEviction) string {
			return conditionStatus(e.Status.Conditions, string(fleet.PlacementEvictionConditionTypeValid))
		}},
		{header: "EXECUTED", cell: func(e *fleet.ClusterResourcePlacementEviction) string {
			return conditionStatus(e.Status.Conditions, string(fleet.PlacementEvictionConditionTypeExecuted))
		}},
		{header: "PLACEMENT", wide: true, cell: func(e *fleet.ClusterResourcePlacementEviction) string { return e.Spec.PlacementName }},
		{header: "CLUSTER", wide: true, cell: func(e *fleet.ClusterResourcePlacementEviction) string { return e.Spec.ClusterName }},
		{header: "MESSAGE", wide: true, cell: func(e *fleet.ClusterResourcePlacementEviction) string {
			for _, t := range []fleet.PlacementEvictionConditionType{fleet.PlacementEvictionConditionTypeExecuted, fleet.PlacementEvictionConditionTypeValid} {
				if c := meta.FindStatusCondition(e.Status.Conditions, string(t)); c != nil {
					return c.Message
				}
			}
			return ""
		}},
	}, opts)
}

// Strategies prints staged update strategies: NAME and AGE, as kubectl
// prints KubeFleet's (its CRDs declare no columns), and with -o wide the
// stages in order.
func Strategies(w io.Writer, strategies []*fleet.UpdateStrategy, now time.Time, opts Options) error {
	return printTable(w, strategies, []column[*fleet.UpdateStrategy]{
		nameColumn[*fleet.UpdateStrategy](),
		ageColumn[*fleet.UpdateStrategy](now),
		{header: "STAGES", wide: true, cell: func(s *fleet.UpdateStrategy) string {
			names := make([]string, len(s.Spec.Stages))
			for i, st := range s.Spec.Stages {
				names[i] = st.Name
			}
			return strings.Join(names, ",")
		}},
	}, opts)
}
