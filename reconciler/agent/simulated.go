package agent

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
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
// Work's generation was first applied (never under sim-unavailable) —
// reports the property annotations of the MemberCluster as its
// observation, and keeps its AppliedWorks in memory.
type Simulated struct {
	AppliedWorks
	name        string
	observation member.Observation
	sim         member.Simulation

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
	s := &Simulated{name: m.Name, observation: member.SimulatedObservation(m.Annotations), sim: sim, since: map[string]appliedAt{}}
	return s, nil
}

func (s *Simulated) Observe(context.Context) (member.Observation, error) { return s.observation, nil }

// Apply reports w applied (or, under ReportDiff, without diffs), and
// available as the member's annotations say.
func (s *Simulated) Apply(_ context.Context, w *fleet.Work, now time.Time) (fleet.WorkStatus, error) {
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
	var out fleet.WorkStatus
	diff := w.Spec.ApplyStrategy != nil && w.Spec.ApplyStrategy.Type == fleet.ApplyStrategyTypeReportDiff
	for i, o := range objs {
		gvk := o.GroupVersionKind()
		mc := fleet.ManifestCondition{Identifier: fleet.WorkResourceIdentifier{Ordinal: i, Group: gvk.Group, Version: gvk.Version,
			Kind: gvk.Kind, Namespace: o.GetNamespace(), Name: o.GetName()}, Conditions: []metav1.Condition{}}
		switch {
		case diff:
			meta.SetStatusCondition(&mc.Conditions, cond(fleet.WorkConditionTypeDiffReported, metav1.ConditionTrue,
				kube.ManifestNoDiffFoundReason, kube.ManifestNoDiffFoundMsg))
		default:
			meta.SetStatusCondition(&mc.Conditions, cond(fleet.WorkConditionTypeApplied, metav1.ConditionTrue,
				kube.ManifestAppliedReason, kube.ManifestAppliedMessage))
			if available {
				meta.SetStatusCondition(&mc.Conditions, cond(fleet.WorkConditionTypeAvailable, metav1.ConditionTrue,
					kube.ManifestAvailableReason, "Manifest is available"))
			} else {
				meta.SetStatusCondition(&mc.Conditions, cond(fleet.WorkConditionTypeAvailable, metav1.ConditionFalse,
					member.ManifestNotAvailableYetReason, member.ManifestNotAvailableYetMessage))
			}
		}
		out.ManifestConditions = append(out.ManifestConditions, mc)
	}
	n := len(objs)
	switch {
	case diff:
		meta.SetStatusCondition(&out.Conditions, cond(fleet.WorkConditionTypeDiffReported, metav1.ConditionTrue,
			kube.WorkAllManifestsDiffReportedReason, kube.AllManifestsHaveReportedDiffMessage))
	default:
		meta.SetStatusCondition(&out.Conditions, cond(fleet.WorkConditionTypeApplied, metav1.ConditionTrue,
			kube.WorkAllManifestsAppliedReason, kube.AllManifestsAppliedMessage))
		if available {
			meta.SetStatusCondition(&out.Conditions, cond(fleet.WorkConditionTypeAvailable, metav1.ConditionTrue,
				kube.WorkAllManifestsAvailableReason, kube.AllAppliedObjectAvailableMessage))
		} else {
			meta.SetStatusCondition(&out.Conditions, cond(fleet.WorkConditionTypeAvailable, metav1.ConditionFalse,
				kube.WorkNotAllManifestsAvailableReason, fmt.Sprintf(kube.NotAllAppliedObjectsAvailableMessage, 0, n)))
		}
	}
	return out, nil
}

// Remove forgets w.
func (s *Simulated) Remove(_ context.Context, w *fleet.Work) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.since, w.Name)
	return nil
}
