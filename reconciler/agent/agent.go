// Package agent is `gitfleet agent`: the member side of a member that
// pulls (gitfleet.io/driver: work), standing in for KubeFleet's member
// agent. It joins the fleet through its InternalMemberCluster on the hub
// (a heartbeat every spec.heartbeatPeriodSeconds with the Joined and
// Healthy conditions and the member's properties), watches the Works of
// its namespace fleet-member-<cluster>, applies each to its member with
// an Applier (member/kube.WorkApplier, the push transport's code: ssa and
// kstatus; or Simulated, in process), records what it applied in the
// member's AppliedWork, reports each manifest's conditions and the Work's
// in the Work's status, prunes what a Work no longer holds, and removes
// what a deleted Work applied. When the hub asks
// it to leave (the MemberCluster was deleted) it stops applying and
// reports Joined=False; what it applied stays on the member, as with
// KubeFleet (delete the AppliedWorks to remove it).
//
// It needs, on the hub, only what the hub grants its identity in its own
// namespace (reconciler/membercluster's Role).
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/internal/condmsg"
	"github.com/gitfleet/gitfleet/reconciler/member"
	"github.com/gitfleet/gitfleet/reconciler/membercluster"
)

// The reasons of the conditions the agent reports in its AgentStatus,
// KubeFleet's member agent's.
const (
	ReasonJoined        = "InternalMemberClusterJoined"
	ReasonLeft          = "InternalMemberClusterLeft"
	ReasonHealthy       = "InternalMemberClusterHealthy"
	ReasonUnhealthy     = "InternalMemberClusterUnhealthy"
	ReasonFailedToJoin  = "InternalMemberClusterFailedToJoin"
	ReasonFailedToLeave = "InternalMemberClusterFailedToLeave"
)

// Config says which member the agent is and where its hub is.
type Config struct {
	// Hub reaches the hub's API server as the member's identity.
	Hub *rest.Config
	// MemberName is the member's MemberCluster name.
	MemberName string
	// Clock times heartbeats (default the wall clock).
	Clock clock.Clock
	// Workers apply Works in parallel (default 2).
	Workers int
	// PollInterval is how often a Work whose manifests are not yet
	// available is applied and checked again (default 2s).
	PollInterval time.Duration
	// DriftCheckInterval is how often an available Work is applied and
	// checked again: drifts and diffs reported, re-applied where its
	// apply strategy says so; 0 only when the Work changes.
	DriftCheckInterval time.Duration
	Log                *slog.Logger
}

// Agent is one member's agent.
type Agent struct {
	cfg       Config
	namespace string
	hub       client.Client
	factory   dynamicinformer.DynamicSharedInformerFactory
	works     cache.SharedIndexInformer
	imcs      cache.SharedIndexInformer
	queue     workqueue.TypedRateLimitingInterface[string]
	member    Member
	log       *slog.Logger
	heartbeat chan struct{}

	mu sync.Mutex
	// joined is set while the hub wants the member in the fleet; Works
	// are applied only then.
	joined bool
	// applied is, by Work name, the Work as last applied: what a Work
	// deleted from the hub without the agent's finalizer applied.
	applied map[string]*fleet.Work
	// reported is, by Work name, the status the agent last wrote on it
	// (statusOf).
	reported map[string]reportedStatus
	timer    clock.Timer
}

// New builds the agent of cfg.MemberName applying its Works to m
// (KubeMember; SimulatedMember to run many agents in one process);
// nothing runs before Run.
func New(cfg Config, m Member) (*Agent, error) {
	if cfg.MemberName == "" {
		return nil, errors.New("agent: no member name")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 2
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 2 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	hub, err := client.New(cfg.Hub, client.Options{Scheme: membercluster.Scheme})
	if err != nil {
		return nil, fmt.Errorf("agent: hub: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg.Hub)
	if err != nil {
		return nil, fmt.Errorf("agent: hub: %w", err)
	}
	ns := membercluster.Namespace(cfg.MemberName)
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
	a := &Agent{
		cfg: cfg, namespace: ns, hub: hub, factory: f,
		works: f.ForResource(works).Informer(),
		imcs:  f.ForResource(fleet.ClusterGroupVersion.WithResource("internalmemberclusters")).Informer(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "gitfleet_agent_works"}),
		log:       cfg.Log.With("component", "agent", "member", cfg.MemberName),
		heartbeat: make(chan struct{}, 1),
		member:    m,
		applied:   map[string]*fleet.Work{},
		reported:  map[string]reportedStatus{},
	}
	enqueue := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if o, ok := obj.(metav1.Object); ok {
			a.queue.Add(o.GetName())
		}
	}
	if _, err := a.works.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue,
		UpdateFunc: func(old, cur any) {
			// The agent's own status writes change no generation, deletion
			// or finalizers: they need no pass.
			o, c := old.(metav1.Object), cur.(metav1.Object)
			if o.GetGeneration() != c.GetGeneration() || (o.GetDeletionTimestamp() == nil) != (c.GetDeletionTimestamp() == nil) ||
				len(o.GetFinalizers()) != len(c.GetFinalizers()) {
				enqueue(cur)
			}
		}, DeleteFunc: enqueue}); err != nil {
		return nil, err
	}
	wake := func(any) { a.wakeHeartbeat() }
	if _, err := a.imcs.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: wake,
		UpdateFunc: func(old, cur any) {
			if old.(metav1.Object).GetGeneration() != cur.(metav1.Object).GetGeneration() {
				a.wakeHeartbeat() // the hub changed the spec: join, leave, period
			}
		}}); err != nil {
		return nil, err
	}
	return a, nil
}

// Run joins and serves until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	defer a.queue.ShutDown()
	a.factory.Start(ctx.Done())
	for gvr, ok := range a.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("agent: the %s cache of namespace %s did not sync (does the hub grant this identity its namespace?)", gvr.Resource, a.namespace)
		}
	}
	var wg sync.WaitGroup
	for range a.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a.next(ctx) {
			}
		}()
	}
	defer wg.Wait()
	defer a.queue.ShutDown()
	a.wakeHeartbeat()
	for {
		select {
		case <-ctx.Done():
			a.mu.Lock()
			if a.timer != nil {
				a.timer.Stop()
			}
			a.mu.Unlock()
			return nil
		case <-a.heartbeat:
		}
		period, err := a.beat(ctx)
		if err != nil && ctx.Err() == nil {
			a.log.Warn("heartbeat failed", "err", err.Error())
		}
		a.mu.Lock()
		if a.timer != nil {
			a.timer.Stop()
		}
		a.timer = a.cfg.Clock.AfterFunc(period, a.wakeHeartbeat)
		a.mu.Unlock()
	}
}

func (a *Agent) wakeHeartbeat() {
	select {
	case a.heartbeat <- struct{}{}:
	default:
	}
}

// internalMember is the agent's InternalMemberCluster as the hub holds
// it now (read from the hub: the status is the agent's to merge into).
func (a *Agent) internalMember(ctx context.Context) (*fleet.InternalMemberCluster, error) {
	imc := &fleet.InternalMemberCluster{}
	err := a.hub.Get(ctx, client.ObjectKey{Namespace: a.namespace, Name: a.cfg.MemberName}, imc)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return imc, err
}

// beat is one heartbeat: it joins or leaves as the hub asks, and reports
// the heartbeat, the agent's conditions and the member's properties. It
// returns when to beat again.
func (a *Agent) beat(ctx context.Context) (time.Duration, error) {
	imc, err := a.internalMember(ctx)
	if err != nil || imc == nil {
		// Not created yet (the hub creates it), or the hub is away: look
		// again soon.
		return time.Duration(fleet.DefaultHeartbeatPeriodSeconds) * time.Second / 4, err
	}
	period := time.Duration(imc.Spec.HeartbeatPeriodSeconds) * time.Second
	if period <= 0 {
		period = time.Duration(fleet.DefaultHeartbeatPeriodSeconds) * time.Second
	}
	now := metav1.NewTime(a.cfg.Clock.Now())
	cond := func(t string, s metav1.ConditionStatus, reason, message string) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: condmsg.Cap(message), ObservedGeneration: imc.Generation}
	}
	switch imc.Spec.State {
	case fleet.ClusterStateLeave:
		if err := a.leave(ctx); err != nil {
			imc.Status.SetAgentConditions(fleet.MemberAgent, cond(fleet.AgentJoined, metav1.ConditionUnknown, ReasonFailedToLeave, err.Error()))
			return period, errors.Join(err, a.writeStatus(ctx, imc))
		}
		imc.Status.SetAgentConditions(fleet.MemberAgent, cond(fleet.AgentJoined, metav1.ConditionFalse, ReasonLeft, ""))
		return period, a.writeStatus(ctx, imc)
	case fleet.ClusterStateJoin:
	default:
		return period, nil // KubeFleet's agent ignores an unknown state too
	}
	var joined []metav1.Condition
	o, observeErr := a.member.Observe(ctx)
	if observeErr != nil {
		joined = append(joined, cond(fleet.AgentHealthy, metav1.ConditionFalse, ReasonUnhealthy, observeErr.Error()))
	} else {
		joined = append(joined, cond(fleet.AgentHealthy, metav1.ConditionTrue, ReasonHealthy, ""))
		var st fleet.MemberClusterStatus
		st.Properties, st.ResourceUsage = imc.Status.Properties, imc.Status.ResourceUsage
		member.Record(&st, o, now.Time)
		imc.Status.Properties, imc.Status.ResourceUsage = st.Properties, st.ResourceUsage
	}
	joined = append(joined, cond(fleet.AgentJoined, metav1.ConditionTrue, ReasonJoined, ""))
	agent := imc.Status.SetAgentConditions(fleet.MemberAgent, joined...)
	agent.LastReceivedHeartbeat = now
	if err := a.writeStatus(ctx, imc); err != nil {
		return period, err
	}
	a.join()
	return period, nil
}

func (a *Agent) writeStatus(ctx context.Context, imc *fleet.InternalMemberCluster) error {
	if err := a.hub.Status().Update(ctx, imc); err != nil {
		return fmt.Errorf("report to InternalMemberCluster %s/%s: %w", imc.Namespace, imc.Name, err)
	}
	return nil
}

// join starts applying Works: every Work of the namespace is taken again.
func (a *Agent) join() {
	a.mu.Lock()
	was := a.joined
	a.joined = true
	a.mu.Unlock()
	if !was {
		a.log.Info("joined the fleet")
		for _, name := range a.works.GetStore().ListKeys() {
			_, n, _ := cache.SplitMetaNamespaceKey(name)
			a.queue.Add(n)
		}
	}
}

// leave stops applying Works and releases them (their finalizers, as
// KubeFleet's work applier does): what was applied stays on the member.
func (a *Agent) leave(ctx context.Context) error {
	a.mu.Lock()
	if a.joined {
		a.log.Info("left the fleet")
	}
	a.joined = false
	a.mu.Unlock()
	for _, obj := range a.works.GetStore().List() {
		w := obj.(*unstructured.Unstructured)
		if slices.Contains(w.GetFinalizers(), fleet.WorkFinalizer) {
			ref := &fleet.Work{ObjectMeta: metav1.ObjectMeta{Namespace: w.GetNamespace(), Name: w.GetName(), ResourceVersion: w.GetResourceVersion()}}
			if err := a.setFinalizers(ctx, ref, slices.DeleteFunc(slices.Clone(w.GetFinalizers()), func(f string) bool { return f == fleet.WorkFinalizer })); err != nil {
				return err
			}
		}
	}
	return nil
}

// Joined reports whether the agent has joined and applies Works.
func (a *Agent) Joined() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.joined
}
