package embedded

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// TestPlacementIndexAgreesWithAFullScan: after random creates, updates
// that move a binding to another placement or give or take its finalizer,
// status writes, deletions (at once, or held by a finalizer) and snapshot
// creates and deletes, listing a placement's bindings and snapshots by the
// index returns what a scan of the whole table keeps, on the hub that
// wrote them and on a hub restored from its store; and no placement is
// left filed with nothing in it. The whole table's sorted list, kept
// between writes, is what a scan finds too.
func TestPlacementIndexAgreesWithAFullScan(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewSource(27))
	store := NewMemoryStore()
	h := New(clock.NewFake(time.Date(2026, 11, 27, 5, 0, 0, 0, time.UTC)), store)
	placements := []hub.Key{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Namespace: "app", Name: "a"}, {Namespace: "app", Name: "d"}}
	pick := func() hub.Key { return placements[rng.Intn(len(placements))] }
	owned := func(p hub.Key) map[string]string { return map[string]string{fleet.PlacementTrackingLabel: p.Name} }
	const finalizer = "test/hold"
	for i := range 3000 {
		p := pick()
		name := fmt.Sprintf("b%d", rng.Intn(60))
		key := hub.Key{Namespace: p.Namespace, Name: name}
		cur, err := h.GetBinding(ctx, key)
		exists := err == nil
		switch op := rng.Intn(7); {
		case !exists || op == 0:
			b := &fleet.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: name, Labels: owned(p)}}
			if rng.Intn(2) == 0 {
				b.Finalizers = []string{finalizer}
			}
			err = h.CreateBinding(ctx, b)
			if exists && !hub.IsAlreadyExists(err) {
				t.Fatalf("step %d: creating %s again: %v", i, key, err)
			}
			if exists {
				err = nil
			}
		case op == 1: // to another placement of its namespace
			to := pick()
			cur.Labels = owned(hub.Key{Namespace: cur.Namespace, Name: to.Name})
			err = h.UpdateBinding(ctx, cur)
		case op == 2:
			cur.Finalizers = nil
			err = h.UpdateBinding(ctx, cur)
		case op == 3:
			_, err = h.AddBindingFinalizer(ctx, key, finalizer)
		case op == 4:
			err = h.UpdateBindingStatus(ctx, cur)
		case op == 5:
			err = h.DeleteBinding(ctx, key)
		default:
			s := &fleet.ResourceSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: name + "-snapshot", Labels: owned(p)}}
			if err = h.CreateResourceSnapshot(ctx, s); hub.IsAlreadyExists(err) {
				err = h.DeleteResourceSnapshot(ctx, keyOf(s))
			}
		}
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if i%10 == 0 {
			checkIndex(t, fmt.Sprintf("step %d", i), h, placements)
		}
	}
	checkIndex(t, "after the writes", h, placements)

	restored := New(clock.NewFake(time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)), store)
	if _, err := restored.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	checkIndex(t, "after a restore", restored, placements)
	for _, p := range placements {
		if got, want := names(restored.bindings.listGroupShared(p)), names(h.bindings.listGroupShared(p)); !slices.Equal(got, want) {
			t.Errorf("restored bindings of %s = %v; want %v", p, got, want)
		}
	}
}

// checkIndex fails t unless every placement's bindings and snapshots by
// the index are those a full scan finds, the table's kept list is too, and
// every filed group has objects.
func checkIndex(t *testing.T, when string, h *Hub, placements []hub.Key) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range placements {
		byIndex := h.bindings.listGroupShared(p)
		byScan := h.bindings.listShared(func(b *fleet.Binding) bool { return placementOf(b) == p })
		if !slices.Equal(byIndex, byScan) {
			t.Fatalf("%s: bindings of %s by the index %v; a scan finds %v", when, p, names(byIndex), names(byScan))
		}
		snaps := h.snapshots.listGroupShared(p)
		scanned := h.snapshots.listShared(func(s *fleet.ResourceSnapshot) bool { return placementOf(s) == p })
		if !slices.Equal(snaps, scanned) {
			t.Fatalf("%s: snapshots of %s by the index %v; a scan finds %v", when, p, names(snaps), names(scanned))
		}
	}
	if all, scan := h.bindings.listShared(nil), h.bindings.listShared(func(*fleet.Binding) bool { return true }); !slices.Equal(all, scan) {
		t.Fatalf("%s: the table's kept list %v; a scan finds %v", when, names(all), names(scan))
	}
	filed := 0
	for g, keys := range h.bindings.groups {
		if len(keys) == 0 {
			t.Fatalf("%s: placement %s is filed with no bindings", when, g)
		}
		filed += len(keys)
	}
	if filed != len(h.bindings.items) {
		t.Fatalf("%s: %d bindings filed under placements; the table has %d", when, filed, len(h.bindings.items))
	}
}

func names[T object](objs []T) []types.NamespacedName {
	out := make([]types.NamespacedName, len(objs))
	for i, o := range objs {
		out[i] = keyOf(o)
	}
	return out
}
