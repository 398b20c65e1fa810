package embedded_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/reconciler/hub/hubtest"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

var t0 = time.Date(2026, 1, 12, 22, 37, 57, 0, time.UTC)

// gateStore is a MemoryStore whose Flush can be made to fail, and which
// calls onFlush (before flushing) so a test can look at the world at the
// instant the state becomes durable.
type gateStore struct {
	*embedded.MemoryStore
	mu      sync.Mutex
	fail    error
	onFlush func()
	urgent  []bool
}

func (s *gateStore) Flush(ctx context.Context, urgent bool) error {
	s.mu.Lock()
	fail, onFlush := s.fail, s.onFlush
	s.urgent = append(s.urgent, urgent)
	s.mu.Unlock()
	if onFlush != nil {
		onFlush()
	}
	if fail != nil {
		return fail
	}
	return s.MemoryStore.Flush(ctx, urgent)
}

func (s *gateStore) setFail(err error) { s.mu.Lock(); s.fail = err; s.mu.Unlock() }

// fixture is a hub with one CRP (example-placement), a resource snapshot
// at index 0 with a namespace, a configmap and a deployment, and a
// Scheduled binding per member.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	clk   *clock.Fake
	store *gateStore
	hub   *embedded.Hub
}

const placementName = "example-placement"

func newFixture(t *testing.T, members ...*fleet.MemberCluster) *fixture {
	t.Helper()
	return newFixtureOn(t, func(s *gateStore) hub.Store { return s }, members...)
}

// newFixtureOn is newFixture with the hub writing to store(the gateStore).
func newFixtureOn(t *testing.T, store func(*gateStore) hub.Store, members ...*fleet.MemberCluster) *fixture {
	t.Helper()
	f := &fixture{t: t, ctx: context.Background(), clk: clock.NewFake(t0),
		store: &gateStore{MemoryStore: embedded.NewMemoryStore()}}
	f.hub = embedded.New(f.clk, store(f.store))
	for _, m := range members {
		f.hub.ApplyMemberCluster(m)
	}
	f.hub.ApplyPlacement(&fleet.Placement{
		ObjectMeta: metav1.ObjectMeta{Name: placementName},
		Spec:       fleet.PlacementSpec{Strategy: fleet.RolloutStrategy{Type: fleet.ExternalRolloutStrategyType}},
	})
	f.snapshot(0, "value1")
	for _, m := range members {
		must(t, f.hub.CreateBinding(f.ctx, &fleet.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: bindingName(m.Name),
				Labels: map[string]string{fleet.PlacementTrackingLabel: placementName}},
			Spec: fleet.ResourceBindingSpec{State: fleet.BindingStateScheduled, TargetCluster: m.Name,
				SchedulingPolicySnapshotName: placementName + "-0"},
		}))
	}
	return f
}

func bindingName(cluster string) string { return placementName + "-" + cluster + "-0123abcd" }

func simulated(name string, annotations ...string) *fleet.MemberCluster {
	m := &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name,
		Annotations: map[string]string{fleet.DriverAnnotation: fleet.DriverSimulated}}}
	for i := 0; i+1 < len(annotations); i += 2 {
		m.Annotations[annotations[i]] = annotations[i+1]
	}
	return m
}

func (f *fixture) snapshot(index int, value string) {
	f.t.Helper()
	raw := func(s string) runtime.RawExtension { return runtime.RawExtension{Raw: []byte(s)} }
	must(f.t, f.hub.CreateResourceSnapshot(f.ctx, &fleet.ResourceSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d-snapshot", placementName, index),
			Labels: map[string]string{fleet.PlacementTrackingLabel: placementName,
				fleet.ResourceIndexLabel: fmt.Sprint(index)},
			Annotations: map[string]string{fleet.ResourceGroupHashAnnotation: "h"}},
		Spec: fleet.ResourceSnapshotSpec{SelectedResources: []runtime.RawExtension{
			raw(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"test-namespace"}}`),
			raw(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"test-cm","namespace":"test-namespace"},"data":{"key":"` + value + `"}}`),
			raw(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"nginx-deployment","namespace":"test-namespace"}}`),
		}},
	}))
}

func (f *fixture) binding(cluster string) *fleet.Binding {
	f.t.Helper()
	b, err := f.hub.GetBinding(f.ctx, hub.Key{Name: bindingName(cluster)})
	must(f.t, err)
	return b
}

// bind does what a run does to start a cluster: Bound on a snapshot,
// then RolloutStarted.
func (f *fixture) bind(cluster string, index int) *fleet.Binding {
	f.t.Helper()
	b := f.binding(cluster)
	b.Spec.State = fleet.BindingStateBound
	b.Spec.ResourceSnapshotName = fmt.Sprintf("%s-%d-snapshot", placementName, index)
	f.start(b)
	return f.binding(cluster)
}

// start writes b, its spec as a run sets it, and then marks its
// RolloutStarted at the generation that write made, as a run starts a
// cluster: delivery waits for the second write.
func (f *fixture) start(b *fleet.Binding) {
	f.t.Helper()
	must(f.t, f.hub.UpdateBinding(f.ctx, b))
	cur := f.binding(b.Spec.TargetCluster)
	meta.RemoveStatusCondition(&cur.Status.Conditions, fleet.ResourceBindingRolloutStarted)
	cur.Status.Conditions = append(cur.Status.Conditions, hubtest.RolloutStarted(cur.Generation))
	must(f.t, f.hub.UpdateBindingStatus(f.ctx, cur))
}

func (f *fixture) placed(cluster string) []member.Placed {
	s, ok := f.hub.Members().Simulated(cluster)
	if !ok {
		return nil
	}
	return s.Placed()
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func cond(b *fleet.Binding, t string) *metav1.Condition {
	return meta.FindStatusCondition(b.Status.Conditions, t)
}

// wantCond checks a binding condition's status and reason at the binding's
// generation.
func wantCond(t *testing.T, b *fleet.Binding, typ string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	c := cond(b, typ)
	if c == nil {
		t.Fatalf("binding %s has no %s condition; conditions: %+v", b.Name, typ, b.Status.Conditions)
	}
	if c.Status != status || c.Reason != reason || c.ObservedGeneration != b.Generation {
		t.Fatalf("binding %s %s = %s/%s at generation %d, want %s/%s at %d (message %q)",
			b.Name, typ, c.Status, c.Reason, c.ObservedGeneration, status, reason, b.Generation, c.Message)
	}
}

func TestDeliveryNeverPrecedesTheFlush(t *testing.T) {
	f := newFixture(t, simulated("member1"))
	f.bind("member1", 0)

	f.store.setFail(errors.New("push rejected"))
	if err := f.hub.Commit(f.ctx); err == nil {
		t.Fatal("Commit with a failing store returned nil")
	}
	if got := f.placed("member1"); len(got) != 0 {
		t.Fatalf("member1 holds %d placements after a failed flush, want none", len(got))
	}
	if b := f.binding("member1"); len(b.Status.Conditions) != 1 {
		t.Fatalf("binding has conditions besides RolloutStarted after a failed flush: %+v", b.Status.Conditions)
	}
	if n := f.hub.PendingDeliveries(); n != 1 {
		t.Fatalf("pending deliveries after a failed flush = %d, want 1", n)
	}

	// At the instant of the next (successful) flush, the member must still
	// be empty and the store must already hold the binding Bound and
	// guarded by the work-cleanup finalizer.
	var atFlush []string
	f.store.onFlush = func() {
		if len(f.placed("member1")) != 0 {
			atFlush = append(atFlush, "member1 already holds resources when the flush starts")
		}
		objs, _ := f.store.Load(f.ctx)
		for _, o := range objs {
			if b, ok := o.(*fleet.Binding); ok {
				if b.Spec.State != fleet.BindingStateBound || len(b.Finalizers) != 1 || b.Finalizers[0] != fleet.WorkFinalizer {
					atFlush = append(atFlush, fmt.Sprintf("stored binding is %s with finalizers %v", b.Spec.State, b.Finalizers))
				}
			}
		}
	}
	f.store.setFail(nil)
	must(t, f.hub.Commit(f.ctx))
	for _, p := range atFlush {
		t.Error(p)
	}
	placed := f.placed("member1")
	if len(placed) != 1 || placed[0].ResourceSnapshot != placementName+"-0-snapshot" || len(placed[0].Resources) != 3 {
		t.Fatalf("member1 after Commit holds %+v, want the 3 resources of snapshot 0", placed)
	}
	b := f.binding("member1")
	for _, c := range []struct{ typ, reason string }{
		{fleet.ResourceBindingOverridden, member.OverrideNotSpecifiedReason},
		{fleet.ResourceBindingWorkSynchronized, member.AllWorkSyncedReason},
		{fleet.ResourceBindingApplied, member.AllWorkAppliedReason},
		{fleet.ResourceBindingAvailable, member.AllWorkAvailableReason},
	} {
		wantCond(t, b, c.typ, metav1.ConditionTrue, c.reason)
	}
	if n := f.hub.PendingDeliveries(); n != 0 {
		t.Fatalf("pending deliveries after Commit = %d, want 0", n)
	}
}

func TestCommitFlushesUrgentlyOnlyWhenSideEffectsWait(t *testing.T) {
	f := newFixture(t, simulated("member1"))
	must(t, f.hub.Commit(f.ctx)) // nothing bound yet
	f.bind("member1", 0)
	must(t, f.hub.Commit(f.ctx)) // a delivery waits
	must(t, f.hub.Commit(f.ctx)) // nothing left
	want := []bool{false, true, false}
	if fmt.Sprint(f.store.urgent) != fmt.Sprint(want) {
		t.Fatalf("flush urgency = %v, want %v", f.store.urgent, want)
	}
}

func TestSimulatedMemberAvailability(t *testing.T) {
	tests := []struct {
		name          string
		member        *fleet.MemberCluster
		advance       time.Duration
		wantAvailable metav1.ConditionStatus
		wantReason    string
		wantFailed    []string
	}{
		{name: "available in the same commit by default", member: simulated("member1"),
			wantAvailable: metav1.ConditionTrue, wantReason: member.AllWorkAvailableReason},
		// In progress, not failed: the engine waits instead of retrying.
		{name: "not yet available before sim-available-after",
			member: simulated("member1", fleet.SimAvailableAfterAnnotation, "30s"), advance: 29 * time.Second,
			wantAvailable: metav1.ConditionFalse, wantReason: fleet.ResourceNotAvailableYetReason},
		{name: "available once sim-available-after passed",
			member: simulated("member1", fleet.SimAvailableAfterAnnotation, "30s"), advance: 30 * time.Second,
			wantAvailable: metav1.ConditionTrue, wantReason: member.AllWorkAvailableReason},
		{name: "never available with sim-unavailable",
			member: simulated("member1", fleet.SimUnavailableAnnotation, "InvalidImageName"), advance: 24 * time.Hour,
			wantAvailable: metav1.ConditionFalse, wantReason: member.WorkNotAvailableReason,
			wantFailed: []string{"Deployment/nginx-deployment"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.member)
			f.bind("member1", 0)
			must(t, f.hub.Commit(f.ctx))
			f.clk.Advance(tt.advance)

			b := f.binding("member1")
			wantCond(t, b, fleet.ResourceBindingApplied, metav1.ConditionTrue, member.AllWorkAppliedReason)
			wantCond(t, b, fleet.ResourceBindingAvailable, tt.wantAvailable, tt.wantReason)
			if tt.wantAvailable == metav1.ConditionFalse {
				if got, want := cond(b, fleet.ResourceBindingAvailable).Message, "Work object example-placement-work is not yet available"; got != want {
					t.Errorf("Available message = %q, want %q", got, want)
				}
			}
			var failed []string
			for _, fp := range b.Status.FailedPlacements {
				failed = append(failed, fp.Kind+"/"+fp.Name)
				if fp.Condition.Reason != member.ManifestNotAvailableYetReason || fp.Condition.Message != member.ManifestNotAvailableYetMessage ||
					fp.Condition.Status != metav1.ConditionFalse || fp.Condition.Type != fleet.ResourceBindingAvailable {
					t.Errorf("failed placement condition = %+v", fp.Condition)
				}
				if fp.Group != "apps" || fp.Version != "v1" || fp.Namespace != "test-namespace" {
					t.Errorf("failed placement identifier = %+v", fp.ResourceIdentifier)
				}
			}
			if fmt.Sprint(failed) != fmt.Sprint(tt.wantFailed) {
				t.Errorf("failed placements = %v, want %v", failed, tt.wantFailed)
			}
		})
	}
}

func TestAvailabilityReportWakesSubscribers(t *testing.T) {
	f := newFixture(t, simulated("member1", fleet.SimAvailableAfterAnnotation, "1m"))
	f.bind("member1", 0)
	must(t, f.hub.Commit(f.ctx))
	var events []hub.Event
	f.hub.Subscribe(func(e hub.Event) { events = append(events, e) })
	f.clk.Advance(time.Minute)
	if len(events) != 1 || events[0].Kind != hub.EventBinding || events[0].Key.Name != bindingName("member1") ||
		events[0].Placement.Name != placementName {
		t.Fatalf("events when member1 became available = %+v, want one binding event for its binding", events)
	}
}

func TestDeliveryWithoutADriver(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		wantReason  string
		wantMessage string
	}{
		{name: "no driver annotation", wantReason: member.DriverNotConfiguredReason,
			wantMessage: `member cluster "member1" has no gitfleet.io/driver annotation; set it to "simulated" or "kubeconfig:<context>"`},
		{name: "unknown driver", annotations: map[string]string{fleet.DriverAnnotation: "ssh"},
			wantReason:  member.DriverNotConfiguredReason,
			wantMessage: `member cluster "member1" has an unknown gitfleet.io/driver annotation "ssh"; set it to "simulated" or "kubeconfig:<context>"`},
		{name: "kubeconfig driver", annotations: map[string]string{fleet.DriverAnnotation: "kubeconfig:prod-east"},
			wantReason:  member.NoKubeconfigReason,
			wantMessage: `member cluster "member1" uses driver "kubeconfig:prod-east", but gitfleet was started without a kubeconfig; pass --kubeconfig or set KUBECONFIG, or use "simulated" to simulate this member`},
		{name: "invalid simulation", annotations: map[string]string{fleet.DriverAnnotation: "simulated", fleet.SimAvailableAfterAnnotation: "soon"},
			wantReason:  member.InvalidSimulationReason,
			wantMessage: `member cluster "member1" has an invalid gitfleet.io/sim-available-after annotation "soon": want a non-negative Go duration such as 30s`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "member1", Annotations: tt.annotations}})
			f.bind("member1", 0)
			must(t, f.hub.Commit(f.ctx))
			b := f.binding("member1")
			wantCond(t, b, fleet.ResourceBindingApplied, metav1.ConditionFalse, tt.wantReason)
			if got := cond(b, fleet.ResourceBindingApplied).Message; got != tt.wantMessage {
				t.Errorf("Applied message = %q, want %q", got, tt.wantMessage)
			}
			if c := cond(b, fleet.ResourceBindingAvailable); c != nil {
				t.Errorf("Available reported without anything applied: %+v", c)
			}
			if got := f.placed("member1"); len(got) != 0 {
				t.Errorf("member1 holds %+v, want nothing", got)
			}
		})
	}
}

func TestDriverAnnotationAddedLaterRedelivers(t *testing.T) {
	f := newFixture(t, &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}})
	f.bind("member1", 0)
	must(t, f.hub.Commit(f.ctx))
	wantCond(t, f.binding("member1"), fleet.ResourceBindingApplied, metav1.ConditionFalse, member.DriverNotConfiguredReason)

	f.hub.ApplyMemberCluster(simulated("member1"))
	must(t, f.hub.Commit(f.ctx))
	wantCond(t, f.binding("member1"), fleet.ResourceBindingAvailable, metav1.ConditionTrue, member.AllWorkAvailableReason)
	if got := f.placed("member1"); len(got) != 1 {
		t.Fatalf("member1 holds %d placements after its driver was configured, want 1", len(got))
	}
}

func TestReportDiffAppliesNothing(t *testing.T) {
	f := newFixture(t, simulated("member1"))
	b := f.binding("member1")
	b.Spec.State = fleet.BindingStateBound
	b.Spec.ResourceSnapshotName = placementName + "-0-snapshot"
	b.Spec.ApplyStrategy = &fleet.ApplyStrategy{Type: fleet.ApplyStrategyTypeReportDiff}
	f.start(b)
	must(t, f.hub.Commit(f.ctx))

	b = f.binding("member1")
	wantCond(t, b, fleet.ResourceBindingDiffReported, metav1.ConditionTrue, member.AllWorkDiffReportedReason)
	for _, typ := range []string{fleet.ResourceBindingApplied, fleet.ResourceBindingAvailable} {
		if c := cond(b, typ); c != nil {
			t.Errorf("ReportDiff binding has %s: %+v", typ, c)
		}
	}
	if got := f.placed("member1"); len(got) != 0 {
		t.Fatalf("member1 holds %+v under ReportDiff, want nothing", got)
	}
}

func TestNewSnapshotIsDeliveredAtTheNewGeneration(t *testing.T) {
	f := newFixture(t, simulated("member1", fleet.SimAvailableAfterAnnotation, "10s"))
	f.snapshot(1, "value2")
	first := f.bind("member1", 0)
	must(t, f.hub.Commit(f.ctx))
	second := f.bind("member1", 1)
	if second.Generation == first.Generation {
		t.Fatal("re-pointing the binding did not raise its generation")
	}
	must(t, f.hub.Commit(f.ctx))
	f.clk.Advance(10 * time.Second)

	b := f.binding("member1")
	wantCond(t, b, fleet.ResourceBindingAvailable, metav1.ConditionTrue, member.AllWorkAvailableReason)
	placed := f.placed("member1")
	if len(placed) != 1 || placed[0].ResourceSnapshot != placementName+"-1-snapshot" || placed[0].Generation != second.Generation {
		t.Fatalf("member1 holds %+v, want snapshot 1 at generation %d", placed, second.Generation)
	}
	if got := placed[0].Resources[1].Object["data"].(map[string]any)["key"]; got != "value2" {
		t.Fatalf("member1's configmap has key=%v, want value2", got)
	}
}

func TestRemoval(t *testing.T) {
	tests := []struct {
		name      string
		leave     bool // the member leaves the fleet before the binding is deleted
		failFlush bool
		wantGone  bool
		wantHeld  int // placements left on the member
	}{
		{name: "deleting a delivered binding removes its resources, then the binding", wantGone: true},
		{name: "nothing is removed before the deletion is flushed", failFlush: true, wantHeld: 1},
		{name: "resources stay on a member that left the fleet", leave: true, wantGone: true, wantHeld: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, simulated("member1"))
			f.bind("member1", 0)
			must(t, f.hub.Commit(f.ctx))
			if tt.leave {
				f.hub.DeleteMemberCluster("member1")
			}
			must(t, f.hub.DeleteBinding(f.ctx, hub.Key{Name: bindingName("member1")}))
			b := f.binding("member1")
			if b.DeletionTimestamp == nil {
				t.Fatal("a delivered binding was removed before its resources")
			}
			if tt.failFlush {
				f.store.setFail(errors.New("offline"))
			}
			err := f.hub.Commit(f.ctx)
			if (err != nil) != tt.failFlush {
				t.Fatalf("Commit error = %v, want failure %v", err, tt.failFlush)
			}
			_, err = f.hub.GetBinding(f.ctx, hub.Key{Name: bindingName("member1")})
			if gone := hub.IsNotFound(err); gone != tt.wantGone {
				t.Fatalf("binding gone = %v (err %v), want %v", gone, err, tt.wantGone)
			}
			if got := len(f.placed("member1")); got != tt.wantHeld {
				t.Fatalf("member1 holds %d placements, want %d", got, tt.wantHeld)
			}
		})
	}
}

func TestUndeliveredBindingIsDeletedAtOnce(t *testing.T) {
	f := newFixture(t, simulated("member1"))
	f.bind("member1", 0) // bound but never committed: nothing delivered
	must(t, f.hub.DeleteBinding(f.ctx, hub.Key{Name: bindingName("member1")}))
	if _, err := f.hub.GetBinding(f.ctx, hub.Key{Name: bindingName("member1")}); !hub.IsNotFound(err) {
		t.Fatalf("undelivered binding still exists after delete: %v", err)
	}
	must(t, f.hub.Commit(f.ctx))
	if got := f.placed("member1"); len(got) != 0 {
		t.Fatalf("member1 received a deleted binding: %+v", got)
	}
}

func TestUnschedulingKeepsResources(t *testing.T) {
	f := newFixture(t, simulated("member1"))
	f.bind("member1", 0)
	must(t, f.hub.Commit(f.ctx))
	b := f.binding("member1")
	b.Spec.State = fleet.BindingStateUnscheduled
	must(t, f.hub.UpdateBinding(f.ctx, b))
	must(t, f.hub.Commit(f.ctx))
	if got := f.placed("member1"); len(got) != 1 {
		t.Fatalf("member1 holds %d placements after unscheduling, want 1 (resources stay until deletion)", len(got))
	}
}

func TestResyncRedeliversAfterARestart(t *testing.T) {
	f := newFixture(t, simulated("member1"))
	f.bind("member1", 0)
	f.hub.Resync()
	if n := f.hub.PendingDeliveries(); n != 1 {
		t.Fatalf("pending after Resync = %d, want 1", n)
	}
	must(t, f.hub.Commit(f.ctx))
	if got := f.placed("member1"); len(got) != 1 {
		t.Fatalf("member1 holds %d placements after Resync+Commit, want 1", len(got))
	}
}

func TestMissingSnapshotFailsTheWorkSync(t *testing.T) {
	f := newFixture(t, simulated("member1"))
	b := f.binding("member1")
	b.Spec.State = fleet.BindingStateBound
	b.Spec.ResourceSnapshotName = placementName + "-7-snapshot"
	f.start(b)
	must(t, f.hub.Commit(f.ctx))
	b = f.binding("member1")
	wantCond(t, b, fleet.ResourceBindingWorkSynchronized, metav1.ConditionFalse, fleet.SyncWorkFailedReason)
	if got := f.placed("member1"); len(got) != 0 {
		t.Fatalf("member1 holds %+v, want nothing", got)
	}
}

func TestAvailabilityArrivesFromARealTimer(t *testing.T) {
	ctx := context.Background()
	h := embedded.New(clock.Real{}, nil)
	h.ApplyMemberCluster(simulated("member1", fleet.SimAvailableAfterAnnotation, "20ms"))
	f := &fixture{t: t, ctx: ctx, hub: h}
	f.hub.ApplyPlacement(&fleet.Placement{ObjectMeta: metav1.ObjectMeta{Name: placementName}})
	f.snapshot(0, "value1")
	must(t, h.CreateBinding(ctx, &fleet.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: bindingName("member1"), Labels: map[string]string{fleet.PlacementTrackingLabel: placementName}},
		Spec:       fleet.ResourceBindingSpec{State: fleet.BindingStateScheduled, TargetCluster: "member1"},
	}))
	woken := make(chan struct{}, 16)
	h.Subscribe(func(hub.Event) { woken <- struct{}{} })
	f.bind("member1", 0)
	must(t, h.Commit(ctx))

	deadline := time.After(time.Until(await.Deadline(t)))
	for {
		if c := cond(f.binding("member1"), fleet.ResourceBindingAvailable); c != nil && c.Status == metav1.ConditionTrue {
			return
		}
		select {
		case <-woken:
		case <-deadline:
			t.Fatalf("member1 never became available; conditions %+v", f.binding("member1").Status.Conditions)
		}
	}
}

// snapshotOf records resource snapshot index of the placement with these
// manifests (JSON).
func (f *fixture) snapshotOf(index int, manifests ...string) {
	f.t.Helper()
	var raw []runtime.RawExtension
	for _, m := range manifests {
		raw = append(raw, runtime.RawExtension{Raw: []byte(m)})
	}
	must(f.t, f.hub.CreateResourceSnapshot(f.ctx, &fleet.ResourceSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d-snapshot", placementName, index),
			Labels: map[string]string{fleet.PlacementTrackingLabel: placementName,
				fleet.ResourceIndexLabel: fmt.Sprint(index)},
			Annotations: map[string]string{fleet.ResourceGroupHashAnnotation: fmt.Sprint(index)}},
		Spec: fleet.ResourceSnapshotSpec{SelectedResources: raw},
	}))
}

func TestTheBindingNamesWhatItsMemberKeptAnnotatedPruneDisabled(t *testing.T) {
	for name, m := range map[string]*fleet.MemberCluster{
		"available at once":        simulated("member1"),
		"available after a minute": simulated("member1", fleet.SimAvailableAfterAnnotation, "1m"),
	} {
		t.Run(name, func(t *testing.T) { testPruneSkipped(t, m) })
	}
}

func testPruneSkipped(t *testing.T, m *fleet.MemberCluster) {
	f := newFixture(t, m)
	ns := `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"test-namespace"}}`
	kept := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"kept","namespace":"test-namespace","annotations":{"gitfleet.io/prune":"disabled"}}}`
	f.snapshotOf(1, ns, kept)
	f.snapshotOf(2, ns)
	f.bind("member1", 1)
	must(t, f.hub.Commit(f.ctx))
	f.clk.Advance(time.Minute)
	if c := cond(f.binding("member1"), fleet.ResourceBindingPruneSkipped); c != nil {
		t.Fatalf("PruneSkipped = %+v before anything left the snapshot", c)
	}

	f.bind("member1", 2)
	must(t, f.hub.Commit(f.ctx))
	f.clk.Advance(time.Minute) // the Available report names it too
	b := f.binding("member1")
	wantCond(t, b, fleet.ResourceBindingAvailable, metav1.ConditionTrue, member.AllWorkAvailableReason)
	wantCond(t, b, fleet.ResourceBindingApplied, metav1.ConditionTrue, member.AllWorkAppliedReason)
	wantCond(t, b, fleet.ResourceBindingPruneSkipped, metav1.ConditionTrue, member.PruneDisabledReason)
	want := "1 resource left the resource snapshot but stays on the member cluster, annotated gitfleet.io/prune: disabled: ConfigMap test-namespace/kept"
	if got := cond(b, fleet.ResourceBindingPruneSkipped).Message; got != want {
		t.Errorf("PruneSkipped message = %q, want %q", got, want)
	}
	sim, _ := f.hub.Members().Simulated("member1")
	if left := sim.Left(); len(left) != 1 || left[0].Resource.GetName() != "kept" {
		t.Errorf("member1 keeps %+v, want the ConfigMap kept", left)
	}

	// Back in a snapshot, it is the placement's again and the condition goes.
	f.bind("member1", 1)
	must(t, f.hub.Commit(f.ctx))
	f.clk.Advance(time.Minute)
	if c := cond(f.binding("member1"), fleet.ResourceBindingPruneSkipped); c != nil {
		t.Errorf("PruneSkipped = %+v once the object is back in the snapshot", c)
	}
}

// sealingStore is a gateStore that seals (hub.SealingStore): its flush
// is fixed at Seal and done by finish, as the Git status tree's push.
type sealingStore struct{ *gateStore }

func (s sealingStore) Seal(urgent bool) func(context.Context) error {
	return func(ctx context.Context) error { return s.Flush(ctx, urgent) }
}

// A sealed commit delivers each binding as it was sealed: a run that
// re-points the binding to a new snapshot while the commit's flush
// travels is not delivered by that commit (its write is not durable yet)
// but by the next one. A flush that fails delivers nothing.
func TestASealedCommitDeliversTheBindingsAsTheyWereSealed(t *testing.T) {
	f := newFixtureOn(t, func(s *gateStore) hub.Store { return sealingStore{s} }, simulated("member1"))
	f.snapshot(1, "value2")
	first := f.bind("member1", 0)

	finish, err := f.hub.Seal(f.ctx)
	must(t, err)
	second := f.bind("member1", 1) // a pass writes while the flush travels
	must(t, finish(f.ctx))
	placed := f.placed("member1")
	if len(placed) != 1 || placed[0].ResourceSnapshot != placementName+"-0-snapshot" || placed[0].Generation != first.Generation {
		t.Fatalf("member1 after the sealed commit holds %+v, want snapshot 0 at generation %d (as sealed)", placed, first.Generation)
	}

	f.store.setFail(errors.New("push rejected"))
	finish, err = f.hub.Seal(f.ctx)
	must(t, err)
	if err := finish(f.ctx); err == nil {
		t.Fatal("a sealed commit whose flush failed returned nil")
	}
	if placed := f.placed("member1"); placed[0].Generation != first.Generation {
		t.Fatalf("member1 holds generation %d after a failed flush, want still %d", placed[0].Generation, first.Generation)
	}
	f.store.setFail(nil)
	must(t, f.hub.Commit(f.ctx))
	placed = f.placed("member1")
	if len(placed) != 1 || placed[0].ResourceSnapshot != placementName+"-1-snapshot" || placed[0].Generation != second.Generation {
		t.Fatalf("member1 after the next commit holds %+v, want snapshot 1 at generation %d", placed, second.Generation)
	}
}
