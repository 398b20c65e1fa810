package kube

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// A run's status is written behind the engine's back: UpdateUpdateRunStatus
// hands the status over and returns, a writer per run sends it to the API
// server, and reads of the run see the status handed over until the cache
// has it. The run's status is the largest object the engine writes (40 KB
// at 100 clusters, which the API server decodes, validates and stores
// whole), and a pass waiting for it held up the next cluster: at
// maxConcurrency 1 the next binding write now goes out while the status
// write is in flight, and a status handed over while one is in flight
// replaces the one still waiting (only the latest is written).
//
// Crash safety is unchanged: a status is handed over at the end of the
// pass whose binding writes it records, and binding writes are synchronous,
// so no status reaches the API server before the bindings it records. A
// status lost in a crash (or to a Conflict) leaves bindings ahead of the
// run, which the engine reads back as KubeFleet's does after a crash
// between its binding and run writes: a cluster whose binding carries the
// run's snapshot with RolloutStarted is started, and done if Available.
// Nothing that guards a side effect waits on a run's status (deliveries
// follow bindings), so Commit does not wait for it either.
//
// Writes chain on resourceVersions: the engine's copy carries a token
// (statusChain.token) standing for the status it handed over; a status
// handed over at that token is written at the resourceVersion the chain's
// last write returned, so another writer in between is a Conflict, as it
// would be for a synchronous write. A status handed over at any other
// resourceVersion than the cached one, or an older token, is stale.

// statusChain is the writer of one run's status.
type statusChain struct {
	kind string
	// token is the resourceVersion the engine's copy carries after the
	// latest handover; base is the one the next write goes at.
	token, base string
	// latest is the status handed over last (nil once the run ended and
	// the cache has it: shedFinishedChainLocked); pending says it is not
	// written yet.
	latest  *fleet.UpdateRun
	pending bool
	// ctx is the latest handover's: the write ends with the engine.
	ctx context.Context
	// idle is closed when no write is pending or in flight.
	idle chan struct{}
	// err is the write that failed; the handover built on it gets it.
	err error
	// written is when the last write returned, took how long it took
	// (spacing).
	written time.Time
	took    time.Duration
}

// RunStatusCostFactor bounds the share of the API server's time a run's
// status takes: the next write waits at least this many times as long as
// the last one took. The API server decodes, validates, stores and sends
// out the whole status (45 KB at 100 clusters) on every write; at a load
// where each takes 30 ms, ten writes a second (the 100 ms spacing) took a
// third of a core, which the binding writes of the next cluster waited
// for, while the engine reads its own status from the chain and needs
// none of them. Where writes are fast the spacing is the configured one;
// it grows to MaxRunStatusSpacing at most, so a reader of the API server
// sees a run at most about a second behind the engine, as the placement's
// status (the controller's StatusDelay).
const (
	RunStatusCostFactor = 10
	MaxRunStatusSpacing = time.Second
)

// spacing is the least time between two writes of the chain.
func (h *Hub) spacing(c *statusChain) time.Duration {
	if h.cfg.RunStatusSpacing < 0 {
		return 0
	}
	return max(h.cfg.RunStatusSpacing, min(RunStatusCostFactor*c.took, MaxRunStatusSpacing))
}

func (c *statusChain) busy() bool {
	select {
	case <-c.idle:
		return false
	default:
		return true
	}
}

// tokenPrefix marks the resourceVersions the hub hands out for statuses
// not written yet; the API server never makes one (its are integers).
const tokenPrefix = "gitfleet-status-"

// handOverRunStatus takes r's status for the chain of its run. It reports
// false when r is not built on the chain (it carries a real
// resourceVersion): the caller writes it as any other object.
func (h *Hub) handOverRunStatus(ctx context.Context, kind string, r *fleet.UpdateRun) (bool, error) {
	key := keyOf(r)
	cur := h.cached(kind, key)
	if cur == nil {
		return false, wrap(kind, key, apierrors.NewNotFound(resources[kind].GroupResource(), key.Name))
	}
	h.chainMu.Lock()
	defer h.chainMu.Unlock()
	c := h.chains[key]
	if c == nil {
		if isToken(r.ResourceVersion) {
			return false, h.staleRun(kind, key)
		}
		if r.ResourceVersion != "" && r.ResourceVersion != cur.GetResourceVersion() {
			return false, nil // the API server decides
		}
		c = &statusChain{kind: kind, base: cur.GetResourceVersion(), idle: closed()}
		h.chains[key] = c
	} else if r.ResourceVersion != c.token {
		if c.busy() || isToken(r.ResourceVersion) || !atLeast(cur.GetResourceVersion(), c.base) {
			return false, h.staleRun(kind, key)
		}
		if r.ResourceVersion != "" && r.ResourceVersion != cur.GetResourceVersion() {
			return false, nil
		}
		// Built on the cache, which has the chain's writes: a new chain.
		c.base, c.err = cur.GetResourceVersion(), nil
	} else {
		if c.err != nil {
			err := c.err
			delete(h.chains, key)
			return false, err
		}
		if !c.busy() && cur.GetResourceVersion() != c.base && atLeast(cur.GetResourceVersion(), c.base) {
			// Another writer came after the chain's last write.
			return false, h.staleRun(kind, key)
		}
		if c.latest != nil && equality.Semantic.DeepEqual(c.latest.Status, r.Status) {
			return true, nil
		}
	}
	h.tokens++
	c.token = tokenPrefix + strconv.FormatUint(h.tokens, 10)
	c.latest = r.DeepCopy()
	c.ctx = ctx
	r.ResourceVersion = c.token
	if c.pending = true; !c.busy() {
		c.idle = make(chan struct{})
		go h.writeChain(key, c)
	}
	return true, nil
}

// statusWritesPending counts the runs whose status is handed over and not
// yet in the status tree: not written, or written and not yet handled by
// the hub's informer, which mirrors it into Config.Store (the write
// returns a hair before the watch brings it back, and Daemon.Idle must
// not say idle in between).
func (h *Hub) statusWritesPending() int {
	h.chainMu.Lock()
	defer h.chainMu.Unlock()
	n := 0
	for key, c := range h.chains {
		if c.busy() || !h.informers[c.kind].handledAt(key, c.base) {
			n++
		}
	}
	return n
}

func (h *Hub) staleRun(kind string, key hub.Key) error {
	return wrap(kind, key, apierrors.NewConflict(resources[kind].GroupResource(), key.Name,
		errors.New("the object has been modified; please apply your changes to the latest version and try again")))
}

func isToken(rv string) bool { return strings.HasPrefix(rv, tokenPrefix) }

func closed() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// writeChain writes the latest status of the chain until none is pending.
// A failed write drops what is pending and wakes the run, whose next pass
// reads the API server's state.
func (h *Hub) writeChain(key hub.Key, c *statusChain) {
	for {
		h.chainMu.Lock()
		if !c.pending {
			close(c.idle)
			// The informer may have handled the last write before the
			// chain went idle: the run's last event shed nothing then.
			if h.informers[c.kind].handledAt(key, c.base) {
				h.shedFinishedChainLocked(key, c, c.base)
			}
			h.chainMu.Unlock()
			return
		}
		if wait := h.spacing(c) - h.clock.Now().Sub(c.written); !c.written.IsZero() && wait > 0 {
			// Let the handovers of the spacing coalesce: the API server
			// decodes, validates and stores the whole status on every
			// write, time the bindings on the critical path wait for.
			wctx := c.ctx
			h.chainMu.Unlock()
			done := make(chan struct{})
			t := h.clock.AfterFunc(wait, func() { close(done) })
			select {
			case <-done:
			case <-wctx.Done():
				t.Stop()
			}
			h.chainMu.Lock()
		}
		run, base, ctx, hook := c.latest, c.base, c.ctx, h.beforeStatusWrite
		c.pending = false
		h.chainMu.Unlock()

		start := h.clock.Now()
		if hook != nil {
			hook(key)
		}
		u, err := toUnstructured(c.kind, run)
		if err == nil {
			u.SetResourceVersion(base)
			written, werr := h.resource(c.kind, key.Namespace).UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: FieldManager})
			if err = wrap(c.kind, key, werr); err == nil {
				h.chainMu.Lock()
				c.base, c.written = written.GetResourceVersion(), h.clock.Now()
				c.took = c.written.Sub(start)
				h.chainMu.Unlock()
				continue
			}
		}
		h.chainMu.Lock()
		c.err, c.pending = fmt.Errorf("writing the status handed over: %w", err), false
		close(c.idle)
		h.chainMu.Unlock()
		h.log.Info("a run's status write failed; its next pass starts from the hub's copy", "run", keyString(key), "err", err)
		h.notify(hub.Event{Kind: hub.EventUpdateRun, Key: key, Run: key})
		return
	}
}

// runOverlay is the run as the engine last handed it over, carrying the
// chain's token (overlayOf), nil when the cache is the truth.
func (h *Hub) runOverlay(key hub.Key, cached *fleet.UpdateRun) *fleet.UpdateRun {
	latest, token := h.overlayOf(key, cached.ResourceVersion)
	if latest == nil {
		return nil
	}
	cached.Status = *latest.Status.DeepCopy()
	cached.ResourceVersion = token
	return cached
}

// overlayOf is the run the engine last handed over for run key and the
// chain's token, unless another writer came after the chain's last write
// (the cache, at cachedRV, is past it): nil then, and the cache is the
// truth. While a write is in flight the cache may already hold it (the
// watch can beat the response), so only an idle chain tells another
// writer's. The chain replaces the run it returns, never modifies it.
func (h *Hub) overlayOf(key hub.Key, cachedRV string) (latest *fleet.UpdateRun, token string) {
	h.chainMu.Lock()
	defer h.chainMu.Unlock()
	c := h.chains[key]
	if c == nil || c.err != nil || c.latest == nil {
		return nil, ""
	}
	if !c.busy() && cachedRV != c.base && atLeast(cachedRV, c.base) {
		return nil, ""
	}
	return c.latest, c.token
}

// settleRun waits until the status writes of run key are done, so a write
// that is not a status (finalizers, a person's spec, the deletion) goes
// after them, and returns the resourceVersion rv stands for (the chain's
// last write when rv is its token).
func (h *Hub) settleRun(ctx context.Context, key hub.Key, rv string) (string, error) {
	h.chainMu.Lock()
	c := h.chains[key]
	var idle chan struct{}
	if c != nil {
		idle = c.idle
	}
	h.chainMu.Unlock()
	if c == nil {
		return rv, nil
	}
	select {
	case <-idle:
	case <-ctx.Done():
		return "", fmt.Errorf("waiting for the status writes of run %s: %w", keyString(key), context.Cause(ctx))
	}
	h.chainMu.Lock()
	defer h.chainMu.Unlock()
	if rv != "" && rv == c.token {
		if c.err != nil {
			return "", c.err
		}
		return c.base, nil
	}
	return rv, nil
}

// forgetRun drops the chain of a run that is gone.
func (h *Hub) forgetRun(key hub.Key) {
	h.chainMu.Lock()
	defer h.chainMu.Unlock()
	if c := h.chains[key]; c != nil && !c.busy() {
		delete(h.chains, key)
	}
}

func isRunKind(kind string) bool {
	return kind == fleet.KindClusterStagedUpdateRun || kind == fleet.KindStagedUpdateRun
}
