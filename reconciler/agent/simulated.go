package agent

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/delivery"
	"github.com/gitfleet/gitfleet/reconciler/member"
	"github.com/gitfleet/gitfleet/reconciler/member/kube"
)

// Simulated is a member applier in process, with no API server on the
// member side, so one process can run many agents against a real hub
// (the scale benchmark): build each with agent.New(cfg,
// SimulatedMember(m)). It answers Apply with the Work's status as
// kube.WorkApplier writes it — every manifest Applied, and Available once
// the MemberCluster's gitfleet.io/sim-available-after has passed since the
// Work's generation was first applied (never under sim-unavailable, whose
// note is then every manifest's failed availability) —
// reports the property annotations of the MemberCluster as its
// observation, and keeps its AppliedWorks in memory.
type Simulated struct {
	AppliedWorks
	name        string
	observation member.Observation
	sim         member.Simulation
	// unavailable is the note of gitfleet.io/sim-unavailable: the message
	// of every manifest's failed availability.
	unavailable string

	mu sync.Mutex
	// since is, by Work name, the generation applied and when it was
	// first applied.
	since map[string]appliedAt
}

type appliedAt struct {
	generation int64
	at         time.Time
}

var _ Member = (*Simulated)(nil)

// SimulatedMember is m as a simulated member (its gitfleet.io/sim-*
// annotations as a simulated MemberCluster's).
func SimulatedMember(m *fleet.MemberCluster) (*Simulated, error) {
	sim, err := member.SimulationOf(m)
	if err != nil {
		return nil, err
	}
	s := &Simulated{name: m.Name, observation: member.SimulatedObservation(m.Annotations), sim: sim,
		unavailable: m.Annotations[fleet.SimUnavailableAnnotation], since: map[string]appliedAt{}}
	return s, nil
}

func (s *Simulated) Observe(context.Context) (member.Observation, error) { return s.observation, nil }

// Apply reports w applied (or, under ReportDiff, without diffs), and
// available as the member's annotations say.
func (s *Simulated) Apply(_ context.Context, w *fleet.Work, _ []*fleet.Work, now time.Time) (fleet.WorkStatus, error) {
	objs, err := delivery.WorkManifests(w)
	if err != nil {
		return fleet.WorkStatus{}, err
	}
	gen := w.Generation
	s.mu.Lock()
	first, ok := s.since[w.Name]
	if !ok || first.generation != gen {
		first = appliedAt{generation: gen, at: now}
		s.since[w.Name] = first
	}
	s.mu.Unlock()
	available := !s.sim.Unavailable && now.Sub(first.at) >= s.sim.AvailableAfter

	cond := func(t string, st metav1.ConditionStatus, reason, message string) metav1.Condition {
		return metav1.Condition{Type: t, Status: st, Reason: reason, Message: message, ObservedGeneration: gen}
	}
	// Under ReportDiff every manifest reports no diff; otherwise every
	// manifest is applied, and available or not yet.
	diff := w.Spec.ApplyStrategy != nil && w.Spec.ApplyStrategy.Type == fleet.ApplyStrategyTypeReportDiff
	conds := []metav1.Condition{cond(fleet.WorkConditionTypeApplied, metav1.ConditionTrue, kube.ManifestAppliedReason, kube.ManifestAppliedMessage),
		cond(fleet.WorkConditionTypeAvailable, metav1.ConditionFalse, member.ManifestNotAvailableYetReason, member.ManifestNotAvailableYetMessage)}
	switch {
	case diff:
		conds = []metav1.Condition{cond(fleet.WorkConditionTypeDiffReported, metav1.ConditionTrue, kube.ManifestNoDiffFoundReason, kube.ManifestNoDiffFoundMsg)}
	case s.sim.Unavailable:
		// Never available: failed, as kstatus says of a Deployment past
		// its progress deadline, so the binding reports KubeFleet's
		// failure and the run goes Stuck (a manifest only not available
		// yet would keep it waiting).
		conds[1] = cond(fleet.WorkConditionTypeAvailable, metav1.ConditionFalse, kube.ManifestFailedReason, s.unavailable)
	case available:
		conds[1] = cond(fleet.WorkConditionTypeAvailable, metav1.ConditionTrue, kube.ManifestAvailableReason, kube.ManifestAvailableMessage)
	}
	var out fleet.WorkStatus
	for i, o := range objs {
		gvk := o.GroupVersionKind()
		out.ManifestConditions = append(out.ManifestConditions, fleet.ManifestCondition{Identifier: fleet.WorkResourceIdentifier{
			Ordinal: i, Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: o.GetNamespace(), Name: o.GetName()},
			Conditions: append([]metav1.Condition(nil), conds...)})
	}
	// The Work's own conditions follow from its manifests', as
	// kube.WorkApplier's do.
	kube.SetWorkConditions(&out, diff, gen)
	return out, nil
}

// Remove forgets w.
func (s *Simulated) Remove(_ context.Context, w *fleet.Work, _ []*fleet.Work) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.since, w.Name)
	return nil
}
