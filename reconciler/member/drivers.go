package member

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
)

// Drivers picks the driver of each member cluster from its
// gitfleet.io/driver annotation. It keeps one Simulated per cluster name for
// the life of the process, so what a simulated member holds survives the
// member leaving and rejoining the fleet (resources left on a departed
// member stay there, as on a real cluster).
type Drivers struct {
	clock    clock.Clock
	reporter Reporter
	log      *slog.Logger

	shelf shelf // the resources simulated members hold, one copy each

	mu       sync.Mutex
	sims     map[string]*Simulated
	clusters Clusters
}

// Clusters reaches real member clusters by kubeconfig context; the
// kubeconfig driver (package reconciler/member/kube) implements it. It lives behind an
// interface so the hub and `gitfleet simulate` do not depend on client-go.
type Clusters interface {
	// Driver returns the driver of the cluster behind a kubeconfig context.
	Driver(context string) Driver
	// Pending is the number of deliveries still progressing by themselves:
	// being applied, or applied and becoming healthy.
	Pending() int
}

// UseClusters makes kubeconfig:<context> members deliver through c.
func (ds *Drivers) UseClusters(c Clusters) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	ds.clusters = c
}

// NewDrivers returns the driver registry; reporter receives every report.
func NewDrivers(c clock.Clock, reporter Reporter, log *slog.Logger) *Drivers {
	if log == nil {
		log = slog.Default()
	}
	return &Drivers{clock: c, reporter: reporter, log: log, sims: map[string]*Simulated{}}
}

// For returns the driver of m, chosen by its gitfleet.io/driver annotation.
func (ds *Drivers) For(m *fleet.MemberCluster) Driver {
	v, ok := m.Annotations[fleet.DriverAnnotation]
	switch {
	case !ok || strings.TrimSpace(v) == "":
		return unconfigured{reporter: ds.reporter, message: fmt.Sprintf(
			"member cluster %q has no %s annotation; set it to %q or %q",
			m.Name, fleet.DriverAnnotation, fleet.DriverSimulated, fleet.DriverKubeconfigPrefix+"<context>")}
	case v == fleet.DriverSimulated:
		return ds.simulated(m.Name)
	case strings.HasPrefix(v, fleet.DriverKubeconfigPrefix):
		ds.mu.Lock()
		clusters := ds.clusters
		ds.mu.Unlock()
		if clusters == nil {
			return unconfigured{reporter: ds.reporter, reason: NoKubeconfigReason, message: fmt.Sprintf(
				"member cluster %q uses driver %q, but gitfleet was started without a kubeconfig; "+
					"pass --kubeconfig or set KUBECONFIG, or use %q to simulate this member",
				m.Name, v, fleet.DriverSimulated)}
		}
		return clusters.Driver(strings.TrimPrefix(v, fleet.DriverKubeconfigPrefix))
	default:
		return unconfigured{reporter: ds.reporter, message: fmt.Sprintf(
			"member cluster %q has an unknown %s annotation %q; set it to %q or %q",
			m.Name, fleet.DriverAnnotation, v, fleet.DriverSimulated, fleet.DriverKubeconfigPrefix+"<context>")}
	}
}

// DriverConfig sums up the annotations of a member cluster that choose
// and shape its driver (the driver, and a simulated member's behaviour):
// when it changes, the member's bound bindings are delivered again, so a
// member given its driver annotation, or moved from simulated to a real
// cluster, receives what it is bound to without a new run. Both hubs use
// it, so they re-deliver on the same changes.
func DriverConfig(annotations map[string]string) string {
	_, unavailable := annotations[fleet.SimUnavailableAnnotation]
	return strconv.Quote(annotations[fleet.DriverAnnotation]) + strconv.Quote(annotations[fleet.SimAvailableAfterAnnotation]) +
		strconv.Quote(annotations[fleet.SimUnavailableAnnotation]) + strconv.FormatBool(unavailable) +
		strconv.Quote(annotations[fleet.SimDriftAnnotation])
}

func (ds *Drivers) simulated(name string) *Simulated {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	s, ok := ds.sims[name]
	if !ok {
		s = newSimulated(name, ds.clock, ds.reporter, ds.log, &ds.shelf)
		ds.sims[name] = s
	}
	return s
}

// Simulated returns the simulated member of that name, if one was ever used.
func (ds *Drivers) Simulated(name string) (*Simulated, bool) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	s, ok := ds.sims[name]
	return s, ok
}

// SimulatedNames lists the simulated members ever used, sorted.
func (ds *Drivers) SimulatedNames() []string {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	out := make([]string, 0, len(ds.sims))
	for n := range ds.sims {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// unconfigured is the driver of a member gitfleet does not know how to
// reach. The hub still synchronizes the work (it has it ready), but nothing
// is applied, and the binding says why.
type unconfigured struct {
	reporter Reporter
	reason   string // DriverNotConfiguredReason when empty
	message  string
}

func (u unconfigured) Deliver(_ context.Context, d Delivery) error {
	reason := u.reason
	if reason == "" {
		reason = DriverNotConfiguredReason
	}
	return reportNotApplied(u.reporter, d, reason, u.message)
}

// Remove has nothing to take off: nothing was ever applied.
func (unconfigured) Remove(context.Context, Delivery) error { return nil }

func reportNotApplied(r Reporter, d Delivery, reason, message string) error {
	gen := d.Generation()
	return r.ReportBindingStatus(d.Key(), gen, []metav1.Condition{
		overridden(d.Binding),
		workSynchronized(gen),
		notApplied(gen, reason, message),
	}, Placements{})
}

// PendingTimers is the number of simulated availability delays still
// running: while any is, the fleet can still progress without a person.
func (ds *Drivers) PendingTimers() int {
	ds.mu.Lock()
	sims := make([]*Simulated, 0, len(ds.sims))
	for _, s := range ds.sims {
		sims = append(sims, s)
	}
	ds.mu.Unlock()
	n := 0
	for _, s := range sims {
		s.mu.Lock()
		n += len(s.timers)
		s.mu.Unlock()
	}
	return n
}

// Pending is the number of deliveries that still progress without a
// person: simulated availability delays, and real clusters applying or
// becoming healthy.
func (ds *Drivers) Pending() int {
	n := ds.PendingTimers()
	ds.mu.Lock()
	clusters := ds.clusters
	ds.mu.Unlock()
	if clusters != nil {
		n += clusters.Pending()
	}
	return n
}
