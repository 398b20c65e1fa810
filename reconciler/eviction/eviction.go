// Package eviction executes ClusterResourcePlacementEvictions as KubeFleet's
// eviction controller does (pkg/controllers/clusterresourceplacementeviction
// at e160c1cd): an eviction is checked against its placement and the
// placement's bindings, then, as the placement's
// ClusterResourcePlacementDisruptionBudget allows, the binding on the
// evicted cluster is deleted, which removes the placement's resources from
// that cluster. The conditions, reasons and messages are upstream's.
//
// An eviction is executed once: Valid=False and any Executed condition are
// terminal, and such an eviction is never looked at again (an eviction the
// budget blocked is not retried; a person re-creates it). Nothing keeps the
// scheduler from picking the cluster again, as upstream: a PickN placement
// is rescheduled, maybe onto the same cluster, a PickAll placement picks
// every matching cluster again (taint the cluster first to keep it out).
package eviction

import (
	"context"
	"fmt"
	"log/slog"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/scheduler"
)

// Hub is what the eviction controller reads and writes.
type Hub interface {
	hub.Placements
	hub.Bindings
	hub.Evictions
}

// Reconciler executes evictions.
type Reconciler struct {
	Hub   Hub
	Clock clock.Clock
	// Log is optional.
	Log *slog.Logger
}

// Result says what a pass did: Evicted names the binding whose deletion it
// started (its placement is rescheduled once the binding is gone).
type Result struct {
	Evicted *hub.Key
	// Placement is the evicted binding's placement.
	Placement hub.Key
}

func (r *Reconciler) log() *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return slog.New(slog.DiscardHandler)
}

// Reconcile takes one eviction through validation and execution. A missing
// eviction or one in a terminal state is left alone. Hub errors are
// returned for a retry; a Conflict on the status write too (the binding's
// deletion, if started, is idempotent).
func (r *Reconciler) Reconcile(ctx context.Context, key hub.Key) (Result, error) {
	e, err := r.Hub.GetEviction(ctx, key)
	if hub.IsNotFound(err) {
		return Result{}, nil
	}
	if err != nil {
		return Result{}, err
	}
	if e.IsTerminal() {
		return Result{}, nil
	}
	v, err := r.validate(ctx, e)
	if err != nil {
		return Result{}, err
	}
	var res Result
	if v.valid {
		r.mark(e, fleet.PlacementEvictionConditionTypeValid, true, fleet.EvictionValidMessage)
		if res, err = r.execute(ctx, e, v); err != nil {
			return Result{}, err
		}
	}
	if err := r.Hub.UpdateEvictionStatus(ctx, e); err != nil {
		return res, fmt.Errorf("update the status of eviction %s: %w", e.Name, err)
	}
	r.log().Info("eviction done", "eviction", e.Name, "placement", e.Spec.PlacementName,
		"cluster", e.Spec.ClusterName, "conditions", summary(e))
	return res, nil
}

// validation is what validate found.
type validation struct {
	valid     bool
	placement *fleet.Placement
	target    *fleet.Binding
	bindings  []*fleet.Binding
}

// validate checks the eviction's placement and binding; an invalid
// eviction gets Valid=False with upstream's message.
func (r *Reconciler) validate(ctx context.Context, e *fleet.ClusterResourcePlacementEviction) (validation, error) {
	invalid := func(msg string) (validation, error) {
		r.mark(e, fleet.PlacementEvictionConditionTypeValid, false, msg)
		return validation{}, nil
	}
	pkey := hub.Key{Name: e.Spec.PlacementName}
	p, err := r.Hub.GetPlacement(ctx, pkey)
	if hub.IsNotFound(err) {
		return invalid(fleet.EvictionInvalidMissingCRPMessage)
	}
	if err != nil {
		return validation{}, err
	}
	if p.DeletionTimestamp != nil {
		return invalid(fleet.EvictionInvalidDeletingCRPMessage)
	}
	if placementType(p) == fleet.PickFixedPlacementType {
		return invalid(fleet.EvictionInvalidPickFixedCRPMessage)
	}
	bindings, err := r.Hub.ListBindings(ctx, pkey)
	if err != nil {
		return validation{}, err
	}
	var target *fleet.Binding
	for _, b := range bindings {
		if b.Spec.TargetCluster != e.Spec.ClusterName {
			continue
		}
		if target != nil {
			return invalid(fleet.EvictionInvalidMultipleCRBMessage)
		}
		target = b
	}
	if target == nil {
		return invalid(fleet.EvictionInvalidMissingCRBMessage)
	}
	return validation{valid: true, placement: p, target: target, bindings: bindings}, nil
}

// execute deletes the target binding when the budget allows, and records
// Executed either way.
func (r *Reconciler) execute(ctx context.Context, e *fleet.ClusterResourcePlacementEviction, v validation) (Result, error) {
	executed := func(msg string) { r.mark(e, fleet.PlacementEvictionConditionTypeExecuted, true, msg) }
	blocked := func(msg string) { r.mark(e, fleet.PlacementEvictionConditionTypeExecuted, false, msg) }
	target := v.target
	if target.DeletionTimestamp != nil {
		executed(fleet.EvictionAllowedPlacementRemovedMessage)
		return Result{}, nil
	}
	if !PlacementPresent(target) {
		blocked(fleet.EvictionBlockedMissingPlacementMessage)
		return Result{}, nil
	}
	evict := func(msg string) (Result, error) {
		key := hub.Key{Namespace: target.Namespace, Name: target.Name}
		if err := r.Hub.DeleteBinding(ctx, key); err != nil && !hub.IsNotFound(err) {
			return Result{}, fmt.Errorf("delete binding %s: %w", target.Name, err)
		}
		executed(msg)
		return Result{Evicted: &key, Placement: hub.Key{Name: v.placement.Name}}, nil
	}
	if BindingFailed(target) || diffReported(target) {
		return evict(fleet.EvictionAllowedPlacementFailedMessage)
	}
	budget, err := r.Hub.GetDisruptionBudget(ctx, hub.Key{Name: v.placement.Name})
	if hub.IsNotFound(err) {
		return evict(fleet.EvictionAllowedNoPDBMessage)
	}
	if err != nil {
		return Result{}, err
	}
	if placementType(v.placement) == fleet.PickAllPlacementType && MisconfiguredForPickAll(budget) {
		blocked(fleet.EvictionBlockedMisconfiguredPDBSpecifiedMessage)
		return Result{}, nil
	}
	allowed, available := Allowed(v.bindings, v.placement, budget)
	if !allowed {
		blocked(fmt.Sprintf(fleet.EvictionBlockedPDBSpecifiedMessageFmt, available, len(v.bindings)))
		return Result{}, nil
	}
	return evict(fmt.Sprintf(fleet.EvictionAllowedPDBSpecifiedMessageFmt, available, len(v.bindings)))
}

// mark sets one of the eviction's conditions, with upstream's reason.
func (r *Reconciler) mark(e *fleet.ClusterResourcePlacementEviction, t fleet.PlacementEvictionConditionType, ok bool, msg string) {
	c := metav1.Condition{Type: string(t), ObservedGeneration: e.Generation, Message: msg,
		LastTransitionTime: metav1.NewTime(r.Clock.Now().UTC().Truncate(1e9))}
	switch {
	case t == fleet.PlacementEvictionConditionTypeValid && ok:
		c.Status, c.Reason = metav1.ConditionTrue, fleet.EvictionValidReason
	case t == fleet.PlacementEvictionConditionTypeValid:
		c.Status, c.Reason = metav1.ConditionFalse, fleet.EvictionInvalidReason
	case ok:
		c.Status, c.Reason = metav1.ConditionTrue, fleet.EvictionExecutedReason
	default:
		c.Status, c.Reason = metav1.ConditionFalse, fleet.EvictionNotExecutedReason
	}
	e.SetConditions(c)
}

func summary(e *fleet.ClusterResourcePlacementEviction) string {
	s := ""
	for _, c := range e.Status.Conditions {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("%s=%s: %s", c.Type, c.Status, c.Message)
	}
	return s
}

// placementType is the placement's type, PickAll when unset (upstream
// defaults the placement before it looks).
func placementType(p *fleet.Placement) fleet.PlacementType {
	if p.Spec.Policy == nil || p.Spec.Policy.PlacementType == "" {
		return fleet.PickAllPlacementType
	}
	return p.Spec.Policy.PlacementType
}

// PlacementPresent reports whether the placement's resources may be on the
// binding's cluster: a Bound binding, or an Unscheduled one that was Bound
// (upstream's IsPlacementPresent).
func PlacementPresent(b *fleet.Binding) bool {
	switch b.Spec.State {
	case fleet.BindingStateBound:
		return true
	case fleet.BindingStateUnscheduled:
		return fleet.BindingState(b.Annotations[scheduler.PreviousBindingStateAnnotation]) == fleet.BindingStateBound
	}
	return false
}

// nonTerminalFailureReasons are the False reasons of a binding's
// conditions that mean "not yet", not "failed" (upstream's
// nonTerminalBindingFailureReasons).
var nonTerminalFailureReasons = map[string]bool{
	fleet.OverriddenPendingReason:       true,
	fleet.WorkNotSynchronizedYetReason:  true,
	fleet.ApplyPendingReason:            true,
	fleet.ResourceNotAvailableYetReason: true,
}

// BindingFailed reports a terminal failure of the binding: one of
// Overridden, WorkSynchronized, Applied, Available False at the binding's
// generation with a reason that is not a "not yet" (upstream's
// HasBindingFailed).
func BindingFailed(b *fleet.Binding) bool {
	for _, t := range []string{fleet.ResourceBindingOverridden, fleet.ResourceBindingWorkSynchronized,
		fleet.ResourceBindingApplied, fleet.ResourceBindingAvailable} {
		c := condition(b, t)
		if c != nil && c.Status == metav1.ConditionFalse && c.ObservedGeneration == b.Generation && !nonTerminalFailureReasons[c.Reason] {
			return true
		}
	}
	return false
}

// diffReported is upstream's IsBindingDiffReported: a DiffReported
// condition of the binding's generation, whatever its status.
func diffReported(b *fleet.Binding) bool {
	c := condition(b, fleet.ResourceBindingDiffReported)
	return c != nil && c.ObservedGeneration == b.Generation
}

func condition(b *fleet.Binding, t string) *metav1.Condition {
	for i := range b.Status.Conditions {
		if b.Status.Conditions[i].Type == t {
			return &b.Status.Conditions[i]
		}
	}
	return nil
}

// MisconfiguredForPickAll reports a budget a PickAll placement cannot
// honour: maxUnavailable, or minAvailable as a percentage (the number of
// clusters a PickAll placement wants is unknown).
func MisconfiguredForPickAll(b *fleet.ClusterResourcePlacementDisruptionBudget) bool {
	return b.Spec.MaxUnavailable != nil || (b.Spec.MinAvailable != nil && b.Spec.MinAvailable.Type == intstr.String)
}

// Allowed is upstream's isEvictionAllowed: whether the budget leaves room
// for one more disruption, and how many bindings are available (Available
// True at their generation). Percentages are of the PickN placement's
// numberOfClusters, rounded up; PickAll placements take minAvailable as an
// integer only (MisconfiguredForPickAll is checked before).
func Allowed(bindings []*fleet.Binding, p *fleet.Placement, b *fleet.ClusterResourcePlacementDisruptionBudget) (bool, int) {
	available := 0
	for _, x := range bindings {
		if c := condition(x, fleet.ResourceBindingAvailable); c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == x.Generation {
			available++
		}
	}
	desired := 0
	typ := placementType(p)
	if typ == fleet.PickNPlacementType && p.Spec.Policy.NumberOfClusters != nil {
		desired = int(*p.Spec.Policy.NumberOfClusters)
	}
	disruptions := 0
	switch {
	case b.Spec.MaxUnavailable != nil:
		maxUnavailable, _ := intstr.GetScaledValueFromIntOrPercent(b.Spec.MaxUnavailable, desired, true)
		disruptions = maxUnavailable - (len(bindings) - available)
	case b.Spec.MinAvailable != nil:
		var minAvailable int
		if typ == fleet.PickAllPlacementType {
			minAvailable = b.Spec.MinAvailable.IntValue()
		} else {
			minAvailable, _ = intstr.GetScaledValueFromIntOrPercent(b.Spec.MinAvailable, desired, true)
		}
		disruptions = available - minAvailable
	}
	return disruptions > 0, available
}
