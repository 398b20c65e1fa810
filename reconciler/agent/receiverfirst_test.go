package agent_test

import (
	"context"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler/agent"
)

// orderedMember holds back the apply or removal of a Work until another
// Work's apply or removal at some generation returned: a test provokes
// the order in which the agent's workers take a binding's Works.
type orderedMember struct {
	agent.Member
	mu    sync.Mutex
	gates []gate
}

// gate: the apply or removal of Work held waits until after's apply or
// removal of generation gen returned.
type gate struct {
	held, after string
	gen         int64
	open        chan struct{}
}

func (m *orderedMember) hold(held, after string, gen int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gates = append(m.gates, gate{held: held, after: after, gen: gen, open: make(chan struct{})})
}

func (m *orderedMember) wait(ctx context.Context, w *fleet.Work) {
	m.mu.Lock()
	var open []chan struct{}
	for _, g := range m.gates {
		if g.held == w.Name {
			open = append(open, g.open)
		}
	}
	m.mu.Unlock()
	for _, c := range open {
		select {
		case <-c:
		case <-ctx.Done():
		}
	}
}

func (m *orderedMember) done(w *fleet.Work) {
	m.mu.Lock()
	defer m.mu.Unlock()
	kept := m.gates[:0]
	for _, g := range m.gates {
		if g.after == w.Name && w.Generation >= g.gen {
			close(g.open)
			continue
		}
		kept = append(kept, g)
	}
	m.gates = kept
}

func (m *orderedMember) Apply(ctx context.Context, w *fleet.Work, others []*fleet.Work, now time.Time) (fleet.WorkStatus, error) {
	m.wait(ctx, w)
	st, err := m.Member.Apply(ctx, w, others, now)
	m.done(w)
	return st, err
}

func (m *orderedMember) Remove(ctx context.Context, w *fleet.Work, others []*fleet.Work) error {
	m.wait(ctx, w)
	err := m.Member.Remove(ctx, w, others)
	if w.DeletionTimestamp != nil {
		m.done(w)
	}
	return err
}

// Receiver first: a ConfigMap moves from a binding's main Work into its
// envelope Work and back, and each time the Work it leaves is applied
// (or removed) before the Work it moves to: the leaving Work's prune
// spares it, because the other Work holds it on the hub, and that Work
// takes it over. It is never deleted and made again: its UID stays.
func TestAnObjectMovingBetweenTheWorksOfABindingKeepsItsUID(t *testing.T) {
	var order *orderedMember
	f := startWrapped(t, func(m agent.Member) agent.Member {
		order = &orderedMember{Member: m}
		return order
	})
	await.Until(t, "the member to be joined", func() bool { return joined(f.memberCluster(t)) == metav1.ConditionTrue })
	labels := map[string]string{fleet.ParentBindingLabel: "web-m1", fleet.PlacementTrackingLabel: "web"}
	const mainWork, envWork = "web-work", "web-work-envelope-0123456789abcdef"
	ns := manifest(t, "v1", "Namespace", "", "app", nil)
	a := manifest(t, "v1", "ConfigMap", "app", "a", map[string]string{"k": "a"})
	moving := manifest(t, "v1", "ConfigMap", "app", "moving", map[string]string{"k": "m"})
	available := func(name string, manifests int) func() bool {
		return func() bool {
			w := f.work(t, name)
			return workCondition(w, fleet.WorkConditionTypeAvailable).Status == metav1.ConditionTrue && len(w.Status.ManifestConditions) == manifests
		}
	}
	uid := func() types.UID {
		t.Helper()
		u := f.member.Get("v1", "ConfigMap", "app", "moving")
		if u == nil {
			t.Fatal("ConfigMap moving is gone from the member")
		}
		return u.GetUID()
	}

	f.putLabelledWork(t, mainWork, labels, ns, a, moving)
	await.Until(t, "the main work to be available", available(mainWork, 3))
	was := uid()

	// Into the envelope: the envelope Work is applied only after the main
	// Work's generation that dropped it.
	order.hold(envWork, mainWork, 2)
	f.putLabelledWork(t, envWork, labels, moving)
	f.putLabelledWork(t, mainWork, labels, ns, a)
	await.Until(t, "the main work's new generation to be available", available(mainWork, 2))
	await.Until(t, "the envelope work to be available", available(envWork, 1))
	if got := uid(); got != was {
		t.Fatalf("ConfigMap moving was deleted and made again moving into the envelope Work: UID %s → %s", was, got)
	}

	// Back out: the envelope Work is deleted, and removed from the member
	// before the main Work's generation that holds it again is applied.
	order.hold(mainWork, envWork, 1)
	f.putLabelledWork(t, mainWork, labels, ns, a, moving)
	if err := f.admin.Delete(await.Context(t), &fleet.Work{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet-member-m1", Name: envWork}}); err != nil {
		t.Fatal(err)
	}
	await.Until(t, "the envelope work to be gone", func() bool { return f.work(t, envWork) == nil })
	await.Until(t, "the main work's new generation to be available", available(mainWork, 3))
	if got := uid(); got != was {
		t.Fatalf("ConfigMap moving was deleted and made again moving out of the envelope Work: UID %s → %s", was, got)
	}
}
