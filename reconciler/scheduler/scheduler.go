package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strconv"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// Scheduler schedules placements onto member clusters.
type Scheduler struct {
	Hub   hub.Hub
	Clock clock.Clock
	// Log is optional (slog.Default when nil).
	Log *slog.Logger
}

// log is Log as given (serve's says controller=scheduler), or the default
// logger naming the component.
func (s *Scheduler) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default().With("component", "scheduler")
}

// Schedule brings the placement's latest policy snapshot, its bindings and
// the snapshot's decisions in line with its policy and the fleet. It is
// idempotent: when nothing changed it writes nothing. For a placement that
// no longer exists, its bindings become Unscheduled (resources stay on the
// members; nothing is deleted without a run). Hub errors, including
// conflicts, are returned for a retry.
func (s *Scheduler) Schedule(ctx context.Context, key hub.Key) error {
	p, err := s.Hub.GetPlacement(ctx, key)
	if hub.IsNotFound(err) {
		return s.unscheduleAll(ctx, key)
	}
	if err != nil {
		return err
	}
	snap, err := s.latestPolicySnapshot(ctx, p)
	if err != nil {
		return err
	}
	members, err := s.Hub.ListMemberClusters(ctx)
	if err != nil {
		return fmt.Errorf("list member clusters: %w", err)
	}
	bindings, err := s.Hub.ListBindings(ctx, key)
	if err != nil {
		return fmt.Errorf("list the bindings of %s: %w", key, err)
	}

	held := holding{}
	for _, b := range bindings {
		if b.DeletionTimestamp == nil && b.Spec.State != fleet.BindingStateUnscheduled {
			held[b.Spec.TargetCluster] = b.Spec.SchedulingPolicySnapshotName == snap.Name
		}
	}
	count := 0
	if v, ok := snap.Annotations[fleet.NumberOfClustersAnnotation]; ok {
		if count, err = strconv.Atoi(v); err != nil {
			return fmt.Errorf("policy snapshot %s: invalid %s %q", snap.Name, fleet.NumberOfClustersAnnotation, v)
		}
	}
	verdict, err := decide(snap.Spec.Policy, count, members, held, s.Clock.Now())
	if err != nil {
		return fmt.Errorf("schedule %s: %w", key, err)
	}

	selected, err := s.reconcileBindings(ctx, p, snap, bindings, verdict)
	if err != nil {
		return err
	}
	return s.updateSnapshotStatus(ctx, p, snap, verdict, selected)
}

// reconcileBindings creates, re-points, restores and unschedules bindings
// so that exactly the picked clusters hold a Scheduled or Bound binding on
// the latest snapshot. It returns the decisions of those bindings.
func (s *Scheduler) reconcileBindings(ctx context.Context, p *fleet.Placement, snap *fleet.PolicySnapshot,
	bindings []*fleet.Binding, verdict pick) ([]fleet.ClusterDecision, error) {
	log := s.log().With("placement", hub.KeyString(hub.Key{Namespace: p.Namespace, Name: p.Name}))
	covered := map[string]bool{}
	var selected []fleet.ClusterDecision
	for _, b := range bindings {
		cluster := b.Spec.TargetCluster
		if covered[cluster] {
			continue
		}
		covered[cluster] = true
		if b.DeletionTimestamp != nil {
			// Its removal is under way; a new binding follows once it is gone.
			continue
		}
		decision, picked := verdict.picked[cluster]
		next := b.DeepCopy()
		switch {
		case picked && b.Spec.State == fleet.BindingStateUnscheduled:
			next.Spec.State = fleet.BindingState(b.Annotations[PreviousBindingStateAnnotation])
			if next.Spec.State == "" || next.Spec.State == fleet.BindingStateUnscheduled {
				next.Spec.State = fleet.BindingStateScheduled
			}
			delete(next.Annotations, PreviousBindingStateAnnotation)
			next.Spec.SchedulingPolicySnapshotName = snap.Name
			next.Spec.ClusterDecision = decision
		case picked && b.Spec.SchedulingPolicySnapshotName != snap.Name:
			next.Spec.SchedulingPolicySnapshotName = snap.Name
			next.Spec.ClusterDecision = decision
		case picked:
			// Already on the latest snapshot: the decision stays as it was
			// made, so a label change does not rewrite (and re-generate) a
			// binding a run may be rolling out.
		case b.Spec.State != fleet.BindingStateUnscheduled:
			if next.Annotations == nil {
				next.Annotations = map[string]string{}
			}
			next.Annotations[PreviousBindingStateAnnotation] = string(b.Spec.State)
			next.Spec.State = fleet.BindingStateUnscheduled
		}
		if picked {
			selected = append(selected, next.Spec.ClusterDecision)
		}
		if equality.Semantic.DeepEqual(b, next) {
			continue
		}
		if err := s.Hub.UpdateBinding(ctx, next); err != nil {
			return nil, fmt.Errorf("update binding %s: %w", b.Name, err)
		}
		log.Info("binding updated", "binding", b.Name, "cluster", cluster,
			"state", next.Spec.State, "policy_snapshot", next.Spec.SchedulingPolicySnapshotName)
	}

	for _, cluster := range sortedClusters(verdict.picked) {
		if covered[cluster] {
			continue
		}
		b := &fleet.Binding{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: p.Namespace,
				Name:      BindingName(p.Name, cluster),
				Labels:    map[string]string{fleet.PlacementTrackingLabel: p.Name},
			},
			Spec: fleet.ResourceBindingSpec{
				State:                        fleet.BindingStateScheduled,
				SchedulingPolicySnapshotName: snap.Name,
				TargetCluster:                cluster,
				ClusterDecision:              verdict.picked[cluster],
			},
		}
		if err := s.Hub.CreateBinding(ctx, b); err != nil {
			return nil, fmt.Errorf("create binding %s: %w", b.Name, err)
		}
		log.Info("binding created", "binding", b.Name, "cluster", cluster, "policy_snapshot", snap.Name)
		selected = append(selected, b.Spec.ClusterDecision)
	}
	sort.Slice(selected, func(i, j int) bool { return selected[i].ClusterName < selected[j].ClusterName })
	return selected, nil
}

// updateSnapshotStatus records the decisions and the Scheduled condition
// on the policy snapshot, writing only when they changed.
func (s *Scheduler) updateSnapshotStatus(ctx context.Context, p *fleet.Placement, snap *fleet.PolicySnapshot,
	verdict pick, selected []fleet.ClusterDecision) error {
	next := snap.DeepCopy()
	next.Status.ObservedCRPGeneration = p.Generation
	next.Status.ClusterDecisions = append(append([]fleet.ClusterDecision(nil), selected...), verdict.unselected...)
	cond := metav1.Condition{Type: fleet.PolicySnapshotScheduled, ObservedGeneration: snap.Generation,
		Status: metav1.ConditionTrue, Reason: FullyScheduledReason, Message: fmt.Sprintf(fullyScheduledMessage, len(selected))}
	if len(selected) != verdict.want {
		cond.Status, cond.Reason = metav1.ConditionFalse, NotFullyScheduledReason
		cond.Message = fmt.Sprintf(notFullyScheduledMessage, len(selected))
	}
	setCondition(&next.Status.Conditions, cond, s.Clock.Now())
	if equality.Semantic.DeepEqual(snap.Status, next.Status) {
		return nil
	}
	if err := s.Hub.UpdatePolicySnapshot(ctx, next); err != nil {
		return fmt.Errorf("update the status of policy snapshot %s: %w", snap.Name, err)
	}
	return nil
}

// unscheduleAll marks every binding of a deleted placement Unscheduled.
func (s *Scheduler) unscheduleAll(ctx context.Context, key hub.Key) error {
	bindings, err := s.Hub.ListBindings(ctx, key)
	if err != nil {
		return fmt.Errorf("list the bindings of %s: %w", key, err)
	}
	for _, b := range bindings {
		if b.DeletionTimestamp != nil || b.Spec.State == fleet.BindingStateUnscheduled {
			continue
		}
		if b.Annotations == nil {
			b.Annotations = map[string]string{}
		}
		b.Annotations[PreviousBindingStateAnnotation] = string(b.Spec.State)
		b.Spec.State = fleet.BindingStateUnscheduled
		if err := s.Hub.UpdateBinding(ctx, b); err != nil {
			return fmt.Errorf("unschedule binding %s: %w", b.Name, err)
		}
		s.log().Info("placement is gone; binding unscheduled", "placement", hub.KeyString(key), "binding", b.Name)
	}
	return nil
}

func sortedClusters(m map[string]fleet.ClusterDecision) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
