package gitsource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Defaults for the zero values of Config.
const (
	DefaultBranch       = "main"
	DefaultMaxFileSize  = 8 << 20
	DefaultMaxTotalSize = 256 << 20
	DefaultPushAttempts = 8
	DefaultTimeout      = 2 * time.Minute
	DefaultAuthorName   = "gitfleet"
	DefaultAuthorEmail  = "gitfleet@localhost"
)

// DefaultPushBackoff spaces re-applies after rejected pushes: 100ms
// doubling to 5s, each wait made up to 10% longer at random so daemons
// racing for one branch fall out of step.
var DefaultPushBackoff = wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: 5 * time.Second}

// DefaultAllowedPrefixes are the only trees gitfleet writes to.
var DefaultAllowedPrefixes = []string{"status/", "approvals/"}

const (
	remoteName = "origin"
	// markerFile marks a cache directory as ours; only marked (or empty)
	// directories are ever wiped and re-cloned.
	markerFile = "gitfleet-cache"
)

// Config configures a Source. Only URL and CacheDir are required.
type Config struct {
	// URL of the fleet repository: https://…, http://…, ssh://…,
	// scp-style user@host:path, git://…, file://… or a local path.
	URL string
	// AllowInsecureHTTP lets credentials travel over plain http://, which
	// sends them unencrypted; without it such a configuration is refused.
	AllowInsecureHTTP bool
	// Branch is the tracked branch (default "main").
	Branch string
	// StatusBranch, if set and different from Branch, is a second branch
	// Apply can write to (Change.Branch) and Fetch follows (Head.Status);
	// Apply creates it as an orphan branch if it is missing.
	StatusBranch string
	// CacheDir holds the bare clone. It must be empty, absent, or a
	// previous gitfleet cache: a non-empty foreign directory is refused.
	CacheDir string
	// Auth says where credentials come from.
	Auth Auth

	// AllowedPrefixes limits what Apply and PushBranch may write
	// (default DefaultAllowedPrefixes). Each is a directory ("status/").
	AllowedPrefixes []string
	// MaxFileSize bounds a single file read from or written to Git
	// (default 8 MiB).
	MaxFileSize int64
	// MaxTotalSize bounds the sum of file sizes returned by ReadTree
	// (default 256 MiB).
	MaxTotalSize int64
	// PushAttempts bounds the pushes of one Apply or PushBranch, the
	// re-applies after a rejection included (default 8).
	PushAttempts int
	// PushBackoff spaces those attempts from the third on (default
	// DefaultPushBackoff); each Apply or PushBranch starts it over.
	PushBackoff wait.Backoff
	// Timeout bounds each network operation, so a hung connection cannot
	// stall the loop (default 2m).
	Timeout time.Duration
	// AuthorName and AuthorEmail sign gitfleet's commits
	// (default "gitfleet <gitfleet@localhost>").
	AuthorName, AuthorEmail string
	// Logger receives structured logs (default slog.Default()).
	Logger *slog.Logger
}

// Head is the result of a Fetch.
type Head struct {
	// Commit is the tip of the tracked branch.
	Commit plumbing.Hash
	// Status is the tip of the status branch: equal to Commit when there is
	// no separate status branch, zero if the status branch does not exist.
	Status plumbing.Hash
}

// Source is a cached clone of the fleet repository. Its methods are safe for
// concurrent use; they are serialised internally.
type Source struct {
	cfg     Config
	url     string              // normalised URL (local paths as file://)
	ep      *transport.Endpoint // parsed url
	safeURL string              // url for logs and errors
	red     *redactor
	log     *slog.Logger

	// sem is a one-slot semaphore guarding repo and store; a channel rather
	// than a Mutex so that waiting for it honours a context.
	sem     chan struct{}
	store   *cacheStore
	repo    *git.Repository
	objects *lockedObjects
	built   layer // what commits read and write, over store
	own     ownPushes
	ownTip  ownTip
	// repacked is the size of the packs the last full repack left, zero
	// before the first (Maintain).
	repacked int64
}

// Open prepares the cache: it reuses CacheDir if it holds a healthy clone of
// URL, re-clones if it is corrupt or points elsewhere, and clones if it is
// empty. It contacts the remote only when it has no tracked branch yet, so a
// daemon with a good cache starts even while the remote is unreachable.
func Open(ctx context.Context, cfg Config) (*Source, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Source{
		cfg: cfg,
		red: &redactor{},
		log: cfg.Logger,
		sem: make(chan struct{}, 1),
	}
	s.built.src = s
	s.url, s.ep, err = normaliseURL(cfg.URL, s.red)
	if err != nil {
		return nil, err
	}
	s.safeURL = RedactURL(s.url)
	s.red.add(s.ep.Password)
	if s.ep.Protocol == "http" && (s.ep.User != "" || s.ep.Password != "" || cfg.Auth.hasHTTPCredentials()) && !cfg.AllowInsecureHTTP {
		return nil, errorf("open", ErrInvalid, fmt.Sprintf("%s: credentials over plain http:// would travel unencrypted; use https://, or pass --allow-insecure-http if the network is trusted", s.safeURL))
	}
	s.log = s.log.With("repo", s.safeURL)
	s.objects = &lockedObjects{src: s}

	if err := s.lock(ctx); err != nil {
		return nil, s.wrap("open", err)
	}
	defer s.unlock()
	if err := s.openCache(); err != nil {
		return nil, err
	}
	if _, ok := s.tip(cfg.Branch); !ok {
		s.log.Info("cloning", "branch", cfg.Branch, "cache", cfg.CacheDir)
		if err := s.fetchLocked(ctx); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (c Config) withDefaults() (Config, error) {
	if strings.TrimSpace(c.URL) == "" {
		return c, errorf("open", ErrInvalid, "URL is required")
	}
	if c.CacheDir == "" {
		return c, errorf("open", ErrInvalid, "CacheDir is required")
	}
	if c.Branch == "" {
		c.Branch = DefaultBranch
	}
	if c.StatusBranch == "" {
		c.StatusBranch = c.Branch
	}
	for _, b := range []string{c.Branch, c.StatusBranch} {
		if err := plumbing.NewBranchReferenceName(b).Validate(); err != nil {
			return c, errorf("open", ErrInvalid, fmt.Sprintf("branch %q: %v", b, err))
		}
	}
	if c.AllowedPrefixes == nil {
		c.AllowedPrefixes = DefaultAllowedPrefixes
	}
	prefixes := make([]string, 0, len(c.AllowedPrefixes))
	for _, p := range c.AllowedPrefixes {
		clean, err := cleanPath(strings.TrimSuffix(p, "/"))
		if err != nil {
			return c, errorf("open", ErrInvalid, fmt.Sprintf("allowed prefix %q: %v", p, err))
		}
		prefixes = append(prefixes, clean+"/")
	}
	c.AllowedPrefixes = prefixes
	if c.MaxFileSize <= 0 {
		c.MaxFileSize = DefaultMaxFileSize
	}
	if c.MaxTotalSize <= 0 {
		c.MaxTotalSize = DefaultMaxTotalSize
	}
	if c.PushAttempts <= 0 {
		c.PushAttempts = DefaultPushAttempts
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.PushBackoff == (wait.Backoff{}) {
		c.PushBackoff = DefaultPushBackoff
	}
	if c.AuthorName == "" {
		c.AuthorName = DefaultAuthorName
	}
	if c.AuthorEmail == "" {
		c.AuthorEmail = DefaultAuthorEmail
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

// normaliseURL parses raw and turns local paths into absolute file:// URLs,
// so that the cache can compare URLs and go-git uses one transport for both
// spellings.
func normaliseURL(raw string, r *redactor) (string, *transport.Endpoint, error) {
	raw = strings.TrimSpace(raw)
	ep, err := transport.NewEndpoint(raw)
	if err != nil {
		return "", nil, newError(r, "open", "", err, ErrInvalid)
	}
	r.add(ep.Password)
	if u, err := url.Parse(raw); err == nil && u.RawQuery != "" {
		// Query values may be tokens (?private_token=…).
		for _, vs := range u.Query() {
			r.add(vs...)
		}
	}
	switch ep.Protocol {
	case "file":
		abs, err := filepath.Abs(ep.Path)
		if err != nil {
			return "", nil, newError(r, "open", "", err, ErrInvalid)
		}
		ep.Path = abs
		return "file://" + abs, ep, nil
	case "http", "https", "ssh", "git":
		return raw, ep, nil
	}
	return "", nil, errorf("open", ErrInvalid, fmt.Sprintf("unsupported URL scheme %q", ep.Protocol))
}

// URL returns the repository URL with credentials redacted.
func (s *Source) URL() string { return s.safeURL }

// Branch returns the tracked branch.
func (s *Source) Branch() string { return s.cfg.Branch }

// StatusBranch returns the branch status writes go to (the tracked branch
// unless Config.StatusBranch names another).
func (s *Source) StatusBranch() string { return s.cfg.StatusBranch }

// LocalPath returns the filesystem path of a local (file://) remote, for
// watching it with Watcher.WatchLocal.
func (s *Source) LocalPath() (string, bool) {
	if s.ep.Protocol != "file" {
		return "", false
	}
	return s.ep.Path, true
}

// Fetch updates the cache from the remote and returns the branch tips.
func (s *Source) Fetch(ctx context.Context) (Head, error) {
	if err := s.lock(ctx); err != nil {
		return Head{}, s.wrap("fetch", err)
	}
	defer s.unlock()
	if _, err := os.Stat(filepath.Join(s.cfg.CacheDir, markerFile)); errors.Is(err, os.ErrNotExist) {
		if err := s.recloneLocked("the cache directory or its marker file is gone"); err != nil {
			return Head{}, err
		}
	}
	if err := s.fetchLocked(ctx); err != nil {
		// A cache that no longer reads fails every fetch: start it over,
		// so the next fetch clones.
		if reason := s.useCache(); reason != "" {
			if rerr := s.recloneLocked(reason); rerr != nil {
				return Head{}, rerr
			}
		}
		return Head{}, err
	}
	return s.headLocked(), nil
}

// recloneLocked starts the cache over (deleted by a person, a tmp cleaner,
// a new volume, or corrupt) instead of failing every fetch with
// "repository not found" while nothing heals it. gitfleet's state lives in
// the remote, so a new clone loses nothing.
func (s *Source) recloneLocked(reason string) error {
	dir := s.cfg.CacheDir
	s.log.Warn("cache unusable; cloning the repository again", "cache", dir, "reason", reason)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return s.wrap("fetch", err)
	}
	if err := wipeDir(dir); err != nil {
		return s.wrap("fetch", err)
	}
	return s.initCache()
}

// Head returns the branch tips as of the last Fetch, without network.
func (s *Source) Head(ctx context.Context) (Head, error) {
	if err := s.lock(ctx); err != nil {
		return Head{}, s.wrap("head", err)
	}
	defer s.unlock()
	return s.headLocked(), nil
}

func (s *Source) headLocked() Head {
	var h Head
	h.Commit, _ = s.tip(s.cfg.Branch)
	h.Status, _ = s.tip(s.cfg.StatusBranch)
	return h
}

// fetchLocked fetches the tracked branch and, if separate, the status
// branch, which may not exist yet.
func (s *Source) fetchLocked(ctx context.Context) error {
	branches := []string{s.cfg.Branch}
	if s.cfg.StatusBranch != s.cfg.Branch {
		branches = append(branches, s.cfg.StatusBranch)
	}
	if s.localUpToDate(branches) {
		return nil
	}
	err := s.fetchRefs(ctx, branches...)
	if len(branches) > 1 && errors.Is(err, errNoSuchBranch) {
		// The status branch does not exist (yet, or any more).
		err = s.fetchRefs(ctx, s.cfg.Branch)
		if err == nil {
			s.forget(s.cfg.StatusBranch)
		}
	}
	if errors.Is(err, errNoSuchBranch) {
		return errorf("fetch", ErrNotFound, fmt.Sprintf("%s: branch %q not found", s.safeURL, s.cfg.Branch))
	}
	if err == nil {
		tip, _ := s.tip(s.cfg.Branch)
		s.ownTip.seen(tip)
	}
	return err
}

// fetchBranch fetches one branch, treating a missing branch as deleted:
// its cached tip is forgotten and no error is returned.
func (s *Source) fetchBranch(ctx context.Context, branch string) error {
	err := s.fetchRefs(ctx, branch)
	if errors.Is(err, errNoSuchBranch) {
		s.forget(branch)
		return nil
	}
	return err
}

// forget drops the cached tip of a branch the remote no longer has.
func (s *Source) forget(branch string) {
	if _, ok := s.tip(branch); ok {
		s.log.Info("branch is gone from the remote", "branch", branch)
		_ = s.store.RemoveReference(trackingRef(branch))
	}
}

// fetchRefs fetches the named branches into refs/remotes/origin/*.
// Refspecs are forced so the cache follows the remote even if someone
// rewrites it; gitfleet itself never pushes with force.
func (s *Source) fetchRefs(ctx context.Context, branches ...string) error {
	creds, err := s.cfg.Auth.resolve(s.ep, s.red)
	if err != nil {
		return err
	}
	specs := make([]config.RefSpec, len(branches))
	for i, b := range branches {
		specs[i] = config.RefSpec(fmt.Sprintf("+%s:%s", plumbing.NewBranchReferenceName(b), trackingRef(b)))
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	err = s.repo.FetchContext(ctx, &git.FetchOptions{
		RemoteName: remoteName,
		RemoteURL:  s.url,
		RefSpecs:   specs,
		Auth:       creds.method,
		CABundle:   creds.caBundle,
		Tags:       git.NoTags,
	})
	if errors.Is(err, git.NoErrAlreadyUpToDate) {
		err = nil
	}
	if err != nil {
		return s.wrap("fetch", err)
	}
	s.log.Debug("fetched", "branches", branches, "took", time.Since(start))
	return nil
}

// tip returns the cached tip of branch.
func (s *Source) tip(branch string) (plumbing.Hash, bool) {
	ref, err := s.store.Reference(trackingRef(branch))
	if err != nil {
		return plumbing.ZeroHash, false
	}
	return ref.Hash(), true
}

func trackingRef(branch string) plumbing.ReferenceName {
	return plumbing.NewRemoteReferenceName(remoteName, branch)
}

// openCache opens or (re)creates the bare repository in CacheDir.
func (s *Source) openCache() error {
	dir := s.cfg.CacheDir
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist) || (err == nil && len(entries) == 0):
		return s.initCache()
	case err != nil:
		return s.wrap("open", err)
	}
	if _, err := os.Stat(filepath.Join(dir, markerFile)); err != nil {
		return errorf("open", ErrInvalid, fmt.Sprintf("cache dir %s is not empty and not a gitfleet cache; refusing to overwrite it", dir))
	}
	if reason := s.useCache(); reason != "" {
		s.log.Warn("discarding cache and re-cloning", "cache", dir, "reason", reason)
		if err := wipeDir(dir); err != nil {
			return s.wrap("open", err)
		}
		return s.initCache()
	}
	return nil
}

// useCache opens the existing cache and says why it cannot be used, if so.
func (s *Source) useCache() (reason string) {
	if s.store != nil {
		s.store.release()
	}
	s.store = newStorage(s.cfg.CacheDir)
	s.built.reset()
	repo, err := git.Open(s.store, nil)
	if err != nil {
		return "cannot open: " + s.red.scrub(err.Error())
	}
	s.repo = repo
	remote, err := repo.Remote(remoteName)
	if err != nil {
		return "no remote: " + s.red.scrub(err.Error())
	}
	if urls := remote.Config().URLs; len(urls) != 1 || urls[0] != s.safeURL {
		return "cache belongs to another URL"
	}
	// Every reference must read: a process killed while go-git wrote a ref
	// leaves an empty ref file, which would fail every later fetch.
	refs, err := repo.References()
	if err != nil {
		return "cannot list references: " + s.red.scrub(err.Error())
	}
	if err := refs.ForEach(func(*plumbing.Reference) error { return nil }); err != nil {
		return "unreadable reference: " + s.red.scrub(err.Error())
	}
	// A present tip must be readable down to its root tree.
	for _, b := range []string{s.cfg.Branch, s.cfg.StatusBranch} {
		h, ok := s.tip(b)
		if !ok {
			continue
		}
		c, err := object.GetCommit(s.store, h)
		if err != nil {
			return fmt.Sprintf("tip of %s unreadable: %s", b, s.red.scrub(err.Error()))
		}
		if _, err := c.Tree(); err != nil {
			return fmt.Sprintf("tree of %s unreadable: %s", b, s.red.scrub(err.Error()))
		}
	}
	return ""
}

func (s *Source) initCache() error {
	dir := s.cfg.CacheDir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return s.wrap("open", err)
	}
	// The marker goes first: a clone interrupted after this point is still
	// recognised as ours and repaired on the next Open.
	marker := "gitfleet cache of " + s.safeURL + "\n"
	if err := os.WriteFile(filepath.Join(dir, markerFile), []byte(marker), 0o600); err != nil {
		return s.wrap("open", err)
	}
	if s.store != nil {
		s.store.release()
	}
	s.store = newStorage(dir)
	s.built.reset()
	repo, err := git.Init(s.store, nil)
	if err != nil {
		return s.wrap("open", err)
	}
	// The cache records the redacted URL: credentials stay off the disk,
	// and a rotated password does not look like another repository.
	// Fetch and push pass the real URL explicitly.
	if _, err := repo.CreateRemote(&config.RemoteConfig{
		Name:  remoteName,
		URLs:  []string{s.safeURL},
		Fetch: []config.RefSpec{config.RefSpec(fmt.Sprintf("+refs/heads/*:refs/remotes/%s/*", remoteName))},
	}); err != nil {
		return s.wrap("open", err)
	}
	s.repo = repo
	return nil
}

// wipeDir empties dir but keeps it, as it may be a mount point.
func wipeDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// lock acquires the Source, giving up when ctx is done.
func (s *Source) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case s.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Source) unlock() { <-s.sem }

// wrap turns err into a redacted *Error that names the remote.
func (s *Source) wrap(op string, err error, kinds ...error) error {
	return newError(s.red, op, s.safeURL, err, kinds...)
}
