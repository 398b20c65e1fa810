package agent

import (
	"context"
	"log/slog"
	"sync"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

// Member is the cluster an agent applies its Works to. Deliver and
// Remove are a push transport's (member.Driver): a Work goes to the member
// as a delivery, and the outcome comes back through the member.Reporter
// the Member was built with (the Agent), which turns it into the Work's
// status. A real member is member/kube's driver (KubeMember); a benchmark
// runs a thousand agents in one process against SimulatedMember.
type Member interface {
	member.Driver
	// Observe reads what the member reports for property-based
	// scheduling (its nodes, as KubeFleet's member agent reads them).
	Observe(ctx context.Context) (member.Observation, error)
	// RecordApplied writes the member's AppliedWork of a Work (what the
	// agent applied for it); ForgetApplied deletes it.
	RecordApplied(ctx context.Context, aw *fleet.AppliedWork) error
	ForgetApplied(ctx context.Context, name string) error
}

// NewMember builds an agent's Member; reporter is the agent.
type NewMember func(reporter member.Reporter) (Member, error)

// SimulatedMember is an in-process member (member.Simulated) shaped by
// m's annotations as a simulated MemberCluster is (gitfleet.io/sim-*),
// reporting m's property annotations; its AppliedWorks are kept in
// memory.
func SimulatedMember(clk clock.Clock, m *fleet.MemberCluster, log *slog.Logger) NewMember {
	return func(r member.Reporter) (Member, error) {
		sim := m.DeepCopy()
		if sim.Annotations == nil {
			sim.Annotations = map[string]string{}
		}
		sim.Annotations[fleet.DriverAnnotation] = fleet.DriverSimulated
		return &simulated{Driver: member.NewDrivers(clk, r, log).For(sim), member: sim, observation: member.SimulatedObservation(m.Annotations),
			applied: map[string]*fleet.AppliedWork{}}, nil
	}
}

type simulated struct {
	member.Driver
	member      *fleet.MemberCluster
	observation member.Observation

	mu      sync.Mutex
	applied map[string]*fleet.AppliedWork
}

// Deliver and Remove act as the simulated MemberCluster's annotations say.
func (s *simulated) Deliver(ctx context.Context, d member.Delivery) error {
	d.Member = s.member
	return s.Driver.Deliver(ctx, d)
}

func (s *simulated) Remove(ctx context.Context, d member.Delivery) error {
	d.Member = s.member
	return s.Driver.Remove(ctx, d)
}

func (s *simulated) Observe(context.Context) (member.Observation, error) { return s.observation, nil }

func (s *simulated) RecordApplied(_ context.Context, aw *fleet.AppliedWork) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applied[aw.Name] = aw.DeepCopy()
	return nil
}

func (s *simulated) ForgetApplied(_ context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.applied, name)
	return nil
}
