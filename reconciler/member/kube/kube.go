// Package kube is the kubeconfig driver: it delivers bound resource
// snapshots to real member clusters, the ones a MemberCluster names with
// gitfleet.io/driver: kubeconfig:<context>.
//
// Delivery is asynchronous, as KubeFleet's work applier is: Deliver records
// the binding's Works (reconciler/delivery.PushWorks: the Works a member
// that pulls would find on the hub, never stored) and returns; workers (a
// client-go rate-limited workqueue keyed by binding) apply each Work as an
// agent on the member applies it (WorkApplier's code): server-side apply
// with Flux's ssa.ResourceManager (CRDs and Namespaces first, unchanged
// objects not written), prune of what the Work's previous apply had and
// it has not, and then polls each object's kstatus until all are Current
// at their current generation. An object the member holds annotated
// gitfleet.io/prune (or Flux's kustomize.toolkit.fluxcd.io/prune):
// disabled is never pruned nor removed: it leaves the inventory, and the
// binding names it in its PruneSkipped condition. The binding's conditions
// and failed, drifted and diffed placements are made from the Works'
// status by reconciler/delivery.Status, as for a member that pulls, and go
// back to the hub through member.Reporter, which wakes the engine; only an
// error reaching the member has no Work form and is reported as such.
//
// What was applied for a Work is recorded on the member itself, in the
// ConfigMap gitfleet-system/<work name> (KubeFleet keeps the same record as
// the member's AppliedWork), labelled with the placement. It is written
// before an apply (old ∪ new) and narrowed after the prune, so a crash at
// any point leaves an inventory that covers everything gitfleet may have
// applied, and it survives the loss of gitfleet's cache. Applied objects
// carry gitfleet.io/placement labels, and prune and removal delete only
// objects that still carry them: gitfleet never deletes what it did not
// apply. A Work's prune or removal spares what another record of the
// placement holds, as KubeFleet's work applier spares an object another
// AppliedWork co-owns, and what another Work of the binding holds in its
// manifests (receiver first: its apply takes the object over, which is
// never deleted and made again). Records of Works a binding no longer has
// are removed after its Works are applied, and a binding's removal removes
// every record of its placement.
package kube

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

var logOnce sync.Once

// DefaultDriftCheckInterval is serve's drift check interval: KubeFleet's
// member agent re-processes a settled placement with a delay that backs
// off to 15 minutes (--work-applier-requeue-rate-limiter-max-fast-backoff-delay-seconds,
// default 900).
const DefaultDriftCheckInterval = 15 * time.Minute

// Options shape the driver.
type Options struct {
	// Kubeconfig is the file given with --kubeconfig; empty means kubectl's
	// rules: the files of KUBECONFIG merged, else ~/.kube/config.
	Kubeconfig string
	// Workers apply and check health in parallel (default 4).
	Workers int
	// PollInterval is how often the health of applied objects is checked
	// until they are all Current (default 2s).
	PollInterval time.Duration
	// RequestTimeout bounds every request to a member API server
	// (default 30s).
	RequestTimeout time.Duration
	// DriftCheckInterval is how often a delivered binding is taken again
	// from the start: compared with what the member holds (drifts,
	// diffs), and re-applied where the strategy says so. Zero turns the
	// check off: a binding is then compared again only when delivered
	// again.
	DriftCheckInterval time.Duration
	// RetryBase and RetryMax bound the backoff after a failed apply
	// (defaults 1s and 2m).
	RetryBase, RetryMax time.Duration
	Log                 *slog.Logger
}

func (o *Options) defaults() {
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 2 * time.Second
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 30 * time.Second
	}
	if o.RetryBase <= 0 {
		o.RetryBase = time.Second
	}
	if o.RetryMax <= 0 {
		o.RetryMax = 2 * time.Minute
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
}

// Clusters is the set of member clusters of one kubeconfig. It implements
// member.Clusters.
type Clusters struct {
	opts     Options
	raw      clientcmdapi.Config
	source   string // where the kubeconfig came from, for messages
	reporter member.Reporter
	log      *slog.Logger
	queue    workqueue.TypedRateLimitingInterface[hub.Key]

	mu       sync.Mutex
	clusters map[string]*cluster
	work     map[hub.Key]*work
	// bindings serializes everything done for one binding: a removal
	// never runs beside an apply of the same binding.
	bindings keyedLock[hub.Key]
}

var (
	_ member.Clusters   = (*Clusters)(nil)
	_ member.WorkDriver = driver{}
)

// Load reads the kubeconfig as kubectl does. It fails when an explicit file
// is missing or any file does not parse; no context is dialed yet. Nothing
// is applied before Start.
func Load(opts Options) (*Clusters, error) {
	opts.defaults()
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	source := "KUBECONFIG"
	if opts.Kubeconfig != "" {
		rules.ExplicitPath = opts.Kubeconfig
		source = opts.Kubeconfig
	} else if len(rules.Precedence) == 1 {
		source = rules.Precedence[0]
	}
	raw, err := rules.Load()
	if err != nil {
		// clientcmd's errors name the file; they never hold its contents.
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	return newClusters(opts, *raw, source), nil
}

// newClusters is the driver of raw's contexts (opts defaulted).
func newClusters(opts Options, raw clientcmdapi.Config, source string) *Clusters {
	logOnce.Do(func() {
		// client-go and controller-runtime log through klog and logr; both
		// go to gitfleet's slog handler instead of their own stderr format.
		ctrllog.SetLogger(logr.FromSlogHandler(opts.Log.Handler()))
		klog.SetSlogLogger(opts.Log)
	})
	return &Clusters{
		opts: opts, raw: raw, source: source, log: opts.Log.With("component", "kubeconfig-driver"),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[hub.Key](opts.RetryBase, opts.RetryMax),
			workqueue.TypedRateLimitingQueueConfig[hub.Key]{Name: "gitfleet_member_delivery"}),
		clusters: map[string]*cluster{},
		work:     map[hub.Key]*work{},
	}
}

// Contexts lists the kubeconfig's context names, sorted.
func (c *Clusters) Contexts() []string {
	out := make([]string, 0, len(c.raw.Contexts))
	for name := range c.raw.Contexts {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// HasContext reports whether the kubeconfig has that context.
func (c *Clusters) HasContext(name string) bool {
	_, ok := c.raw.Contexts[name]
	return ok
}

// Start runs the workers until ctx ends, reporting every outcome to
// reporter (the hub); it returns at once. Deliveries made before Start wait
// in the queue.
func (c *Clusters) Start(ctx context.Context, reporter member.Reporter) {
	c.reporter = reporter
	for range c.opts.Workers {
		go func() {
			for c.processNext(ctx) {
			}
		}()
	}
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
}

// Driver implements member.Clusters.
func (c *Clusters) Driver(context string) member.Driver {
	return driver{clusters: c, context: context}
}

// Pending implements member.Clusters: deliveries queued, being applied, or
// applied and becoming healthy. Settled ones (waiting for their drift
// check) are not counted, nor failed ones (an unreachable member, an
// object kstatus calls Failed) are retried but not counted: they wait on a
// person or on the member, not on gitfleet.
func (c *Clusters) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, w := range c.work {
		if !w.failing && !w.settled {
			n++
		}
	}
	return n
}

// driver is the member.Driver of one kubeconfig context.
type driver struct {
	clusters *Clusters
	context  string
}

// Deliver records the delivery and queues it; a newer delivery of the same
// binding replaces one not yet done.
func (d driver) Deliver(_ context.Context, del member.Delivery) error {
	c := d.clusters
	c.mu.Lock()
	c.work[del.Key()] = &work{context: d.context, delivery: del}
	c.mu.Unlock()
	c.queue.Add(del.Key())
	return nil
}

// AppliesWorks implements member.WorkDriver: deliveries carry the
// binding's Works, applied as a member's agent applies them.
func (driver) AppliesWorks() {}

// Remove deletes what the binding applied, now: every record of its
// placement on the member (one per Work it had, and the one an older
// gitfleet named after the placement's work), except objects annotated
// prune: disabled: the hub drops the binding's work-cleanup finalizer as
// soon as Remove returns nil.
func (d driver) Remove(ctx context.Context, del member.Delivery) error {
	c := d.clusters
	unlock := c.bindings.lock(del.Key())
	defer unlock()
	c.mu.Lock()
	delete(c.work, del.Key())
	c.mu.Unlock()
	cl, err := c.cluster(d.context)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 4*c.opts.RequestTimeout)
	defer cancel()
	names, err := cl.recordNames(ctx, del)
	if err != nil {
		return cl.redact(err)
	}
	// One record after the other: each spares what the records still
	// there hold, so an object two of them hold goes with the last.
	left := inventory{}
	for _, name := range names {
		rd := del
		rd.Record = name
		l, err := cl.remove(ctx, rd, nil)
		if err != nil {
			return err
		}
		left = left.union(l)
	}
	// The binding goes away with this removal: the log is what says so.
	for _, id := range left.sorted() {
		c.log.Info("left on the member: annotated prune: disabled", "binding", hub.KeyString(del.Key()),
			"context", d.context, "resource", member.DescribeResource(id))
	}
	return nil
}
