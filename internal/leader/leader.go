// Package leader lets several gitfleet serve replicas share one fleet
// repository: they campaign for a coordination.k8s.io/v1 Lease (client-go's
// leaderelection), and only the holder runs the Git loop. The others stand
// by and take over once the holder's lease expires, so there is never more
// than one writer: a leader that cannot renew its lease in time stops
// (the process exits) before another replica may acquire it.
//
// It knows nothing of what the leader does, so the embedded hub and a
// Kubernetes hub use it alike.
package leader

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// ErrLost is returned by Run when the lease could not be renewed in time:
// another replica may be leading already, so the caller must stop writing
// at once (exit non-zero; the restarted pod stands by).
var ErrLost = errors.New("leader election lost: the lease was not renewed within the renew deadline")

// serviceAccountNamespace is where a pod finds its own namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// Options are the flags of leader election. The defaults are client-go's
// usual ones (those of kube-controller-manager).
type Options struct {
	Enabled       bool
	Namespace     string
	Name          string
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

// AddFlags registers the --leader-elect* flags.
func (o *Options) AddFlags(f *pflag.FlagSet) {
	f.BoolVar(&o.Enabled, "leader-elect", false, "run as one of several replicas: only the holder of a coordination.k8s.io Lease runs the Git loop, the others stand by (ready, /readyz names the leader) and take over when its lease expires")
	f.StringVar(&o.Namespace, "leader-election-namespace", "", "namespace of the Lease (default: the pod's own, from its service account)")
	f.StringVar(&o.Name, "leader-election-id", "", "name of the Lease (default: gitfleet-<hash of --repo and --branch>, so replicas of one repository share it and gitfleets of other repositories do not)")
	f.DurationVar(&o.LeaseDuration, "leader-election-lease-duration", 15*time.Second, "how long a standby waits after the last renewal it saw before it takes the lease over")
	f.DurationVar(&o.RenewDeadline, "leader-election-renew-deadline", 10*time.Second, "the leader stops (exits) when it could not renew its lease for this long; must be less than the lease duration")
	f.DurationVar(&o.RetryPeriod, "leader-election-retry-period", 2*time.Second, "how often a replica tries to acquire or renew the lease")
}

// DefaultName is the Lease name for a repository and branch: the same for
// every replica that follows them, different for another repository, and
// independent of credentials written into the URL.
func DefaultName(repo, branch string) string {
	if u, err := url.Parse(repo); err == nil && u.Scheme != "" && u.User != nil {
		u.User = nil
		repo = u.String()
	}
	sum := sha256.Sum256([]byte(strings.TrimSuffix(repo, "/") + "\x00" + branch))
	return "gitfleet-" + hex.EncodeToString(sum[:])[:10]
}

// Config is what New needs besides the options.
type Config struct {
	Options
	// REST reaches the API server that holds the Lease.
	REST *rest.Config
	// Identity names this replica in the Lease (default: Identity()).
	Identity string
	Log      *slog.Logger
}

// Elector campaigns for the lease and runs the leader's work.
type Elector struct {
	le       *leaderelection.LeaderElector
	identity string
	log      *slog.Logger
	lead     func(context.Context) error
	done     chan struct{} // closed when lead has returned
	leadErr  error
	stop     context.CancelFunc // ends the campaign (and releases the lease)
	leadCtx  context.Context    // the caller's context, which ends lead
}

// New builds an Elector; it does not contact the API server yet.
func New(cfg Config) (*Elector, error) {
	if cfg.Name == "" {
		return nil, errors.New("leader election needs a lease name (--leader-election-id)")
	}
	if cfg.Namespace == "" {
		ns, err := os.ReadFile(serviceAccountNamespace)
		if err != nil || strings.TrimSpace(string(ns)) == "" {
			return nil, errors.New("--leader-election-namespace is required outside a pod (no " + serviceAccountNamespace + ")")
		}
		cfg.Namespace = strings.TrimSpace(string(ns))
	}
	if cfg.Identity == "" {
		cfg.Identity = Identity()
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	client, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(cfg.REST), "gitfleet-leader-election"))
	if err != nil {
		return nil, fmt.Errorf("leader election: %w", err)
	}
	e := &Elector{identity: cfg.Identity, log: cfg.Log.With("component", "leader-election", "lease", cfg.Namespace+"/"+cfg.Name)}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: cfg.Namespace, Name: cfg.Name},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: cfg.Identity},
	}
	e.le, err = leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: cfg.LeaseDuration,
		RenewDeadline: cfg.RenewDeadline,
		RetryPeriod:   cfg.RetryPeriod,
		// Released only after lead has returned (see Run), so that a
		// replica shutting down hands over at once instead of after a
		// lease duration, and never while it still writes.
		ReleaseOnCancel: true,
		Name:            cfg.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: e.started,
			OnStoppedLeading: func() {},
			OnNewLeader: func(id string) {
				e.log.Info("leader elected", "leader", id, "me", id == cfg.Identity)
			},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("leader election: %w", err)
	}
	return e, nil
}

// Identity is this process's name in the Lease: the host name (the pod's
// name in Kubernetes) and a random suffix, so a restarted pod is a new
// candidate and never mistakes the lease of its former self for its own.
func Identity() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "gitfleet"
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return host + "_" + hex.EncodeToString(b)
}

// Leading says whether this replica holds the lease and who does as far as
// it last saw ("" when no one yet).
func (e *Elector) Leading() (bool, string) { return e.le.IsLeader(), e.le.GetLeader() }

// Run campaigns until this replica holds the lease, then runs lead with a
// context that ends with ctx. It returns:
//   - lead's result, once lead has returned (ctx done, or lead finished);
//     the lease is released only then;
//   - ctx's error when ctx ends before this replica leads;
//   - ErrLost as soon as the lease could not be renewed, without waiting
//     for lead: the caller must exit before another replica takes over.
//
// Run is called once per Elector (a process that lost the lease exits and
// comes back as a new candidate).
func (e *Elector) Run(ctx context.Context, lead func(context.Context) error) error {
	e.lead, e.leadCtx, e.done = lead, ctx, make(chan struct{})
	// The campaign outlives ctx: it ends (and releases the lease) when
	// lead has returned, not when ctx does.
	campaign, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	e.stop = stop
	go func() {
		select {
		case <-ctx.Done():
			if !e.le.IsLeader() {
				stop() // a standby just stops campaigning
			}
		case <-campaign.Done():
		}
	}()
	e.log.Info("campaigning for the lease", "identity", e.identity)
	e.le.Run(campaign)
	select {
	case <-e.done:
		return e.leadErr
	default:
	}
	if campaign.Err() != nil {
		// Stopped before leading (ctx done while standing by).
		return ctx.Err()
	}
	e.log.Error("lost the lease: stopping at once so that the next leader is the only writer", "identity", e.identity)
	return ErrLost
}

// started runs lead while this replica holds the lease; lctx ends when
// the lease is lost.
func (e *Elector) started(lctx context.Context) {
	e.log.Info("leading", "identity", e.identity)
	ctx, cancel := context.WithCancel(lctx)
	defer cancel()
	stopAfter := context.AfterFunc(e.leadCtx, cancel)
	defer stopAfter()
	e.leadErr = e.lead(ctx)
	close(e.done)
	e.stop()
}

// RESTConfig reaches the hub cluster (the API server of `serve --hub kube`
// and the one that holds the Lease): the kubeconfig file at path, in
// kubeContext (default its current context), when either is given, else
// the pod's service account (in a cluster), else KUBECONFIG or
// ~/.kube/config as kubectl reads them.
func RESTConfig(path, kubeContext string) (*rest.Config, error) {
	if path == "" && kubeContext == "" {
		c, err := rest.InClusterConfig()
		if err == nil {
			return c, nil
		} else if !errors.Is(err, rest.ErrNotInCluster) {
			return nil, fmt.Errorf("in-cluster config: %w", err)
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	c, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: kubeContext}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("hub kubeconfig: %w", err)
	}
	return c, nil
}
