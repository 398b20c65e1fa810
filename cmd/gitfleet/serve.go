package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/wait"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/gitsource/forge"
	"github.com/gitfleet/gitfleet/gitsource/gitops"
	"github.com/gitfleet/gitfleet/internal/leader"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/member"
	"github.com/gitfleet/gitfleet/reconciler/member/kube"
	"github.com/gitfleet/gitfleet/status/metrics"
)

// serveOptions are the flags of `gitfleet serve`.
type serveOptions struct {
	repo, branch, path, statusBranch, cacheDir string
	interval, statusInterval, stuckThreshold   time.Duration
	groupCommit                                time.Duration
	readyMaxSyncAge                            time.Duration
	maxSyncDuration, cacheMaintenance          time.Duration
	webhookAddr, webhookSecretFile             string
	metricsAddr                                string
	prometheusURL                              string
	prometheusAllowedURLs                      []string
	uiAddr                                     string
	noApprovalBranches, allowInsecureHTTP      bool
	untilIdle                                  bool
	timeout                                    time.Duration
	render                                     renderLimits
	kubeconfig                                 string
	driftCheckInterval                         time.Duration
	hub                                        hubOptions
	auth                                       gitsource.Auth
	leaderElection                             leader.Options
	forge                                      forgeOptions
}

func newServeCommand() *cobra.Command {
	o := serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the GitOps daemon: follow the repository, roll out, write status back",
		Long: `serve follows the fleet repository and runs the staged rollouts it describes.

For every new commit of --branch that changes what a placement selects it
records a resource snapshot (status/snapshots/<placement>/<index>.yaml, with
the commit). It feeds the fleet objects at the tip — MemberClusters,
placements, strategies, runs — into its hub, runs every ClusterStagedUpdateRun
and StagedUpdateRun stage by stage, and writes progress back: status/ (runs,
placements, snapshots, bindings) and approvals/ (approval requests). For every
approval request it also pushes a branch gitfleet/approve/<name> whose commit
approves it: open a pull request from it, and merging it is the approval.

With --forge github|gitlab|gitea and a forge token gitfleet opens that pull
request itself (its body says what approving releases), closes it when the
request is approved another way, and sets a commit status gitfleet/<run> on
the commit each run rolls out. When a run fails it opens one pull request,
branch gitfleet/rollback/<run>, whose run rolls the placement back to the last
snapshot that succeeded on its clusters: merging it rolls back. A forge that
fails never holds up a rollout: its calls are retried in the background.

gitfleet never force-pushes and never writes outside status/ and approvals/
(and rollbacks/, on its gitfleet/rollback/ branches only);
a human commit that races a status push is kept (gitfleet re-applies its own
change on top). State is persisted in the status tree before any side effect,
so a restart — even in an empty --cache-dir — resumes every run where it was.

New commits are noticed by polling (--interval), by the webhook receiver
(--webhook-addr, GitHub X-Hub-Signature-256, GitLab X-Gitlab-Token or
X-Gitfleet-Signature, verified with --webhook-secret-file) and, for a local
repository, by filesystem notifications.`,
		Example: `  # Follow a local bare repository, metrics on 127.0.0.1:8080
  gitfleet serve --repo file:///srv/git/fleet.git

  # A GitHub repository with a token and a webhook
  gitfleet serve --repo https://github.com/acme/fleet.git --token-file /etc/gitfleet/token \
    --webhook-addr :9090 --webhook-secret-file /etc/gitfleet/webhook-secret

  # Status on its own branch, so main only carries people's commits and approvals
  gitfleet serve --repo git@github.com:acme/fleet.git --ssh-key-file ~/.ssh/id_ed25519 \
    --known-hosts-file ~/.ssh/known_hosts --status-branch gitfleet-status

  # One of two replicas in a pod: only the holder of the Lease runs the Git loop
  gitfleet serve --repo https://github.com/acme/fleet.git --token-file /etc/gitfleet/token --leader-elect

  # Approval pull requests and commit statuses on a self-hosted Gitea
  gitfleet serve --repo https://git.example.com/acme/fleet.git --token-file /etc/gitfleet/token \
    --forge gitea --forge-token-file /etc/gitfleet/token

  # CI: run until every rollout waits on a person, then exit 0
  gitfleet serve --repo ./fleet --until-idle --timeout 10m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.repo, "repo", "", "fleet repository: https://, ssh://, user@host:path, git://, file:// URL or a local path (required)")
	f.StringVar(&o.branch, "branch", "main", "branch to follow")
	f.StringVar(&o.path, "path", ".", "folder of the hub content inside the repository")
	f.StringVar(&o.statusBranch, "status-branch", "", "write status/ to this branch instead of --branch (approvals/ stay on --branch)")
	f.StringVar(&o.cacheDir, "cache-dir", "", "where the clone is cached (default: a folder under the user cache directory)")
	f.DurationVar(&o.interval, "interval", 30*time.Second, "poll the remote this often (0 disables polling)")
	f.DurationVar(&o.statusInterval, "status-interval", 2*time.Second, "batch status commits that guard no side effect into one per interval (the end of a run is committed at once)")
	f.DurationVar(&o.groupCommit, "group-commit", gitops.DefaultGroupCommit, "a guarded write (a binding and run status that must be in Git before its delivery) waits at most this long for the writes of other runs to share its commit and push (0 disables: one commit and push per pass)")
	f.DurationVar(&o.readyMaxSyncAge, "ready-max-sync-age", 0, "/readyz fails once the last successful fetch and sync is older than this (default 3×--interval+1m; with --interval 0, never)")
	f.DurationVar(&o.maxSyncDuration, "max-sync-duration", 15*time.Minute, "/healthz fails once one fetch and sync has run longer than this: the loop is wedged")
	f.DurationVar(&o.cacheMaintenance, "cache-maintenance-interval", time.Hour, "pack the cache (as git gc would) this often, so it stays bounded; 0 never")
	o.render.addFlags(f)
	f.DurationVar(&o.stuckThreshold, "stuck-threshold", 5*time.Minute, "report a run stuck when a cluster has been updating this long")
	f.StringVar(&o.prometheusURL, "prometheus-url", "", "the Prometheus metric gates query (a gate's metric.prometheusURL may name another that --prometheus-allowed-url allows; empty: only gates naming an allowed one are evaluated, the others time out to a person)")
	f.StringArrayVar(&o.prometheusAllowedURLs, "prometheus-allowed-url", nil, "a Prometheus a gate's metric.prometheusURL may name besides --prometheus-url (repeat for more; compared by scheme, host, port and path, e.g. http://prometheus.team-b:9090). "+
		"Anyone who can push to the repository writes gates, so gitfleet queries no other URL: such a gate's evaluations are errors naming it, and it times out to a person without approving anything")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the member clusters named by gitfleet.io/driver: kubeconfig:<context> (default: KUBECONFIG, several files merged as kubectl does, else ~/.kube/config)")
	f.DurationVar(&o.driftCheckInterval, "drift-check-interval", kube.DefaultDriftCheckInterval, "compare what kubeconfig: members hold with what was delivered this often, report drifts and diffs, and re-apply where the apply strategy says so (KubeFleet's member agent re-checks every 15 minutes once settled); 0 only on delivery")
	f.StringVar(&o.webhookAddr, "webhook-addr", "", "listen for push webhooks on this address (e.g. :9090), path /webhook")
	f.StringVar(&o.webhookSecretFile, "webhook-secret-file", "", "file holding the webhook secret (required with --webhook-addr)")
	f.StringVar(&o.metricsAddr, "metrics-addr", "127.0.0.1:8080", "serve /metrics, /healthz and /readyz on this address (empty disables; :8080 for every interface, as in a Pod)")
	f.StringVar(&o.uiAddr, "ui-addr", "", "serve the read-only web view of runs, stages and clusters on this address (e.g. 127.0.0.1:8081; empty disables)")
	f.BoolVar(&o.allowInsecureHTTP, "allow-insecure-http", false, "allow credentials over plain http:// (they travel unencrypted)")
	f.BoolVar(&o.noApprovalBranches, "no-approval-branches", false, "do not push gitfleet/approve/<name> branches")
	f.BoolVar(&o.untilIdle, "until-idle", false, "exit 0 once no run can progress without a person and status is pushed")
	f.DurationVar(&o.timeout, "timeout", 0, "give up after this long (with --until-idle: exit 1 if not idle by then)")
	f.StringVar(&o.auth.Username, "username", "", "HTTP username")
	f.StringVar(&o.auth.UsernameFile, "username-file", "", "file holding the HTTP username")
	f.StringVar(&o.auth.PasswordFile, "password-file", "", "file holding the HTTP password")
	f.StringVar(&o.auth.PasswordEnv, "password-env", "", "environment variable holding the HTTP password")
	f.StringVar(&o.auth.TokenFile, "token-file", "", "file holding an HTTP access token")
	f.StringVar(&o.auth.TokenEnv, "token-env", "", "environment variable holding an HTTP access token")
	f.StringVar(&o.auth.SSHKeyFile, "ssh-key-file", "", "SSH private key")
	f.StringVar(&o.auth.SSHKeyPassphraseFile, "ssh-key-passphrase-file", "", "file holding the SSH key's passphrase")
	f.StringVar(&o.auth.KnownHostsFile, "known-hosts-file", "", "known_hosts to verify SSH servers with")
	f.StringVar(&o.auth.CAFile, "ca-file", "", "extra PEM CA bundle for https remotes")
	o.hub.addFlags(f)
	o.forge.addFlags(f)
	o.leaderElection.AddFlags(f)
	_ = cmd.MarkFlagRequired("repo")
	return cmd
}

func runServe(ctx context.Context, o serveOptions) error {
	log := slog.Default()
	if o.webhookAddr != "" && o.webhookSecretFile == "" {
		return errors.New("--webhook-addr needs --webhook-secret-file: unsigned webhooks are refused")
	}
	if err := o.hub.validate(); err != nil {
		return err
	}
	forgeCfg, err := o.forge.config(o.repo)
	if err != nil {
		return err
	}
	if err := checkPrometheusAllowedURLs(o.prometheusAllowedURLs); err != nil {
		return err
	}
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	if o.cacheDir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		o.cacheDir = filepath.Join(base, "gitfleet", cacheName(o.repo, o.branch))
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := metrics.New(reg, nil)
	if forgeCfg != nil {
		fm := metrics.NewForge(reg, gitops.ForgeOps, forge.Classes)
		forgeCfg.OnError, forgeCfg.OnRollback = fm.ObserveError, fm.ObserveRollback
	}
	endpoints := metrics.Handler(reg)
	if o.metricsAddr != "" {
		if err := listen(ctx, o.metricsAddr, endpoints, log.With("server", "metrics")); err != nil {
			return err
		}
	}

	clusters, err := loadClusters(o.kubeconfig, o.driftCheckInterval, log)
	if err != nil {
		return err
	}
	// Every replica takes webhooks: a standby's wakes it, so that right
	// after a takeover it fetches at once.
	watcher := gitsource.NewWatcher(log.With("component", "watcher"))
	var opened openedSource
	if o.webhookAddr != "" {
		secret, err := os.ReadFile(o.webhookSecretFile)
		if err != nil {
			return fmt.Errorf("reading --webhook-secret-file: %w", err)
		}
		secret = []byte(strings.TrimSpace(string(secret)))
		if len(secret) == 0 {
			return fmt.Errorf("--webhook-secret-file %s is empty", o.webhookSecretFile)
		}
		mux := http.NewServeMux()
		mux.Handle("/webhook", &gitsource.Webhook{Secret: secret, Notify: func() { watcher.Trigger("webhook") },
			Branch: o.branch, Known: opened.isOwnTip, Logger: log.With("server", "webhook")})
		if err := listen(ctx, o.webhookAddr, mux, log.With("server", "webhook")); err != nil {
			return err
		}
	}
	if o.leaderElection.Enabled {
		return runElected(ctx, o, log, endpoints, func(ctx context.Context) error {
			return serveFleet(ctx, o, log, m, endpoints, clusters, watcher, &opened, forgeCfg)
		})
	}
	return serveFleet(ctx, o, log, m, endpoints, clusters, watcher, &opened, forgeCfg)
}

// openedSource is the Source serveFleet opens, for the webhook receiver,
// which listens before it does (and on a standby replica, which opens none).
type openedSource struct {
	atomic.Pointer[gitsource.Source]
}

// isOwnTip is Source.IsOwnTip, false before a Source is open.
func (o *openedSource) isOwnTip(commit string) bool {
	s := o.Load()
	return s != nil && s.IsOwnTip(commit)
}

// serveFleet runs the Git loop: the whole of serve once its endpoints
// listen, and what only the leader does among several replicas.
func serveFleet(ctx context.Context, o serveOptions, log *slog.Logger, m *metrics.Metrics, endpoints *metrics.Endpoints, clusters *kube.Clusters, watcher *gitsource.Watcher, opened *openedSource, forgeCfg *gitops.ForgeConfig) error {
	var members member.Clusters // never a typed nil
	if clusters != nil {
		members = clusters
	}
	newHub, err := o.hub.newHub(ctx, log)
	if err != nil {
		return err
	}
	var src *gitsource.Source
	var d *gitops.Daemon
	err = retryStart(ctx, log, o.repo, func() (err error) {
		src, err = gitsource.Open(ctx, gitsource.Config{URL: o.repo, Branch: o.branch, StatusBranch: o.statusBranch,
			CacheDir: o.cacheDir, Auth: o.auth, AllowInsecureHTTP: o.allowInsecureHTTP, Logger: log.With("component", "gitsource"),
			MaxFileSize: int64(o.render.maxFileSize), MaxTotalSize: int64(o.render.maxTotal)})
		if err != nil {
			return err
		}
		if forgeCfg != nil {
			forgeCfg.Plan = rollbackPlan(src, o.path)
		}
		d, err = gitops.Open(ctx, gitops.Config{
			Source: src, Path: o.path, StatusInterval: o.statusInterval, StuckThreshold: o.stuckThreshold,
			GroupCommit:   o.groupCommit,
			RenderTimeout: o.render.timeout, RenderMemoryLimit: int64(o.render.memory),
			MaxFileSize: int64(o.render.maxFileSize), MaxTotalSize: int64(o.render.maxTotal),
			CacheMaintenance: maintenanceInterval(o.cacheMaintenance), RetryMax: retryMax(o.interval),
			PushApprovalBranches: !o.noApprovalBranches, Metrics: m, Observer: gitops.MetricsObserver{M: m},
			Gates:            o.metricGates(),
			OnReconcileError: func(controller string, _ error) { m.ObserveReconcileError(controller) },
			OnWriteConflict:  m.ObserveWriteConflict,
			OnBindings: func(p hub.Key, bindings []*fleet.Binding) {
				name := p.Name
				if p.Namespace != "" {
					name = p.Namespace + "/" + p.Name
				}
				m.ObserveBindings(name, bindings)
			},
			Clusters: members,
			Forge:    forgeCfg,
			NewHub:   newHub,
			Log:      log,
		})
		return err
	})
	if err != nil {
		return err
	}
	opened.Store(src)
	if clusters != nil {
		clusters.Start(ctx, d.Hub.Delivery())
	}
	if err := startServedUI(ctx, o, src, forgeCfg, log); err != nil {
		return err
	}
	readyAge := o.readyMaxSyncAge
	if readyAge == 0 && o.interval > 0 {
		readyAge = 3*o.interval + time.Minute
	}
	endpoints.SetChecks(func() error { return d.Ready(readyAge) }, func() error { return d.Healthy(o.maxSyncDuration) })
	endpoints.SetNote(func() string {
		if commit, since, ok := d.Rendering(); ok {
			return fmt.Sprintf("rendering commit %s for %s", commit.String()[:7], time.Since(since).Round(time.Second))
		}
		return ""
	})
	endpoints.SetReady()

	go watcher.Poll(ctx, o.interval)
	if path, ok := src.LocalPath(); ok {
		if err := watcher.WatchLocal(ctx, path); err != nil {
			log.Warn("cannot watch the local repository; polling only", "err", err)
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	idle := make(chan struct{})
	if o.untilIdle {
		go watchIdle(runCtx, d, idle, stop)
	}
	if calls := d.ForgeCalls(); calls != nil {
		go runPreviews(runCtx, calls, src, o.path, o.interval, log.With("component", "preview"))
	}
	log.Info("serving", "repo", src.URL(), "branch", src.Branch(), "cache_dir", o.cacheDir)
	if err := d.Run(runCtx, watcher.C()); err != nil {
		return err
	}
	select {
	case <-idle:
		log.Info("idle: every run is finished or waits on a person; status is pushed")
		return nil
	default:
	}
	if o.untilIdle && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &exitError{code: 1, err: fmt.Errorf("not idle after --timeout %s", o.timeout)}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		log.Info("shut down at --timeout, after the final status push", "timeout", o.timeout)
	} else {
		log.Info("shut down on SIGTERM or Ctrl-C, after the final status push")
	}
	return nil
}

// runElected runs lead only while this replica holds the leader election
// Lease; a standby's /readyz names the leader. Losing the lease ends serve
// with an error at once (the pod restarts as a standby), so that the next
// leader is the only writer.
func runElected(ctx context.Context, o serveOptions, log *slog.Logger, endpoints *metrics.Endpoints, lead func(context.Context) error) error {
	rc, err := o.hub.restConfig()
	if err != nil {
		return err
	}
	opts := o.leaderElection
	if opts.Name == "" {
		opts.Name = leader.DefaultName(o.repo, o.branch)
	}
	e, err := leader.New(leader.Config{Options: opts, REST: rc, Log: log})
	if err != nil {
		return err
	}
	endpoints.SetLeader(e.Leading)
	return e.Run(ctx, lead)
}

// loadClusters reads the kubeconfig of the member clusters. Without
// --kubeconfig, KUBECONFIG or ~/.kube/config there is none, and nil is
// returned: kubeconfig:<context> members then say so on their bindings.
func loadClusters(path string, driftCheck time.Duration, log *slog.Logger) (*kube.Clusters, error) {
	c, err := kube.Load(kube.Options{Kubeconfig: path, DriftCheckInterval: driftCheck, Log: log})
	if err != nil {
		return nil, err
	}
	if len(c.Contexts()) == 0 {
		return nil, nil
	}
	log.Info("member clusters", "contexts", strings.Join(c.Contexts(), ","))
	return c, nil
}

// retryMax caps the wait between failed fetches at the poll interval (a
// poll would retry that often anyway), and at 5m without polling.
func retryMax(interval time.Duration) time.Duration {
	if interval <= 0 || interval > 5*time.Minute {
		return 5 * time.Minute
	}
	return interval
}

// maintenanceInterval maps the flag's 0 (never) to the daemon's negative.
func maintenanceInterval(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// retryStart runs start (the first clone and the restore from the status
// tree) until it succeeds, backing off from 1s to 1m between attempts, so
// a remote that is down, a TLS or DNS failure, or a repository not created
// yet at start does not end serve: /readyz stays 503 meanwhile. A
// configuration error (a malformed URL, credential files that cannot be
// read, credentials over http://) ends it at once, since no retry can fix
// it.
func retryStart(ctx context.Context, log *slog.Logger, repo string, start func() error) error {
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: time.Minute}
	for attempt := 1; ; attempt++ {
		err := start()
		if err == nil || errors.Is(err, gitsource.ErrInvalid) || ctx.Err() != nil {
			return err
		}
		delay := backoff.Step()
		log.Error("cannot start yet: reading the fleet repository or starting the hub failed; retrying",
			"repo", gitsource.RedactURL(repo), "err", err.Error(), "attempt", attempt, "retry_in", delay.String(),
			"next_step", gitops.NextStep(err))
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up while retrying: %v)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// watchIdle stops the daemon once it has been idle on two checks in a row
// (so a report that is on its way is not missed).
func watchIdle(ctx context.Context, d *gitops.Daemon, idle chan<- struct{}, stop func()) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	streak := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ok, err := d.Idle(ctx)
		if err != nil || !ok {
			streak = 0
			continue
		}
		if streak++; streak >= 2 {
			close(idle)
			stop()
			return
		}
	}
}

// listen serves h on addr until ctx is done.
func listen(ctx context.Context, addr string, h http.Handler, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	// A client that sends its body slowly is cut off: webhook bodies are
	// small (1 MiB at most) and scrapes send none.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("server stopped", "err", err)
		}
	}()
	log.Info("listening", "addr", ln.Addr().String())
	return nil
}

// cacheName is a folder name for a repository and branch that carries no
// credentials.
func cacheName(repo, branch string) string {
	r := repo
	if i := strings.LastIndex(r, "@"); i >= 0 {
		r = r[i+1:]
	}
	r = strings.NewReplacer("://", "-", "/", "-", ":", "-", "\\", "-").Replace(r)
	r = strings.Trim(r, "-.")
	if len(r) > 80 {
		r = r[len(r)-80:]
	}
	return r + "-" + strings.ReplaceAll(branch, "/", "-")
}
