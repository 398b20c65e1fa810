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
