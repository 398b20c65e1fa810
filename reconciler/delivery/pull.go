package delivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

// The work transport: a member annotated gitfleet.io/driver: work is not
// reached by gitfleet at all. Its Works are written to the hub, in the
// member's namespace fleet-member-<cluster>, for an agent on the member
// to pull, apply and report on in their status; the binding's conditions
// are made from that status (Status). Only a hub that stores Works
// (WorkStore: the kube hub) serves such members.

// WorkStore is implemented by hubs that keep the Works of members that
// pull them.
type WorkStore interface {
	// ListWorks returns the Works of binding in cluster's namespace.
	ListWorks(ctx context.Context, cluster string, binding hub.Key) ([]*fleet.Work, error)
	// ApplyWorks makes binding's Works in cluster's namespace exactly
	// works: creating, updating and deleting; changed says whether any
	// Work's spec, labels or annotations changed.
	ApplyWorks(ctx context.Context, cluster string, binding hub.Key, works []*fleet.Work) (changed bool, err error)
	// DeleteWorks deletes binding's Works in cluster's namespace; left is
	// how many are still there (being deleted: an agent's finalizer holds
	// them until it removed what they applied).
	DeleteWorks(ctx context.Context, cluster string, binding hub.Key) (left int, err error)
}

// pulls reports whether m's agent pulls its Works.
func pulls(m *fleet.MemberCluster) bool {
	return m.Annotations[fleet.DriverAnnotation] == fleet.DriverWork
}

// WorkChanged tells the controller that a Work of binding changed or was
// deleted (an agent reported on it): the binding's conditions are made
// again from its Works, or, when it is terminating, its removal goes on.
func (c *Controller) WorkChanged(w *fleet.Work) {
	name, ok := w.Labels[fleet.ParentBindingLabel]
	if !ok {
		return
	}
	key := hub.Key{Namespace: w.Labels[fleet.ParentNamespaceLabel], Name: name}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, pending := c.pending[key]; !pending {
		c.queueLocked(refreshIntent, key)
	}
}

// deliverWorks writes b's Works for m's agent and reports on b from what
// the agent reported on them.
func (c *Controller) deliverWorks(ctx context.Context, b *fleet.Binding, m *fleet.MemberCluster, src Sources, log *slog.Logger) error {
	key, gen := keyOf(b), b.Generation
	store, ok := c.hub.(WorkStore)
	if !ok {
		return c.ReportBindingStatus(key, gen, []metav1.Condition{member.Overridden(b), member.WorkSynchronized(gen),
			{Type: fleet.ResourceBindingApplied, Status: metav1.ConditionFalse, Reason: member.DriverNotConfiguredReason, ObservedGeneration: gen,
				Message: fmt.Sprintf("member cluster %q uses driver %q, which only a Kubernetes hub serves (serve --hub kube): "+
					"its agent pulls its Works from there", m.Name, fleet.DriverWork)}}, member.Placements{})
	}
	works, failed := Works(b, m, src)
	if failed != nil {
		log.Warn("not delivering", "condition", failed.Type, "reason", failed.Message)
		return c.ReportBindingStatus(key, gen, []metav1.Condition{*failed}, member.Placements{})
	}
	changed, err := store.ApplyWorks(ctx, m.Name, key, works)
	if err != nil {
		wrapped := fmt.Errorf("write the works of binding %s for member cluster %q: %w", hub.KeyString(key), m.Name, err)
		if !refusedForGood(err) {
			return wrapped
		}
		// Said on the binding as KubeFleet's work generator says it (the
		// run fails the cluster), and tried again all the same: a policy
		// lifted or a permission granted lets it through.
		log.Warn("the hub refuses the binding's works", "err", err.Error())
		return errors.Join(wrapped, c.ReportBindingStatus(key, gen,
			[]metav1.Condition{member.Overridden(b), member.NotSynchronized(b, err.Error())}, member.Placements{}))
	}
	if changed {
		log.Debug("works written", "works", len(works))
		return c.ReportBindingStatus(key, gen, InProgress(b), member.Placements{})
	}
	stored, err := store.ListWorks(ctx, m.Name, key)
	if err != nil {
		return err
	}
	conds, p := Status(b, stored)
	return c.ReportBindingStatus(key, gen, conds, p)
}

// RolloutStarting folds into b, whose status write is about to start its
// rollout (RolloutStarted decided at its generation, nothing else
// reported there yet), the report delivery would write right after that
// write wakes it, when that report is sure: b's member pulls, and the
// Works made of b can be made and differ from those on the hub, so
// delivery writes them and reports InProgress (KubeFleet's work
// generator's Overridden, WorkSynchronized and Applied=False
// ApplyInProgress, or DiffReported=False DiffReportInProgress, at the new
// generation). The hub writes both in one status write, not two; when
// delivery then writes the Works, its report changes nothing and is not
// written. Anything else (a member gitfleet reaches, Works that cannot be
// made or do not change, a read that fails) leaves b as it is, and
// delivery reports as it does without the fold.
func (c *Controller) RolloutStarting(ctx context.Context, b *fleet.Binding) {
	if b.DeletionTimestamp != nil || !deliverable(b) || reportedAt(b) {
		return
	}
	store, ok := c.hub.(WorkStore)
	if !ok {
		return
	}
	m, err := c.member(ctx, b.Spec.TargetCluster)
	if err != nil || m == nil || !pulls(m) {
		return
	}
	src, err := Lookup(ctx, c.hub, b)
	if err != nil {
		return
	}
	works, failed := Works(b, m, src)
	if failed != nil {
		return
	}
	stored, err := store.ListWorks(ctx, m.Name, keyOf(b))
	if err != nil || !WorksChange(stored, works) {
		return
	}
	if next := member.MergeReport(b, b.Generation, InProgress(b), member.Placements{}, c.clock.Now()); next != nil {
		b.Status = next.Status
	}
}

// reportedAt reports whether b has a condition other than RolloutStarted
// at its generation: delivery reported on it already.
func reportedAt(b *fleet.Binding) bool {
	for _, c := range b.Status.Conditions {
		if c.Type != fleet.ResourceBindingRolloutStarted && c.ObservedGeneration == b.Generation {
			return true
		}
	}
	return false
}

// WorksChange reports whether making a binding's Works want, where the
// hub holds have, writes any: a Work created, deleted, or not SameWork.
func WorksChange(have, want []*fleet.Work) bool {
	if len(have) != len(want) {
		return true
	}
	byName := make(map[string]*fleet.Work, len(have))
	for _, w := range have {
		byName[w.Name] = w
	}
	for _, w := range want {
		if cur, ok := byName[w.Name]; !ok || !SameWork(cur, w) {
			return true
		}
	}
	return false
}

// SameWork reports whether the Work cur, as the hub holds it, is want:
// the same spec, labels and annotations (its status and finalizers are
// its agent's).
func SameWork(cur, want *fleet.Work) bool {
	return equality.Semantic.DeepEqual(cur.Spec, want.Spec) && equality.Semantic.DeepEqual(cur.Labels, want.Labels) &&
		equality.Semantic.DeepEqual(cur.Annotations, want.Annotations)
}

// removeWorks deletes b's Works; done says whether none is left, so the
// binding may go.
func (c *Controller) removeWorks(ctx context.Context, b *fleet.Binding, cluster string) (done bool, err error) {
	store, ok := c.hub.(WorkStore)
	if !ok {
		return true, nil
	}
	left, err := store.DeleteWorks(ctx, cluster, keyOf(b))
	if err != nil {
		return false, fmt.Errorf("delete the works of binding %s for member cluster %q: %w", hub.KeyString(keyOf(b)), cluster, err)
	}
	return left == 0, nil
}

// refusedForGood reports whether the hub refused a Work write for a reason
// that trying again does not cure by itself: the Work is invalid or too
// large, or an admission policy or missing permission forbids it. A
// conflict, a timeout or an unavailable API server is only retried.
func refusedForGood(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsRequestEntityTooLargeError(err) || apierrors.IsForbidden(err)
}
