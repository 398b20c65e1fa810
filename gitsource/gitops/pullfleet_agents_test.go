package gitops_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/fleettest"
	"github.com/gitfleet/gitfleet/reconciler/agent"
	"github.com/gitfleet/gitfleet/reconciler/membercluster"
)

// pullAgents is the member side of BenchmarkPullFleet with the work
// transport: the hub side of the members that pull (reconciler/
// membercluster, as `serve --hub kube` runs it) and one `gitfleet agent`
// per member, all in this process, each applying the Works of its
// namespace to a simulated member (agent.SimulatedMember). The agents
// reach the hub as its admin (the benchmark measures load, not RBAC) with
// requests counted apart from serve's.
type pullAgents struct {
	agents []*agent.Agent
	// failed is the first error an agent's Run returned.
	failed atomic.Pointer[error]
}

// startPullAgents starts the member cluster controller on serveRC (serve's
// client, so its requests count as serve's) and an agent per member of
// shape on agentRC. They stop when the benchmark ends.
func startPullAgents(b *testing.B, serveRC, agentRC *rest.Config, shape fleettest.Scale) *pullAgents {
	b.Helper()
	quiet := slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	b.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	ctrl, err := membercluster.New(membercluster.Config{Rest: serveRC, Log: quiet})
	if err != nil {
		b.Fatal(err)
	}
	p := &pullAgents{}
	run := func(f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx); err != nil && !errors.Is(err, context.Canceled) && ctx.Err() == nil {
				p.failed.CompareAndSwap(nil, &err)
			}
		}()
	}
	run(func(ctx context.Context) error { return ctrl.Run(ctx, 4) })
	for j := range shape.Members {
		m := &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: shape.MemberName(j),
			Annotations: map[string]string{fleet.DriverAnnotation: fleet.DriverWork}}}
		sim, err := agent.SimulatedMember(m)
		if err != nil {
			b.Fatal(err)
		}
		a, err := agent.New(agent.Config{Hub: agentRC, MemberName: m.Name, Log: quiet}, sim)
		if err != nil {
			b.Fatal(err)
		}
		p.agents = append(p.agents, a)
		run(a.Run)
	}
	return p
}

// joined counts the agents that joined; err is the first agent's or the
// controller's failure.
func (p *pullAgents) joined() (n int, err error) {
	if e := p.failed.Load(); e != nil {
		return 0, *e
	}
	for _, a := range p.agents {
		if a.Joined() {
			n++
		}
	}
	return n, nil
}
