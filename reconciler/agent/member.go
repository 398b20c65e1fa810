package agent

import (
	"context"
	"sync"
	"time"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

// Applier applies Works to a member cluster: the one apply path of push
// and pull. Apply puts a Work's manifests on the member (or, under
// ReportDiff, compares them), prunes what the Work's last apply put there
// and the Work no longer holds, and returns the Work's status as
// KubeFleet's work applier writes it; its error is one the status cannot
// say (the member unreachable): try again. Remove takes off the member
// what a Work applied. others are the other Works of the Work's binding
// as the hub holds them (receiver first): neither prunes nor removes what
// their manifests hold, which their own apply takes over.
// member/kube.WorkApplier is the real one; SimulatedMember applies in
// process.
type Applier interface {
	Apply(ctx context.Context, w *fleet.Work, others []*fleet.Work, now time.Time) (fleet.WorkStatus, error)
	Remove(ctx context.Context, w *fleet.Work, others []*fleet.Work) error
}

// Member is the cluster an agent serves: its Applier, what it reports
// for property-based scheduling, and where it records what each Work
// applied (its AppliedWorks).
type Member interface {
	Applier
	// Observe reads what the member reports for property-based
	// scheduling (its nodes, as KubeFleet's member agent reads them).
	Observe(ctx context.Context) (member.Observation, error)
	// RecordApplied writes the member's AppliedWork of a Work (what the
	// agent applies for it); ForgetApplied deletes it. Their errors, as
	// Apply's, never name the member's API server: a Work's status may
	// carry them.
	RecordApplied(ctx context.Context, aw *fleet.AppliedWork) error
	ForgetApplied(ctx context.Context, name string) error
}

// AppliedWorks is an in-memory record of AppliedWorks, for a Member that
// has no API server to keep them in (SimulatedMember).
type AppliedWorks struct {
	mu      sync.Mutex
	applied map[string]*fleet.AppliedWork
}

func (a *AppliedWorks) RecordApplied(_ context.Context, aw *fleet.AppliedWork) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.applied == nil {
		a.applied = map[string]*fleet.AppliedWork{}
	}
	a.applied[aw.Name] = aw.DeepCopy()
	return nil
}

func (a *AppliedWorks) ForgetApplied(_ context.Context, name string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.applied, name)
	return nil
}

// Get returns a copy of AppliedWork name, nil when there is none.
func (a *AppliedWorks) Get(name string) *fleet.AppliedWork {
	a.mu.Lock()
	defer a.mu.Unlock()
	if aw, ok := a.applied[name]; ok {
		return aw.DeepCopy()
	}
	return nil
}
