package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/runview"
)

// pendingApprovals exports gitfleet_approval_request_pending_seconds. It
// keeps when each unapproved request was created and computes the age at
// scrape time, so the age grows between engine passes (a run waiting for a
// person is passed over only every minute or so).
type pendingApprovals struct {
	clock clock.Clock
	desc  *prometheus.Desc

	mu    sync.Mutex
	since map[pendingKey]time.Time
}

type pendingKey struct{ namespace, name, stage, taskType string }

func newPendingApprovals(clk clock.Clock) *pendingApprovals {
	return &pendingApprovals{
		clock: clk,
		desc: prometheus.NewDesc(ApprovalRequestPendingSeconds,
			"Age of each approval request the run is waiting on, from its creation, in seconds.",
			[]string{LabelNamespace, LabelName, LabelStage, LabelTaskTypeSnake}, nil),
		since: map[pendingKey]time.Time{},
	}
}

// observe replaces the run's pending approvals with those its view shows
// (runview: an Approval task whose request was created and not yet
// approved, none once the run finished).
func (p *pendingApprovals) observe(run *fleet.UpdateRun, pending []runview.Approval) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.since {
		if k.namespace == run.Namespace && k.name == run.Name {
			delete(p.since, k)
		}
	}
	for _, a := range pending {
		p.since[pendingKey{run.Namespace, run.Name, a.Stage, a.TaskType}] = a.Created.Time
	}
}

func (p *pendingApprovals) deleteRun(namespace, name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.since {
		if k.namespace == namespace && k.name == name {
			delete(p.since, k)
		}
	}
}

// Describe implements prometheus.Collector.
func (p *pendingApprovals) Describe(ch chan<- *prometheus.Desc) { ch <- p.desc }

// Collect implements prometheus.Collector.
func (p *pendingApprovals) Collect(ch chan<- prometheus.Metric) {
	now := p.clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, t := range p.since {
		age := now.Sub(t).Seconds()
		if age < 0 {
			age = 0
		}
		ch <- prometheus.MustNewConstMetric(p.desc, prometheus.GaugeValue, age, k.namespace, k.name, k.stage, k.taskType)
	}
}
