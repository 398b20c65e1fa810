package gitops

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"k8s.io/client-go/util/workqueue"

	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/gitsource/forge"
)

// ForgeConfig connects the daemon to the forge hosting the fleet
// repository (serve's --forge flags): approval pull requests and commit
// statuses.
type ForgeConfig struct {
	// Forge is the repository on the forge.
	Forge forge.Forge
	// ClusterStatuses adds a commit status per cluster of each run
	// (gitfleet/<run>/<cluster>) to the one per run.
	ClusterStatuses bool
	// RetryBase and RetryMax bound the backoff of a failed call (default
	// 1s doubling to 5m).
	RetryBase, RetryMax time.Duration
	// OnError hears about every failed call (the error metric).
	OnError func(operation, class string)
	// NoRollbacks turns off the rollback pull request of a failed run
	// (ProposeRollback).
	NoRollbacks bool
	// Plan is the rollout preview of merging the commit head into the
	// tracked branch at base (plan.Comment's Markdown), for the rollback
	// pull request's body (optional: gitops cannot import plan, which
	// simulates with it).
	Plan func(ctx context.Context, base gitsource.Head, head plumbing.Hash) (string, error)
	// OnRollback hears what each rollback proposal did (RollbackOpened,
	// RollbackNoTarget; the rollback metric).
	OnRollback func(outcome string)
}

// Operations, as the error metric and the log name them.
const (
	ForgeOpPullRequest = "pull_request"  // open or update an approval pull request
	ForgeOpWithdraw    = "withdraw"      // close a pull request no longer needed
	ForgeOpStatus      = "commit_status" // set a run's commit statuses
	ForgeOpComment     = "comment"       // post or update a comment
	ForgeOpRollback    = "rollback"      // open a failed run's rollback pull request
)

// ForgeOps lists every operation ForgeCalls names.
var ForgeOps = []string{ForgeOpPullRequest, ForgeOpWithdraw, ForgeOpStatus, ForgeOpComment, ForgeOpRollback}

// forgeCallTimeout bounds one call (all its requests): a forge that hangs
// is a failure like any other, retried later.
const forgeCallTimeout = time.Minute

// ForgeCalls makes forge API calls in the background, so that a forge that
// is down or refuses a call never holds up a rollout or a status push: a
// failed call is retried with exponential backoff (client-go's workqueue
// rate limiter), counted by ForgeConfig.OnError, and logged once per
// failure class until a call succeeds again.
//
// Calls are keyed: a call waiting for its turn is replaced by a newer one
// with the same key (the newer one knows more), and calls of one key never
// run at the same time.
type ForgeCalls struct {
	forge   forge.Forge
	queue   workqueue.TypedRateLimitingInterface[string]
	log     *slog.Logger
	onError func(operation, class string)

	mu      sync.Mutex
	calls   map[string]forgeCall
	failing map[string]bool // failure classes logged since the last success
}

type forgeCall struct {
	op string
	fn func(ctx context.Context, f forge.Forge) error
}

func newForgeCalls(cfg *ForgeConfig, log *slog.Logger) *ForgeCalls {
	base, max := cfg.RetryBase, cfg.RetryMax
	if base <= 0 {
		base = time.Second
	}
	if max <= 0 {
		max = 5 * time.Minute
	}
	return &ForgeCalls{
		forge:   cfg.Forge,
		queue:   workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](base, max)),
		log:     log,
		onError: cfg.OnError,
		calls:   map[string]forgeCall{},
		failing: map[string]bool{},
	}
}

// Forge is the forge the calls go to.
func (c *ForgeCalls) Forge() forge.Forge { return c.forge }

// Do makes the call fn (operation op) in the background until it succeeds
// or the daemon stops, replacing a call of the same key that has not
// started yet.
func (c *ForgeCalls) Do(key, op string, fn func(ctx context.Context, f forge.Forge) error) {
	c.mu.Lock()
	c.calls[key] = forgeCall{op: op, fn: fn}
	c.mu.Unlock()
	c.queue.Add(key)
}

// Pending is the number of calls not made successfully yet.
func (c *ForgeCalls) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.calls)
}

// run makes the calls until ctx is done; calls still pending then are
// left for flush.
func (c *ForgeCalls) run(ctx context.Context) {
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	for {
		key, quit := c.queue.Get()
		if quit {
			return
		}
		c.process(ctx, key)
	}
}

// take removes the call of key from the pending ones: it is being made.
func (c *ForgeCalls) take(key string) (forgeCall, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	call, ok := c.calls[key]
	delete(c.calls, key)
	return call, ok
}

func (c *ForgeCalls) process(ctx context.Context, key string) {
	defer c.queue.Done(key)
	call, ok := c.take(key)
	if !ok {
		return
	}
	callCtx, cancel := context.WithTimeout(ctx, forgeCallTimeout)
	err := call.fn(callCtx, c.forge)
	cancel()
	if err == nil {
		c.queue.Forget(key)
		c.succeeded()
		return
	}
	c.mu.Lock()
	if _, newer := c.calls[key]; !newer {
		c.calls[key] = call
	}
	if ctx.Err() != nil {
		c.mu.Unlock()
		return // stopping: flush tries it once more
	}
	class := forge.Class(err)
	first := !c.failing[class]
	c.failing[class] = true
	c.mu.Unlock()
	if c.onError != nil {
		c.onError(call.op, class)
	}
	if first {
		c.log.Warn("forge call failed; retried with backoff, the rollout goes on (further failures of this class are not logged until a call succeeds)",
			"operation", call.op, "call", key, "class", class, "err", err.Error())
	}
	c.queue.AddRateLimited(key)
}

// forgeFlushTimeout bounds flush: a forge that does not answer must not
// keep a stopping serve (or a CI job's --until-idle) waiting.
const forgeFlushTimeout = 20 * time.Second

// flush makes every pending call once more, after run has returned, so
// that what the last status push changed (a run's final status) reaches
// the forge before serve exits. What still fails is logged and dropped.
func (c *ForgeCalls) flush() {
	ctx, cancel := context.WithTimeout(context.Background(), forgeFlushTimeout)
	defer cancel()
	c.mu.Lock()
	keys := make([]string, 0, len(c.calls))
	for k := range c.calls {
		keys = append(keys, k)
	}
	c.mu.Unlock()
	slices.Sort(keys)
	failed := 0
	for _, key := range keys {
		call, ok := c.take(key)
		if !ok {
			continue
		}
		if ctx.Err() != nil {
			failed++
			continue
		}
		if err := call.fn(ctx, c.forge); err != nil {
			failed++
			if c.onError != nil {
				c.onError(call.op, forge.Class(err))
			}
		}
	}
	if failed > 0 {
		c.log.Warn("forge calls dropped on the way out: the forge did not take them", "calls", failed)
	}
}

// succeeded ends the failures logged so far.
func (c *ForgeCalls) succeeded() {
	c.mu.Lock()
	var classes []string
	for class := range c.failing {
		classes = append(classes, class)
	}
	clear(c.failing)
	c.mu.Unlock()
	if len(classes) > 0 {
		slices.Sort(classes)
		c.log.Info("forge calls succeed again", "failed_classes", classes)
	}
}
