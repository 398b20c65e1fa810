package reconciler

import (
	"sync"
	"time"

	"github.com/gitfleet/gitfleet/clock"
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

// queue is a deduplicating FIFO of items with delayed adds on a Clock, the
// way controller-runtime's workqueue works: an item queued twice before it is
// processed is processed once; a delayed add keeps only the earliest timer.
type queue struct {
	clock clock.Clock

	mu      sync.Mutex
	order   []item
	queued  map[item]bool
	timers  map[item]timerEntry
	wake    chan struct{}
	backoff map[item]time.Duration
	active  int // items popped and not yet done
}

type timerEntry struct {
	at    time.Time
	timer clock.Timer
}

func newQueue(c clock.Clock) *queue {
	return &queue{
		clock:   c,
		queued:  map[item]bool{},
		timers:  map[item]timerEntry{},
		wake:    make(chan struct{}, 1),
		backoff: map[item]time.Duration{},
	}
}

// add queues it now.
func (q *queue) add(it item) {
	q.mu.Lock()
	if !q.queued[it] {
		q.queued[it] = true
		q.order = append(q.order, it)
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
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

// pop takes the next item, if any; the caller calls done when it has
// processed it.
func (q *queue) pop() (item, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.order) == 0 {
		return item{}, false
	}
	it := q.order[0]
	q.order = q.order[1:]
	delete(q.queued, it)
	q.active++
	return it, true
}

// done ends the processing of a popped item.
func (q *queue) done() {
	q.mu.Lock()
	q.active--
	q.mu.Unlock()
}

// idle reports whether nothing is queued or being processed.
func (q *queue) idle() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.order) == 0 && q.active == 0
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
func (q *queue) failed(it item) time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	d := q.backoff[it]
	switch {
	case d == 0:
		d = 5 * time.Millisecond
	case d < 5*time.Minute:
		d *= 2
	}
	if d > 5*time.Minute {
		d = 5 * time.Minute
	}
	q.backoff[it] = d
	return d
}

// forget resets an item's backoff after a success.
func (q *queue) forget(it item) {
	q.mu.Lock()
	delete(q.backoff, it)
	q.mu.Unlock()
}

// stopTimers cancels every pending delayed add (for shutdown).
func (q *queue) stopTimers() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for it, e := range q.timers {
		e.timer.Stop()
		delete(q.timers, it)
	}
}
