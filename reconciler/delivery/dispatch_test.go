package delivery_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler/delivery"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/reconciler/hub/hubtest"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

// barrier is a member transport whose deliveries each wait until n are
// under way at once: one Dispatch finishes only when it delivers n
// bindings side by side.
type barrier struct {
	n       int
	mu      sync.Mutex
	inside  int
	release chan struct{}
}

func (b *barrier) For(*fleet.MemberCluster) member.Driver { return b }

func (b *barrier) Deliver(ctx context.Context, _ member.Delivery) error {
	b.mu.Lock()
	b.inside++
	if b.inside == b.n {
		close(b.release)
	}
	b.mu.Unlock()
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%d of %d deliveries under way at once: %w", b.inside, b.n, ctx.Err())
	}
}

func (b *barrier) Remove(context.Context, member.Delivery) error { return nil }

// With Workers, Dispatch delivers that many bindings at once: a transport
// that returns only once all of them are under way does not hold it up.
func TestDispatchDeliversWorkersBindingsAtOnce(t *testing.T) {
	const workers = 4
	ctx := await.Context(t)
	h := embedded.New(clock.Real{}, nil)
	snapshot := &fleet.ResourceSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "app-0-snapshot",
		Labels:      map[string]string{fleet.PlacementTrackingLabel: "app", fleet.ResourceIndexLabel: "0"},
		Annotations: map[string]string{fleet.ResourceGroupHashAnnotation: "hash", fleet.NumberOfResourceSnapshotsAnnotation: "1"}},
		Spec: fleet.ResourceSnapshotSpec{SelectedResources: []runtime.RawExtension{{Raw: []byte(
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app","namespace":"default"},"data":{"k":"v"}}`)}}}}
	if err := h.CreateResourceSnapshot(ctx, snapshot); err != nil {
		t.Fatal(err)
	}
	var bindings []*fleet.Binding
	for i := range workers {
		cluster := fmt.Sprintf("member-%d", i)
		h.ApplyMemberCluster(&fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}})
		b := &fleet.Binding{ObjectMeta: metav1.ObjectMeta{Name: "app-" + cluster, Labels: map[string]string{fleet.PlacementTrackingLabel: "app"}},
			Spec:   fleet.ResourceBindingSpec{State: fleet.BindingStateBound, TargetCluster: cluster, ResourceSnapshotName: snapshot.Name},
			Status: fleet.ResourceBindingStatus{Conditions: []metav1.Condition{hubtest.RolloutStarted(1)}}}
		if err := h.CreateBinding(ctx, b); err != nil {
			t.Fatal(err)
		}
		bindings = append(bindings, b)
	}
	c := delivery.New(delivery.Config{Hub: h, Workers: workers})
	transport := &barrier{n: workers, release: make(chan struct{})}
	c.SetDrivers(transport)
	c.Resync(bindings)
	if err := c.Dispatch(ctx); err != nil {
		t.Fatal(err)
	}
	if c.Pending() != 0 {
		t.Errorf("%d deliveries still pending after Dispatch", c.Pending())
	}
	if transport.inside != workers {
		t.Errorf("Dispatch delivered %d bindings, want %d", transport.inside, workers)
	}
}

// recorder is a member transport that keeps what it was handed; works
// makes it a member.WorkDriver (the kubeconfig driver's kind).
type recorder struct {
	mu   sync.Mutex
	last member.Delivery
}

func (r *recorder) Deliver(_ context.Context, d member.Delivery) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = d
	return nil
}

func (*recorder) Remove(context.Context, member.Delivery) error { return nil }

type worksRecorder struct{ recorder }

func (*worksRecorder) AppliesWorks() {}

type transports map[string]member.Driver

func (t transports) For(m *fleet.MemberCluster) member.Driver { return t[m.Name] }

// A transport that applies Works (member.WorkDriver) is handed the
// binding's Works, as a member that pulls would find them on the hub,
// with their manifests decoded and the binding's generation, and no
// Resources; any other transport is handed the Resources.
func TestAWorkDriverIsHandedTheBindingsWorks(t *testing.T) {
	ctx := await.Context(t)
	h := embedded.New(clock.Real{}, nil)
	snapshot := &fleet.ResourceSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "app-0-snapshot",
		Labels:      map[string]string{fleet.PlacementTrackingLabel: "app", fleet.ResourceIndexLabel: "0"},
		Annotations: map[string]string{fleet.ResourceGroupHashAnnotation: "hash", fleet.NumberOfResourceSnapshotsAnnotation: "1"}},
		Spec: fleet.ResourceSnapshotSpec{SelectedResources: []runtime.RawExtension{{Raw: []byte(
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app","namespace":"default"},"data":{"k":"v"}}`)}}}}
	if err := h.CreateResourceSnapshot(ctx, snapshot); err != nil {
		t.Fatal(err)
	}
	pushed, simulated := &worksRecorder{}, &recorder{}
	var bindings []*fleet.Binding
	for _, cluster := range []string{"pushed", "simulated"} {
		h.ApplyMemberCluster(&fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}})
		b := &fleet.Binding{ObjectMeta: metav1.ObjectMeta{Name: "app-" + cluster, Labels: map[string]string{fleet.PlacementTrackingLabel: "app"}},
			Spec:   fleet.ResourceBindingSpec{State: fleet.BindingStateBound, TargetCluster: cluster, ResourceSnapshotName: snapshot.Name},
			Status: fleet.ResourceBindingStatus{Conditions: []metav1.Condition{hubtest.RolloutStarted(1)}}}
		if err := h.CreateBinding(ctx, b); err != nil {
			t.Fatal(err)
		}
		bindings = append(bindings, b)
	}
	c := delivery.New(delivery.Config{Hub: h})
	c.SetDrivers(transports{"pushed": pushed, "simulated": simulated})
	c.Resync(bindings)
	if err := c.Dispatch(ctx); err != nil {
		t.Fatal(err)
	}
	d := pushed.last
	if len(d.Resources) != 0 || len(d.Works) != 1 {
		t.Fatalf("the work driver was handed %d resources and %d Works, want its one Work alone", len(d.Resources), len(d.Works))
	}
	w := d.Works[0]
	if w.Name != "app-work" || w.Namespace != "fleet-member-pushed" || w.Generation != d.Binding.Generation || w.Labels[fleet.ParentBindingLabel] != "app-pushed" {
		t.Errorf("Work %s/%s generation %d labels %v; want fleet-member-pushed/app-work at the binding's generation %d",
			w.Namespace, w.Name, w.Generation, w.Labels, d.Binding.Generation)
	}
	if m := w.Spec.Workload.Manifests; len(m) != 1 || m[0].Raw != nil || m[0].Object == nil {
		t.Errorf("manifests %+v, want the ConfigMap decoded", m)
	}
	if s := simulated.last; len(s.Resources) != 1 || len(s.Works) != 0 {
		t.Errorf("the other driver was handed %d resources and %d Works, want the one resource", len(s.Resources), len(s.Works))
	}
}
