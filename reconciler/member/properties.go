package member

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// Observation is what a member cluster reports for property-based
// scheduling, as KubeFleet's member agent puts it in the MemberCluster
// status: properties (the node count, costs) and resource usage.
type Observation struct {
	Properties                       map[fleet.PropertyName]string
	Capacity, Allocatable, Available corev1.ResourceList
}

// SimulatedObservation is what a simulated member reports: its annotations
// named as KubeFleet's properties (fleet.IsPropertyName), a resource
// property going to the resource usage list of its capacity type. Values
// that are not quantities are left out (validation refuses them).
func SimulatedObservation(annotations map[string]string) Observation {
	var o Observation
	for k, v := range annotations {
		if !fleet.IsPropertyName(k) {
			continue
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			continue
		}
		rest, isResource := strings.CutPrefix(k, fleet.ResourcePropertyNamePrefix)
		if !isResource {
			if o.Properties == nil {
				o.Properties = map[fleet.PropertyName]string{}
			}
			o.Properties[fleet.PropertyName(k)] = v
			continue
		}
		capacityType, name, ok := strings.Cut(rest, "-")
		if !ok {
			continue
		}
		var list *corev1.ResourceList
		switch capacityType {
		case fleet.TotalCapacityName:
			list = &o.Capacity
		case fleet.AllocatableCapacityName:
			list = &o.Allocatable
		case fleet.AvailableCapacityName:
			list = &o.Available
		default:
			continue
		}
		if *list == nil {
			*list = corev1.ResourceList{}
		}
		(*list)[corev1.ResourceName(name)] = q
	}
	return o
}

// NodeObservation is KubeFleet's built-in property collection (its member
// agent without a property provider): the node count, the nodes' summed
// CPU and memory capacity and allocatable, and as available the
// allocatable minus the container requests of every pod bound to a node
// that has not succeeded or failed, floored at zero.
func NodeObservation(nodes []corev1.Node, pods []corev1.Pod) Observation {
	var capCPU, capMem, allocCPU, allocMem resource.Quantity
	for i := range nodes {
		capCPU.Add(*nodes[i].Status.Capacity.Cpu())
		capMem.Add(*nodes[i].Status.Capacity.Memory())
		allocCPU.Add(*nodes[i].Status.Allocatable.Cpu())
		allocMem.Add(*nodes[i].Status.Allocatable.Memory())
	}
	availCPU, availMem := allocCPU.DeepCopy(), allocMem.DeepCopy()
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, c := range p.Spec.Containers {
			availCPU.Sub(c.Resources.Requests[corev1.ResourceCPU])
			availMem.Sub(c.Resources.Requests[corev1.ResourceMemory])
		}
	}
	if availCPU.Sign() < 0 {
		availCPU = resource.Quantity{}
	}
	if availMem.Sign() < 0 {
		availMem = resource.Quantity{}
	}
	return Observation{
		Properties:  map[fleet.PropertyName]string{fleet.NodeCountProperty: fmt.Sprintf("%d", len(nodes))},
		Capacity:    corev1.ResourceList{corev1.ResourceCPU: capCPU, corev1.ResourceMemory: capMem},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: allocCPU, corev1.ResourceMemory: allocMem},
		Available:   corev1.ResourceList{corev1.ResourceCPU: availCPU, corev1.ResourceMemory: availMem},
	}
}

// Record writes o into status and reports whether anything changed. An
// observation time moves only with its value (a property's) or with any
// resource value (the resource usage's): gitfleet writes a member's status
// when what it reports changes, not on every look, so a fleet at rest
// makes no status commits.
func Record(status *fleet.MemberClusterStatus, o Observation, now time.Time) bool {
	at := metav1.NewTime(now.UTC().Truncate(time.Second))
	props := map[fleet.PropertyName]fleet.PropertyValue(nil)
	for name, v := range o.Properties {
		if props == nil {
			props = map[fleet.PropertyName]fleet.PropertyValue{}
		}
		pv := fleet.PropertyValue{Value: v, ObservationTime: at}
		if old, ok := status.Properties[name]; ok && old.Value == v {
			pv.ObservationTime = old.ObservationTime
		}
		props[name] = pv
	}
	usage := fleet.ResourceUsage{Capacity: o.Capacity, Allocatable: o.Allocatable, Available: o.Available}
	old := status.ResourceUsage
	if sameList(old.Capacity, usage.Capacity) && sameList(old.Allocatable, usage.Allocatable) && sameList(old.Available, usage.Available) {
		usage = old
	} else if len(usage.Capacity)+len(usage.Allocatable)+len(usage.Available) > 0 {
		usage.ObservationTime = at
	}
	if equality.Semantic.DeepEqual(status.Properties, props) && equality.Semantic.DeepEqual(status.ResourceUsage, usage) {
		return false
	}
	status.Properties, status.ResourceUsage = props, usage
	return true
}

// sameList compares quantities by value (1000m is 1).
func sameList(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

// MemberStatusHub is what the property collector needs of a hub: the
// members, and a write of a member's status (the status subresource on an
// API server).
type MemberStatusHub interface {
	hub.MemberClusters
	UpdateMemberClusterStatus(ctx context.Context, m *fleet.MemberCluster) error
}

// NodeObserver reads a real member's nodes and pods; the kubeconfig
// driver (reconciler/member/kube.Clusters) implements it.
type NodeObserver interface {
	Observe(ctx context.Context, kubeconfigContext string) (Observation, error)
}

// PropertyCollector keeps the members' status properties current: a
// simulated member's from its annotations, a kubeconfig member's from its
// nodes (when an observer is given). A member without a driver reports
// none. KubeFleet's member agent does this on every heartbeat (60s by
// default); Sync is one such round over the fleet.
type PropertyCollector struct {
	Hub      MemberStatusHub
	Observer NodeObserver // optional
	Now      func() time.Time
	Log      *slog.Logger
}

// Sync observes every member once and writes the status of those whose
// observation changed. A member that cannot be reached keeps what it last
// reported; the error names it, and the others are still written.
func (c *PropertyCollector) Sync(ctx context.Context) (written int, err error) {
	members, err := c.Hub.ListMemberClusters(ctx)
	if err != nil {
		return 0, err
	}
	sort.Slice(members, func(i, j int) bool { return members[i].Name < members[j].Name })
	var errs []error
	for _, m := range members {
		if m.DeletionTimestamp != nil {
			continue
		}
		o, ok, err := c.observe(ctx, m)
		if err != nil {
			errs = append(errs, fmt.Errorf("member cluster %q: %w", m.Name, err))
			continue
		}
		if !ok {
			continue
		}
		if !Record(&m.Status, o, c.Now()) {
			continue
		}
		if err := c.Hub.UpdateMemberClusterStatus(ctx, m); err != nil {
			if !hub.IsConflict(err) { // a conflict: the member changed, and its change event brings another round
				errs = append(errs, fmt.Errorf("member cluster %q: write its properties: %w", m.Name, err))
			}
			continue
		}
		written++
		if c.Log != nil {
			c.Log.Info("member cluster properties updated", "member", m.Name, "properties", len(m.Status.Properties))
		}
	}
	return written, errors.Join(errs...)
}

// observe is the member's observation; false when its driver reports
// none (no driver, or a kubeconfig member without an observer).
func (c *PropertyCollector) observe(ctx context.Context, m *fleet.MemberCluster) (Observation, bool, error) {
	driver := m.Annotations[fleet.DriverAnnotation]
	switch {
	case driver == fleet.DriverSimulated:
		return SimulatedObservation(m.Annotations), true, nil
	case strings.HasPrefix(driver, fleet.DriverKubeconfigPrefix) && c.Observer != nil:
		o, err := c.Observer.Observe(ctx, strings.TrimPrefix(driver, fleet.DriverKubeconfigPrefix))
		return o, err == nil, err
	case driver == "":
		return Observation{}, true, nil // nothing to report: clear what a former driver reported
	}
	return Observation{}, false, nil
}
