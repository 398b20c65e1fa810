// Package membercluster is the hub's side of the members that pull
// (gitfleet.io/driver: work), as KubeFleet's member cluster controller is:
// when such a MemberCluster appears it creates the member's namespace
// fleet-member-<cluster>, the Role and RoleBinding that let the member's
// identity (spec.identity) use that namespace and nothing else, and the
// member's InternalMemberCluster with state Join. It copies what the
// member's agent reports there (its heartbeat and conditions, properties,
// resource usage) into the MemberCluster's status, and aggregates the
// agent's Joined condition into the member's, with KubeFleet's reasons
// and messages. A member whose agent stops heartbeating for
// UnhealthyThreshold is marked Healthy=False (MemberAgentHeartbeatLost),
// as KubeFleet's hub marks it for its cluster inventory.
//
// When the MemberCluster is deleted (the member left the repository), its
// finalizer holds it while the InternalMemberCluster asks the agent to
// Leave; once the agent reports it left (or ForceDeleteWaitTime passed)
// the member's Works lose their finalizers, the namespace is deleted with
// everything in it, and then the finalizer goes.
//
// It runs on a Kubernetes hub only: the embedded hub has no agents.
package membercluster

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/internal/restlimits"
)

// Defaults of KubeFleet's hub agent.
const (
	// DefaultUnhealthyThreshold is KubeFleet's --cluster-unhealthy-threshold.
	DefaultUnhealthyThreshold = 60 * time.Second
	// DefaultForceDeleteWaitTime is KubeFleet's --force-delete-wait-time.
	DefaultForceDeleteWaitTime = 15 * time.Minute
)

// Config says how to reach the hub and how long to wait for agents.
type Config struct {
	Rest *rest.Config
	// Clock decides when a heartbeat is lost and when a leave is forced
	// (default the wall clock).
	Clock clock.Clock
	// UnhealthyThreshold is how long the hub waits for a new heartbeat
	// before it marks the member unhealthy (default 60s).
	UnhealthyThreshold time.Duration
	// ForceDeleteWaitTime is how long a deleted member waits for its agent
	// to leave before the hub removes its namespace anyway (default 15m).
	ForceDeleteWaitTime time.Duration
	Log                 *slog.Logger
}

// Controller keeps the hub side of every pulled member.
type Controller struct {
	cfg     Config
	client  client.Client
	members cache.SharedIndexInformer
	imcs    cache.SharedIndexInformer
	factory dynamicinformer.DynamicSharedInformerFactory
	queue   workqueue.TypedRateLimitingInterface[string]
	log     *slog.Logger

	mu     sync.Mutex
	timers map[string]clock.Timer // by member: the next heartbeat or leave deadline
}

// New builds the controller; nothing runs before Run.
func New(cfg Config) (*Controller, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.UnhealthyThreshold <= 0 {
		cfg.UnhealthyThreshold = DefaultUnhealthyThreshold
	}
	if cfg.ForceDeleteWaitTime <= 0 {
		cfg.ForceDeleteWaitTime = DefaultForceDeleteWaitTime
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	cfg.Rest = restlimits.Default(cfg.Rest)
	cl, err := client.New(cfg.Rest, client.Options{Scheme: Scheme})
	if err != nil {
		return nil, fmt.Errorf("member cluster controller: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg.Rest)
	if err != nil {
		return nil, fmt.Errorf("member cluster controller: %w", err)
	}
	f := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	c := &Controller{
		cfg: cfg, client: cl, factory: f,
		members: f.ForResource(memberClusters).Informer(),
		imcs:    f.ForResource(internalMemberClusters).Informer(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "gitfleet_member_clusters"}),
		log:    cfg.Log.With("component", "member-clusters"),
		timers: map[string]clock.Timer{},
	}
	enqueue := func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			c.queue.Add(u.GetName()) // an InternalMemberCluster is named after its member
		} else if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			if u, ok := d.Obj.(*unstructured.Unstructured); ok {
				c.queue.Add(u.GetName())
			}
		}
	}
	h := cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: enqueue}
	if _, err := c.members.AddEventHandler(h); err != nil {
		return nil, err
	}
	if _, err := c.imcs.AddEventHandler(h); err != nil {
		return nil, err
	}
	return c, nil
}

var (
	memberClusters         = fleet.ClusterGroupVersion.WithResource("memberclusters")
	internalMemberClusters = fleet.ClusterGroupVersion.WithResource("internalmemberclusters")
)

// Run reconciles members with workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	c.factory.Start(ctx.Done())
	for gvr, ok := range c.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("member cluster controller: the %s cache did not sync", gvr.Resource)
		}
	}
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c.next(ctx) {
			}
		}()
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	c.mu.Lock()
	for _, t := range c.timers {
		t.Stop()
	}
	c.mu.Unlock()
	return nil
}

func (c *Controller) next(ctx context.Context) bool {
	name, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(name)
	after, err := c.reconcile(ctx, name)
	switch {
	case err != nil && ctx.Err() == nil:
		if !apierrors.IsConflict(err) {
			c.log.Warn("member cluster not reconciled, retrying", "member", name, "err", err.Error())
		}
		c.queue.AddRateLimited(name)
	default:
		c.queue.Forget(name)
		c.wakeAfter(name, after)
	}
	return true
}

// wakeAfter reconciles name again after d on the controller's clock (a
// heartbeat deadline, a force-delete wait); d <= 0 cancels the wake-up.
func (c *Controller) wakeAfter(name string, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.timers[name]; t != nil {
		t.Stop()
		delete(c.timers, name)
	}
	if d > 0 {
		c.timers[name] = c.cfg.Clock.AfterFunc(d, func() { c.queue.Add(name) })
	}
}

// member is the cached MemberCluster; nil when it is gone.
func (c *Controller) member(name string) (*fleet.MemberCluster, error) {
	obj, ok, err := c.members.GetStore().GetByKey(name)
	if err != nil || !ok {
		return nil, err
	}
	m := &fleet.MemberCluster{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.(*unstructured.Unstructured).Object, m); err != nil {
		return nil, fmt.Errorf("member cluster %s: %w", name, err)
	}
	return m, nil
}

// internalMember is the cached InternalMemberCluster of member name; nil
// when there is none.
func (c *Controller) internalMember(name string) (*fleet.InternalMemberCluster, error) {
	obj, ok, err := c.imcs.GetStore().GetByKey(Namespace(name) + "/" + name)
	if err != nil || !ok {
		return nil, err
	}
	imc := &fleet.InternalMemberCluster{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.(*unstructured.Unstructured).Object, imc); err != nil {
		return nil, fmt.Errorf("internal member cluster %s: %w", name, err)
	}
	return imc, nil
}

// Scheme is what the controller and the agents read and write: the core
// and RBAC kinds, and the member protocol's fleet kinds at v1beta1.
var Scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := addToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

func addToScheme(s *runtime.Scheme) error {
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return err
	}
	s.AddKnownTypeWithName(fleet.ClusterGroupVersion.WithKind(fleet.KindMemberCluster), &fleet.MemberCluster{})
	s.AddKnownTypeWithName(fleet.ClusterGroupVersion.WithKind(fleet.KindInternalMemberCluster), &fleet.InternalMemberCluster{})
	s.AddKnownTypeWithName(fleet.ClusterGroupVersion.WithKind(fleet.KindInternalMemberCluster+"List"), &fleet.InternalMemberClusterList{})
	s.AddKnownTypeWithName(fleet.SchemeGroupVersion.WithKind(fleet.KindWork), &fleet.Work{})
	s.AddKnownTypeWithName(fleet.SchemeGroupVersion.WithKind(fleet.KindAppliedWork), &fleet.AppliedWork{})
	s.AddKnownTypeWithName(fleet.SchemeGroupVersion.WithKind(fleet.KindAppliedWork+"List"), &fleet.AppliedWorkList{})
	for _, gv := range []schema.GroupVersion{fleet.ClusterGroupVersion, fleet.SchemeGroupVersion} {
		metav1.AddToGroupVersion(s, gv)
	}
	return nil
}
