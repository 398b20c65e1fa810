package reconciler

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"

	"github.com/gitfleet/gitfleet/internal/clock"
)

// item is one unit of work: reconcile a run, or schedule a placement.
type item struct {
	kind itemKind
	key  Key
}

type itemKind int

const (
	runItem itemKind = iota
	placementItem
)

// queue is client-go's work queue with delayed adds on gitfleet's Clock.
//
// client-go's queue deduplicates (an item queued twice before it is taken
// is processed once) and never hands out an item a worker still holds: one
// added during its processing waits until the worker is done with it. So
// however many workers the controller runs, one run never has two passes
// at once. Its rate limiter gives the failure backoff.
//
// The delayed adds are not client-go's delaying queue: that one fires its
// timers on a goroutine of its own, so in virtual time (simulate, the
// fake-clock tests) a clock step could not tell when the item has landed,
// and the controller could not count its pending timers to decide that
// nothing will move; timers here fire on the Clock, inside its step.
// Workers take items under the queue's lock rather than blocking in Get,
// so idle never misses an item between Get and its processing, and Run
// can stop and start again (a shut-down client-go queue stays shut).
type queue struct {
	clock   clock.Clock
	ready   *workqueue.Typed[item]
	backoff workqueue.TypedRateLimiter[item]

	mu     sync.Mutex
	timers map[item]timerEntry
	active int // items taken and not yet done
	// wake has a token when items may be ready; a worker that takes one
	// and leaves more passes the token on, so every worker gets to work.
	wake chan struct{}
}

type timerEntry struct {
	at    time.Time
	timer clock.Timer
}

func newQueue(c clock.Clock) *queue {
	return &queue{
		clock:   c,
		ready:   workqueue.NewTyped[item](),
		backoff: workqueue.NewTypedItemExponentialFailureRateLimiter[item](5*time.Millisecond, 5*time.Minute),
		timers:  map[item]timerEntry{},
		wake:    make(chan struct{}, 1),
	}
}

func (q *queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// add queues it now.
func (q *queue) add(it item) {
	q.ready.Add(it)
	q.signal()
}

// addAfter queues it once d has passed, unless an earlier add is pending.
func (q *queue) addAfter(it item, d time.Duration) {
	if d <= 0 {
		q.add(it)
		return
	}
	at := q.clock.Now().Add(d)
	q.mu.Lock()
	if e, ok := q.timers[it]; ok {
		if !at.Before(e.at) {
			q.mu.Unlock()
			return
		}
		e.timer.Stop()
	}
	var t clock.Timer
	t = q.clock.AfterFunc(d, func() {
		q.mu.Lock()
		if e, ok := q.timers[it]; ok && e.timer == t {
			delete(q.timers, it)
		}
		q.mu.Unlock()
		q.add(it)
	})
	q.timers[it] = timerEntry{at: at, timer: t}
	q.mu.Unlock()
}

// pop takes the next item, if any; the caller calls done with it when it
// has processed it.
func (q *queue) pop() (item, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	// Every taker holds q.mu, so a non-empty queue cannot empty before Get.
	if q.ready.Len() == 0 {
		return item{}, false
	}
	it, _ := q.ready.Get()
	q.active++
	if q.ready.Len() > 0 {
		q.signal()
	}
	return it, true
}

// done ends the processing of a popped item; an item added again during
// its processing is queued now.
func (q *queue) done(it item) {
	q.mu.Lock()
	q.ready.Done(it)
	q.active--
	more := q.ready.Len() > 0
	q.mu.Unlock()
	if more {
		q.signal()
	}
}

// idle reports whether nothing is queued or being processed.
func (q *queue) idle() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ready.Len() == 0 && q.active == 0
}

// timersDueWithin is the number of delayed adds that fire within d.
func (q *queue) timersDueWithin(d time.Duration) int {
	limit := q.clock.Now().Add(d)
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, e := range q.timers {
		if !e.at.After(limit) {
			n++
		}
	}
	return n
}

// pendingTimers is the number of delayed adds not yet fired.
func (q *queue) pendingTimers() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.timers)
}

// failed returns the next backoff for an item whose reconcile failed:
// exponential from 5ms, capped at 5 minutes.
func (q *queue) failed(it item) time.Duration { return q.backoff.When(it) }

// forget resets an item's backoff after a success.
func (q *queue) forget(it item) { q.backoff.Forget(it) }

// stopTimers cancels every pending delayed add (for shutdown).
func (q *queue) stopTimers() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for it, e := range q.timers {
		e.timer.Stop()
		delete(q.timers, it)
	}
}
