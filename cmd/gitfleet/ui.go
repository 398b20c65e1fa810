package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/spf13/cobra"

	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/gitsource/forge"
	"github.com/gitfleet/gitfleet/gitsource/gitops"
	"github.com/gitfleet/gitfleet/status"
	"github.com/gitfleet/gitfleet/status/web"
)

// uiOptions are the flags of `gitfleet ui`.
type uiOptions struct {
	repo, addr    string
	fetch         bool
	fetchInterval time.Duration
}

func newUICommand() *cobra.Command {
	var o uiOptions
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve the web view of a local clone's status tree: runs, stages, clusters, snapshots",
		Long: `ui serves the pages serve's --ui-addr serves, from a local clone of the
fleet repository: the status tree and approval requests of its working tree,
the history of its checked-out branch. No serve is needed. The pages follow
the clone: a pull (or --fetch) shows in an open page within a second.

Pages: / (the fleet: runs, placements), /runs/NAME (/runs/NAMESPACE/NAME),
/clusters/NAME and /snapshots/PLACEMENT/INDEX. They are read-only: approving
stays a commit or a merge, and a gate shows the command that does it.`,
		Example: `  # The web view of ./fleet on http://127.0.0.1:8081
  gitfleet ui --repo ./fleet

  # Pull (fast-forward only) every 30s and show what serve pushed
  gitfleet ui --repo ./fleet --fetch`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runUI(cmdContext(cmd), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.repo, "repo", ".", "local clone (working tree) of the fleet repository")
	f.StringVar(&o.addr, "addr", "127.0.0.1:8081", "listen on this address (loopback by default: anyone who reaches it reads the fleet's status)")
	f.BoolVar(&o.fetch, "fetch", false, "pull the clone (git pull --ff-only) every --fetch-interval")
	f.DurationVar(&o.fetchInterval, "fetch-interval", 30*time.Second, "how often --fetch pulls")
	return cmd
}

func runUI(ctx context.Context, o uiOptions) error {
	log := slog.Default()
	repo, err := fleetRepo(o.repo)
	if err != nil {
		return err
	}
	src := web.Checkout{Dir: repo}
	srv, err := web.New(web.Config{Source: src, Live: true, Log: log.With("server", "ui")})
	if err != nil {
		return err
	}
	// What the pages show is the clone as of now: a commit from here on
	// is a change to tell them about.
	last := headOf(ctx, repo)
	warnBeyondLoopback(o.addr, log)
	addr, err := web.Listen(ctx, o.addr, srv)
	if err != nil {
		return err
	}
	log.Info("web view", "url", "http://"+addr+"/", "repo", repo)
	var pulled <-chan time.Time
	if o.fetch {
		t := time.NewTicker(o.fetchInterval)
		defer t.Stop()
		pulled = t.C
	}
	// The working tree changes when the person pulls, or we do: a second
	// is what a page may lag.
	check := time.NewTicker(time.Second)
	defer check.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-pulled:
			if err := pull(ctx, repo); err != nil {
				log.Warn("cannot pull", "err", err)
			}
		case <-check.C:
		}
		if head := headOf(ctx, repo); head != last {
			last = head
			srv.Notify()
		}
	}
}

// headOf is the commit checked out in repo, "" outside a repository.
func headOf(ctx context.Context, repo string) string {
	out, err := git(ctx, repo, "rev-parse", "--verify", "-q", "HEAD")
	if err != nil {
		return ""
	}
	return out
}

// warnBeyondLoopback says so when the web view listens on more than the
// loopback interface.
func warnBeyondLoopback(addr string, log *slog.Logger) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return
	}
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return
	}
	log.Warn("the web view listens beyond loopback: anyone who reaches " + addr + " reads the fleet's status (it is read-only and shows no secrets)")
}

// startServedUI serves the web view of what serve pushed on o.uiAddr:
// the status tree at the tip of the status branch, live.
func startServedUI(ctx context.Context, o serveOptions, src *gitsource.Source, forgeCfg *gitops.ForgeConfig, log *slog.Logger) error {
	if o.uiAddr == "" {
		return nil
	}
	tree := &servedTree{src: src}
	cfg := web.Config{Source: tree, Live: true, Log: log.With("server", "ui")}
	if forgeCfg != nil {
		if links, err := forge.CommitLinks(forge.Config{Kind: o.forge.kind, URL: o.forge.url, Remote: o.repo}); err == nil {
			cfg.CommitURL = links
		}
		prs := &pullRequests{f: forgeCfg.Forge, base: o.branch, seen: map[string]prLink{}}
		cfg.PullRequest = prs.find
	}
	srv, err := web.New(cfg)
	if err != nil {
		return err
	}
	warnBeyondLoopback(o.uiAddr, log)
	addr, err := web.Listen(ctx, o.uiAddr, srv)
	if err != nil {
		return err
	}
	log.Info("web view", "url", "http://"+addr+"/")
	go tree.follow(ctx, srv.Notify)
	return nil
}

// servedTree reads the status tree serve pushed from its cache of the
// repository.
type servedTree struct{ src *gitsource.Source }

// Tree implements web.Source: status/ at the status branch's tip,
// approvals/ at the tracked branch's.
func (t *servedTree) Tree(ctx context.Context) (status.Files, string, error) {
	head, err := t.src.Head(ctx)
	if err != nil {
		return nil, "", err
	}
	files := memFiles{}
	for dir, commit := range map[string]plumbing.Hash{status.StatusDir: statusTip(head), status.ApprovalsDir: head.Commit} {
		if commit.IsZero() {
			continue
		}
		read, err := t.src.ReadOwnTree(ctx, commit, dir)
		if errors.Is(err, gitsource.ErrNotFound) {
			continue // no such folder yet
		}
		if err != nil {
			return nil, "", err
		}
		for p, data := range read {
			files[p] = data
		}
	}
	return files, statusTip(head).String(), nil
}

// History implements web.Source with git's log of the cache.
func (t *servedTree) History(ctx context.Context, rev string, n int, pathspecs ...string) ([]web.Commit, error) {
	return web.GitLog(ctx, []string{"--git-dir", t.src.GitDir()}, rev, n, pathspecs...)
}

func statusTip(h gitsource.Head) plumbing.Hash {
	if !h.Status.IsZero() {
		return h.Status
	}
	return h.Commit
}

// follow calls changed whenever the branches' tips move (serve pushed, or
// fetched someone's commit): the cache is local, so looking is cheap.
func (t *servedTree) follow(ctx context.Context, changed func()) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var last gitsource.Head
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		head, err := t.src.Head(ctx)
		if err == nil && head != last {
			last = head
			changed()
		}
	}
}

// memFiles serves status.Files from memory.
type memFiles map[string][]byte

func (m memFiles) Read(p string) ([]byte, error) {
	data, ok := m[p]
	if !ok {
		return nil, fmt.Errorf("%s: %w", p, fs.ErrNotExist)
	}
	return data, nil
}

func (m memFiles) List(prefix string) ([]string, error) {
	var out []string
	for p := range m {
		if len(p) > len(prefix) && p[:len(prefix)] == prefix && p[len(prefix)] == '/' {
			out = append(out, p)
		}
	}
	return out, nil
}

// pullRequests finds the open pull request of an approval branch, asking
// the forge at most once a minute per branch (every 10 seconds while it
// has none: gitfleet opens it a moment after the request).
type pullRequests struct {
	f    forge.Forge
	base string
	mu   sync.Mutex
	seen map[string]prLink
}

type prLink struct {
	url string
	at  time.Time
}

func (p *pullRequests) find(ctx context.Context, branch string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l, ok := p.seen[branch]; ok && (time.Since(l.at) < 10*time.Second || (l.url != "" && time.Since(l.at) < time.Minute)) {
		return l.url
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var url string
	if pr, ok, err := forge.FindPR(ctx, p.f, branch, p.base); err == nil && ok {
		url = pr.URL
	}
	p.seen[branch] = prLink{url: url, at: time.Now()}
	return url
}
