package embedded_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
)

// TestRestorePutsEveryKindBackInItsTable: an object of every kind the hub
// keeps, in both scopes, reads back after Restore, and the next write's
// resourceVersion is above every restored one.
func TestRestorePutsEveryKindBackInItsTable(t *testing.T) {
	ctx := context.Background()
	store := embedded.NewMemoryStore()
	meta := func(ns, name string, rv int, labels map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: strings.Repeat("9", rv), Labels: labels}
	}
	put := func(o runtime.Object) {
		m := o.(metav1.Object)
		store.Put(embedded.ObjectRef{Kind: fleet.MustKindFor(o).Kind, Key: embedded.KeyOf(m)}, o)
	}
	put(&fleet.MemberCluster{ObjectMeta: meta("", "member-1", 1, nil)})
	put(&fleet.ClusterResourcePlacementEviction{ObjectMeta: meta("", "evict", 1, nil)})
	for _, ns := range []string{"", "app"} {
		owned := map[string]string{fleet.PlacementTrackingLabel: "p"}
		put(&fleet.Placement{ObjectMeta: meta(ns, "p", 1, nil)})
		put(&fleet.PolicySnapshot{ObjectMeta: meta(ns, "p-0", 1, owned)})
		put(&fleet.ResourceSnapshot{ObjectMeta: meta(ns, "p-0-snapshot", 1, owned)})
		put(&fleet.Binding{ObjectMeta: meta(ns, "p-member-1", 4, owned)})
		put(&fleet.UpdateStrategy{ObjectMeta: meta(ns, "s", 1, nil)})
		put(&fleet.UpdateRun{ObjectMeta: meta(ns, "run", 1, nil)})
		put(&fleet.ApprovalRequest{ObjectMeta: meta(ns, "run-canary", 1, nil)})
	}
	h := embedded.New(clock.NewFake(t0), store)
	n, err := h.Restore(ctx)
	if err != nil || n != store.Len() {
		t.Fatalf("Restore = %d, %v; want %d objects", n, err, store.Len())
	}
	if _, err := h.GetEviction(ctx, hub.Key{Name: "evict"}); err != nil {
		t.Errorf("eviction: %v", err)
	}
	if ms, _ := h.ListMemberClusters(ctx); len(ms) != 1 {
		t.Errorf("member clusters: %d; want 1", len(ms))
	}
	for _, ns := range []string{"", "app"} {
		key := func(name string) hub.Key { return hub.Key{Namespace: ns, Name: name} }
		for what, err := range map[string]error{
			"placement":        second(h.GetPlacement(ctx, key("p"))),
			"binding":          second(h.GetBinding(ctx, key("p-member-1"))),
			"strategy":         second(h.GetUpdateStrategy(ctx, key("s"))),
			"run":              second(h.GetUpdateRun(ctx, key("run"))),
			"approval request": second(h.GetApprovalRequest(ctx, key("run-canary"))),
		} {
			if err != nil {
				t.Errorf("%s in %q: %v", what, ns, err)
			}
		}
		if ps, _ := h.ListPolicySnapshots(ctx, key("p")); len(ps) != 1 {
			t.Errorf("policy snapshots in %q: %d; want 1", ns, len(ps))
		}
		if rs, _ := h.ListResourceSnapshots(ctx, key("p")); len(rs) != 1 {
			t.Errorf("resource snapshots in %q: %d; want 1", ns, len(rs))
		}
	}
	a, err := h.GetApprovalRequest(ctx, hub.Key{Name: "run-canary"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.UpdateApprovalRequestStatus(ctx, a); err != nil {
		t.Fatal(err)
	}
	if a, _ = h.GetApprovalRequest(ctx, hub.Key{Name: "run-canary"}); a.ResourceVersion != "10000" {
		t.Errorf("resourceVersion after a restored 9999: %s; want 10000", a.ResourceVersion)
	}
}

// TestRestoreRefusesAnObjectTheHubDoesNotKeep: a gitfleet record in the
// store is a bug, not something to drop silently.
func TestRestoreRefusesAnObjectTheHubDoesNotKeep(t *testing.T) {
	store := embedded.NewMemoryStore()
	store.Put(embedded.ObjectRef{Kind: fleet.KindCommit, Key: hub.Key{Name: "abc"}}, &fleet.Commit{ObjectMeta: metav1.ObjectMeta{Name: "abc"}})
	if _, err := embedded.New(clock.NewFake(t0), store).Restore(context.Background()); err == nil || !strings.Contains(err.Error(), "*v1beta1.Commit") {
		t.Errorf("Restore of a Commit: %v; want an error naming its type", err)
	}
}

func second[T any](_ T, err error) error { return err }
