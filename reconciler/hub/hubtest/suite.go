// Package hubtest is the conformance suite of hub.Hub: the behaviours the
// engine relies on, run against every implementation (reconciler/hub/embedded in
// memory, reconciler/hub/kube on a real API server), as go-git runs one storage suite
// against each storer. An implementation's test calls Run with a function
// that returns an empty hub.
package hubtest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
)

// Namespace is where the suite puts the namespaced family's objects; a
// subject's hub must accept objects in it.
const Namespace = "hubtest"

// Subject is one empty hub under test.
type Subject struct {
	// Hub is the hub; it must also be a hub.Notifier.
	Hub hub.Hub
	// Apply writes a person's object (a placement, member cluster,
	// strategy or run) as `git push` or `kubectl apply` does: spec,
	// labels and annotations are taken, status is kept, a spec change
	// raises the generation. It returns once the hub's reads show the
	// change (a person's write reaches a kube hub through its watch).
	Apply func(t testing.TB, obj Object)
	// DeleteRun starts a run's deletion, as a person deleting it does, and
	// returns once the hub's reads show it.
	DeleteRun func(t testing.TB, key hub.Key)
	// Delivering, when set, returns the subject's hub as it delivers to
	// members (its Hub a Deliverer), for the delivery behaviours; they
	// are skipped without it.
	Delivering func(t testing.TB) Subject
}

// Object is a fleet object.
type Object interface {
	metav1.Object
	runtime.Object
}

// families: every behaviour holds for the cluster-scoped and the
// namespaced kinds.
var families = []struct{ name, ns string }{{"cluster-scoped", ""}, {"namespaced", Namespace}}

// Run runs the suite; newSubject returns an empty hub for each test.
func Run(t *testing.T, newSubject func(t *testing.T) Subject) {
	for _, b := range desiredBehaviours {
		t.Run(b.name, func(t *testing.T) {
			for _, f := range families {
				t.Run(f.name, func(t *testing.T) {
					s := newSubject(t)
					su := &suite{t: t, ctx: await.Context(t), s: s, h: s.Hub, ns: f.ns}
					b.test(su, su.desired())
				})
			}
		})
	}
	for _, b := range behaviours {
		t.Run(b.name, func(t *testing.T) {
			for _, f := range families {
				t.Run(f.name, func(t *testing.T) {
					s := newSubject(t)
					b.test(&suite{t: t, ctx: await.Context(t), s: s, h: s.Hub, ns: f.ns})
				})
			}
		})
	}
}

// suite is one behaviour's test on one family.
type suite struct {
	t   *testing.T
	ctx context.Context
	s   Subject
	h   hub.Hub
	ns  string
}

var behaviours = []struct {
	name string
	test func(*suite)
}{
	{"created objects read back as copies", (*suite).createdObjectsReadBackAsCopies},
	{"a second create is AlreadyExists", (*suite).secondCreateIsAlreadyExists},
	{"a missing object is NotFound", (*suite).missingObjectIsNotFound},
	{"a write on a stale resourceVersion is a Conflict", (*suite).staleWriteIsConflict},
	{"the generation rises on spec changes only", (*suite).generationRisesOnSpecChangesOnly},
	{"status writes keep the spec", (*suite).statusWritesKeepTheSpec},
	{"object and status are written apart", (*suite).objectAndStatusAreWrittenApart},
	{"a binding with a finalizer stays until the finalizer is removed", (*suite).bindingDeletionWaitsForFinalizer},
	{"a finalizer is added once, never to a terminating binding", (*suite).finalizerIsAddedOnce},
	{"a handed-over status is written as a status write", (*suite).handedOverStatusIsAStatusWrite},
	{"a removed run is gone", (*suite).removedRunIsGone},
	{"approval requests are listed by labels", (*suite).approvalRequestsListedByLabels},
	{"a metric gate's evidence is stored with its request", (*suite).metricGateEvidenceIsStored},
	{"lists hold the placement's objects sorted by name", (*suite).listsArePerPlacementAndSorted},
	{"events name the placement or the run", (*suite).eventsNamePlacementOrRun},
	{"override snapshots are put, listed and deleted", (*suite).overrideSnapshotsPutListDelete},
	{"a snapshot that removes resources keeps their count", (*suite).removedResourcesAreCounted},
	{"snapshots in use outlive the history limit", (*suite).snapshotsInUseOutliveTheHistoryLimit},
	{"member properties are stored in the member's status", (*suite).memberPropertiesAreStored},
	{"evictions and budgets read back; eviction status writes keep the spec", (*suite).evictionsAndBudgets},
	{"bindings are delivered and removed through the hub's storage", (*suite).bindingsAreDeliveredAndRemoved},
	{"delivery waits for the rollout to start at the binding's generation", (*suite).deliveryWaitsForTheRolloutToStart},
	{"rollout windows are kept; a change is an event", (*suite).rolloutWindowsAreKept},
	{"a member whose agent's heartbeat is lost is left out of new placements", (*suite).aLostHeartbeatKeepsAMemberOutOfNewPlacements},
	{"a placement picks a pulled member once its agent joins", (*suite).aPlacementPicksAPulledMemberOnceItJoins},
}

// ---- fixtures ----

func (s *suite) key(name string) hub.Key { return hub.Key{Namespace: s.ns, Name: name} }

func (s *suite) meta(name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: s.ns, Labels: labels}
}

func tracking(placement string) map[string]string {
	return map[string]string{fleet.PlacementTrackingLabel: placement}
}

func (s *suite) binding(name, placement, cluster string) *fleet.Binding {
	return &fleet.Binding{ObjectMeta: s.meta(name, tracking(placement)), Spec: fleet.ResourceBindingSpec{
		State: fleet.BindingStateScheduled, SchedulingPolicySnapshotName: placement + "-0", TargetCluster: cluster,
		ClusterDecision: fleet.ClusterDecision{ClusterName: cluster, Selected: true, Reason: "picked by the test"}}}
}

func (s *suite) policySnapshot(placement string, index int) *fleet.PolicySnapshot {
	return &fleet.PolicySnapshot{ObjectMeta: s.meta(fmt.Sprintf("%s-%d", placement, index), tracking(placement)),
		Spec: fleet.SchedulingPolicySnapshotSpec{PolicyHash: []byte("hash")}}
}

// resourceSnapshot is the master of a one-snapshot group, as
// resourcesnapshot.Ensure makes it (its hash annotation is what makes it
// the master).
func (s *suite) resourceSnapshot(placement string, index int) *fleet.ResourceSnapshot {
	labels := tracking(placement)
	labels[fleet.ResourceIndexLabel] = fmt.Sprint(index)
	meta := s.meta(fmt.Sprintf(fleet.ResourceSnapshotNameFmt, placement, index), labels)
	meta.Annotations = map[string]string{fleet.ResourceGroupHashAnnotation: "hash", fleet.NumberOfResourceSnapshotsAnnotation: "1"}
	return &fleet.ResourceSnapshot{ObjectMeta: meta,
		Spec: fleet.ResourceSnapshotSpec{SelectedResources: []runtime.RawExtension{{Raw: []byte(
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app","namespace":"default"},"data":{"k":"v"}}`)}}}}
}

func (s *suite) approval(name, run, stage string) *fleet.ApprovalRequest {
	return &fleet.ApprovalRequest{ObjectMeta: s.meta(name, map[string]string{fleet.TargetUpdateRunLabel: run, fleet.TaskTypeLabel: "afterStage"}),
		Spec: fleet.ApprovalRequestSpec{TargetUpdateRun: run, TargetStage: stage}}
}

func (s *suite) placement(name string) *fleet.Placement {
	p := &fleet.Placement{ObjectMeta: s.meta(name, nil), Spec: fleet.PlacementSpec{
		ResourceSelectors: []fleet.ResourceSelectorTerm{{Version: "v1", Kind: "ConfigMap", Name: "app"}},
		Policy:            &fleet.PlacementPolicy{PlacementType: fleet.PickAllPlacementType},
		Strategy:          fleet.RolloutStrategy{Type: fleet.ExternalRolloutStrategyType}}}
	fleet.SetDefaultsPlacement(p)
	return p
}

func (s *suite) run(name, placement string) *fleet.UpdateRun {
	return &fleet.UpdateRun{ObjectMeta: s.meta(name, nil), Spec: fleet.UpdateRunSpec{
		PlacementName: placement, StagedUpdateStrategyName: "strategy", ResourceSnapshotIndex: "0", State: fleet.StateRun}}
}

func condition(typ string, gen int64) metav1.Condition {
	return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, ObservedGeneration: gen, Reason: "Test",
		Message: "set by the conformance suite", LastTransitionTime: metav1.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (s *suite) must(err error) {
	s.t.Helper()
	if err != nil {
		s.t.Fatal(err)
	}
}

func (s *suite) getBinding(name string) *fleet.Binding {
	s.t.Helper()
	b, err := s.h.GetBinding(s.ctx, s.key(name))
	s.must(err)
	return b
}

func (s *suite) getRun(name string) *fleet.UpdateRun {
	s.t.Helper()
	r, err := s.h.GetUpdateRun(s.ctx, s.key(name))
	s.must(err)
	return r
}

// ---- behaviours ----

func (s *suite) createdObjectsReadBackAsCopies() {
	s.must(s.h.CreateBinding(s.ctx, s.binding("b1", "app", "member-1")))
	got := s.getBinding("b1")
	if got.Generation != 1 || got.ResourceVersion == "" || got.CreationTimestamp.IsZero() {
		t := s.t
		t.Errorf("created binding: generation %d, resourceVersion %q, creationTimestamp %v; want 1, set, set",
			got.Generation, got.ResourceVersion, got.CreationTimestamp)
	}
	if got.Kind != fleet.BindingKind(s.ns) {
		s.t.Errorf("kind = %q; want %q", got.Kind, fleet.BindingKind(s.ns))
	}
	got.Spec.TargetCluster = "changed by the caller"
	got.Labels["mutated"] = "yes"
	again := s.getBinding("b1")
	if again.Spec.TargetCluster != "member-1" || again.Labels["mutated"] != "" {
		s.t.Errorf("mutating a read object changed the hub: %+v", again.ObjectMeta.Labels)
	}
	list, err := s.h.ListBindings(s.ctx, s.key("app"))
	s.must(err)
	if len(list) != 1 {
		s.t.Fatalf("ListBindings = %d bindings; want 1", len(list))
	}
	list[0].Spec.State = fleet.BindingStateBound
	if s.getBinding("b1").Spec.State != fleet.BindingStateScheduled {
		s.t.Error("mutating a listed object changed the hub")
	}

	s.must(s.h.CreateApprovalRequest(s.ctx, s.approval("run-after-canary", "run", "canary")))
	a, err := s.h.GetApprovalRequest(s.ctx, s.key("run-after-canary"))
	s.must(err)
	if a.Spec.TargetUpdateRun != "run" || a.Spec.TargetStage != "canary" || a.Generation != 1 {
		s.t.Errorf("approval request read back as %+v, generation %d", a.Spec, a.Generation)
	}
}

func (s *suite) secondCreateIsAlreadyExists() {
	for _, c := range []struct {
		kind   string
		create func() error
	}{
		{"binding", func() error { return s.h.CreateBinding(s.ctx, s.binding("b1", "app", "member-1")) }},
		{"policy snapshot", func() error { return s.h.CreatePolicySnapshot(s.ctx, s.policySnapshot("app", 0)) }},
		{"resource snapshot", func() error { return s.h.CreateResourceSnapshot(s.ctx, s.resourceSnapshot("app", 0)) }},
		{"approval request", func() error { return s.h.CreateApprovalRequest(s.ctx, s.approval("a", "run", "canary")) }},
	} {
		s.must(c.create())
		if err := c.create(); !hub.IsAlreadyExists(err) {
			s.t.Errorf("second create of a %s: %v; want AlreadyExists", c.kind, err)
		}
	}
}

func (s *suite) missingObjectIsNotFound() {
	for _, c := range []struct {
		what string
		kind func(namespace string) string
		err  func() error
	}{
		{"GetPlacement", fleet.PlacementKind, func() error { _, err := s.h.GetPlacement(s.ctx, s.key("none")); return err }},
		{"GetBinding", fleet.BindingKind, func() error { _, err := s.h.GetBinding(s.ctx, s.key("none")); return err }},
		{"GetUpdateRun", fleet.UpdateRunKind, func() error { _, err := s.h.GetUpdateRun(s.ctx, s.key("none")); return err }},
		{"GetUpdateStrategy", fleet.UpdateStrategyKind, func() error { _, err := s.h.GetUpdateStrategy(s.ctx, s.key("none")); return err }},
		{"GetApprovalRequest", fleet.ApprovalRequestKind, func() error { _, err := s.h.GetApprovalRequest(s.ctx, s.key("none")); return err }},
		{"UpdateBinding", fleet.BindingKind, func() error { return s.h.UpdateBinding(s.ctx, s.binding("none", "app", "m")) }},
		{"UpdateBindingStatus", fleet.BindingKind, func() error { return s.h.UpdateBindingStatus(s.ctx, s.binding("none", "app", "m")) }},
		{"UpdatePlacementStatus", fleet.PlacementKind, func() error { return s.h.UpdatePlacementStatus(s.ctx, s.placement("none")) }},
		{"UpdateUpdateRunStatus", fleet.UpdateRunKind, func() error { return s.h.UpdateUpdateRunStatus(s.ctx, s.run("none", "app")) }},
		{"UpdateUpdateRunFinalizers", fleet.UpdateRunKind, func() error { return s.h.UpdateUpdateRunFinalizers(s.ctx, s.run("none", "app")) }},
		{"UpdateApprovalRequestStatus", fleet.ApprovalRequestKind, func() error {
			return s.h.UpdateApprovalRequestStatus(s.ctx, s.approval("none", "run", "canary"))
		}},
		{"UpdatePolicySnapshot", fleet.PolicySnapshotKind, func() error { return s.h.UpdatePolicySnapshot(s.ctx, s.policySnapshot("none", 0)) }},
		{"DeleteBinding", fleet.BindingKind, func() error { return s.h.DeleteBinding(s.ctx, s.key("none")) }},
		{"DeleteResourceSnapshot", fleet.ResourceSnapshotKind, func() error { return s.h.DeleteResourceSnapshot(s.ctx, s.key("none")) }},
		{"DeleteApprovalRequest", fleet.ApprovalRequestKind, func() error { return s.h.DeleteApprovalRequest(s.ctx, s.key("none")) }},
	} {
		err := c.err()
		if !hub.IsNotFound(err) {
			s.t.Errorf("%s of a missing object: %v; want NotFound", c.what, err)
			continue
		}
		// The error names the object's resource, as an API server's does.
		var status apierrors.APIStatus
		k, _ := fleet.LookupKind(c.kind(s.ns))
		if !errors.As(err, &status) || status.Status().Details == nil ||
			status.Status().Details.Group != k.Group || status.Status().Details.Kind != k.Plural {
			s.t.Errorf("%s of a missing object: %v; want a NotFound of %s", c.what, err, k.GroupResource())
		}
	}
	if err := s.h.RemoveUpdateRun(s.ctx, s.key("none")); err != nil {
		s.t.Errorf("RemoveUpdateRun of a missing run: %v; want nil (already gone)", err)
	}
}

func (s *suite) staleWriteIsConflict() {
	s.must(s.h.CreateBinding(s.ctx, s.binding("b1", "app", "member-1")))
	stale := s.getBinding("b1")
	fresh := s.getBinding("b1")
	fresh.Status.Conditions = []metav1.Condition{condition(fleet.ResourceBindingApplied, 1)}
	s.must(s.h.UpdateBindingStatus(s.ctx, fresh))
	stale.Spec.State = fleet.BindingStateBound
	if err := s.h.UpdateBinding(s.ctx, stale); !hub.IsConflict(err) {
		s.t.Errorf("UpdateBinding on a stale resourceVersion: %v; want Conflict", err)
	}
	if got := s.getBinding("b1"); got.Spec.State != fleet.BindingStateScheduled {
		s.t.Errorf("a refused stale write changed the binding to %s", got.Spec.State)
	}
	stale.Status.Conditions = []metav1.Condition{condition(fleet.ResourceBindingAvailable, 1)}
	if err := s.h.UpdateBindingStatus(s.ctx, stale); !hub.IsConflict(err) {
		s.t.Errorf("UpdateBindingStatus on a stale resourceVersion: %v; want Conflict", err)
	}

	s.s.Apply(s.t, s.run("run", "app"))
	staleRun := s.getRun("run")
	freshRun := s.getRun("run")
	freshRun.Status.Conditions = []metav1.Condition{condition(fleet.StagedUpdateRunConditionInitialized, 1)}
	s.must(s.h.UpdateUpdateRunStatus(s.ctx, freshRun))
	staleRun.Status.Conditions = []metav1.Condition{condition(fleet.StagedUpdateRunConditionProgressing, 1)}
	if err := s.h.UpdateUpdateRunStatus(s.ctx, staleRun); !hub.IsConflict(err) {
		s.t.Errorf("UpdateUpdateRunStatus on a stale resourceVersion: %v; want Conflict", err)
	}
	staleRun.Finalizers = []string{fleet.UpdateRunFinalizer}
	if err := s.h.UpdateUpdateRunFinalizers(s.ctx, staleRun); !hub.IsConflict(err) {
		s.t.Errorf("UpdateUpdateRunFinalizers on a stale resourceVersion: %v; want Conflict", err)
	}

	s.must(s.h.CreateApprovalRequest(s.ctx, s.approval("a", "run", "canary")))
	staleA, err := s.h.GetApprovalRequest(s.ctx, s.key("a"))
	s.must(err)
	freshA := staleA.DeepCopy()
	freshA.Status.Conditions = []metav1.Condition{condition(fleet.ApprovalRequestConditionApproved, 1)}
	s.must(s.h.UpdateApprovalRequestStatus(s.ctx, freshA))
	staleA.Status.Conditions = []metav1.Condition{condition(fleet.ApprovalRequestConditionApprovalAccepted, 1)}
	if err := s.h.UpdateApprovalRequestStatus(s.ctx, staleA); !hub.IsConflict(err) {
		s.t.Errorf("UpdateApprovalRequestStatus on a stale resourceVersion: %v; want Conflict", err)
	}
}

func (s *suite) generationRisesOnSpecChangesOnly() {
	s.must(s.h.CreateBinding(s.ctx, s.binding("b1", "app", "member-1")))
	b := s.getBinding("b1")
	b.Status.Conditions = []metav1.Condition{condition(fleet.ResourceBindingApplied, 1)}
	s.must(s.h.UpdateBindingStatus(s.ctx, b))
	if got := s.getBinding("b1"); got.Generation != 1 || len(got.Status.Conditions) != 1 {
		s.t.Errorf("after a status change: generation %d, %d conditions; want 1, 1", got.Generation, len(got.Status.Conditions))
	}
	b = s.getBinding("b1")
	b.Labels["extra"] = "label"
	s.must(s.h.UpdateBinding(s.ctx, b))
	if got := s.getBinding("b1"); got.Generation != 1 || got.Labels["extra"] != "label" {
		s.t.Errorf("after a label change: generation %d, labels %v; want 1 with the label", got.Generation, got.Labels)
	}
	b = s.getBinding("b1")
	b.Spec.State = fleet.BindingStateBound
	b.Spec.ResourceSnapshotName = "app-0-snapshot"
	s.must(s.h.UpdateBinding(s.ctx, b))
	if b.Generation != 2 {
		s.t.Errorf("UpdateBinding left the caller's generation at %d; want 2", b.Generation)
	}
	if got := s.getBinding("b1"); got.Generation != 2 || got.Spec.State != fleet.BindingStateBound || got.ResourceVersion != b.ResourceVersion {
		s.t.Errorf("after a spec change: generation %d, state %s, resourceVersion %s; want 2, Bound, the caller's %s",
			got.Generation, got.Spec.State, got.ResourceVersion, b.ResourceVersion)
	}

	s.must(s.h.CreatePolicySnapshot(s.ctx, s.policySnapshot("app", 0)))
	ps, err := s.h.ListPolicySnapshots(s.ctx, s.key("app"))
	s.must(err)
	ps[0].Status.Conditions = []metav1.Condition{condition(fleet.PolicySnapshotScheduled, 1)}
	s.must(s.h.UpdatePolicySnapshot(s.ctx, ps[0]))
	ps, err = s.h.ListPolicySnapshots(s.ctx, s.key("app"))
	s.must(err)
	if ps[0].Generation != 1 || len(ps[0].Status.Conditions) != 1 {
		s.t.Errorf("policy snapshot after a status change: generation %d, %d conditions; want 1, 1", ps[0].Generation, len(ps[0].Status.Conditions))
	}
}

// objectAndStatusAreWrittenApart: an object write keeps the stored status,
// a status write keeps the stored object, whatever the caller's copy
// holds — as the status subresource makes it on an API server.
func (s *suite) objectAndStatusAreWrittenApart() {
	s.must(s.h.CreateBinding(s.ctx, s.binding("b1", "app", "member-1")))
	b := s.getBinding("b1")
	b.Spec.State = fleet.BindingStateBound
	b.Status.Conditions = []metav1.Condition{condition(fleet.ResourceBindingRolloutStarted, 2)}
	s.must(s.h.UpdateBinding(s.ctx, b))
	if got := s.getBinding("b1"); got.Spec.State != fleet.BindingStateBound || len(got.Status.Conditions) != 0 {
		s.t.Errorf("binding after an object write: state %s, %d conditions; want Bound, 0", got.Spec.State, len(got.Status.Conditions))
	}
	b.Spec.State = fleet.BindingStateUnscheduled
	b.Finalizers = []string{"test.gitfleet.io/work-cleanup"}
	s.must(s.h.UpdateBindingStatus(s.ctx, b))
	got := s.getBinding("b1")
	if got.Spec.State != fleet.BindingStateBound || len(got.Finalizers) != 0 || len(got.Status.Conditions) != 1 || got.Generation != 2 {
		s.t.Errorf("binding after a status write: state %s, finalizers %v, %d conditions, generation %d; want Bound, none, 1, 2",
			got.Spec.State, got.Finalizers, len(got.Status.Conditions), got.Generation)
	}
	if b.ResourceVersion != got.ResourceVersion {
		s.t.Errorf("UpdateBindingStatus left the caller at resourceVersion %s; the binding is at %s", b.ResourceVersion, got.ResourceVersion)
	}

	s.s.Apply(s.t, s.run("run", "app"))
	r := s.getRun("run")
	r.Spec.State = fleet.StateStop
	r.Status.Conditions = []metav1.Condition{condition(fleet.StagedUpdateRunConditionInitialized, 1)}
	r.Finalizers = []string{fleet.UpdateRunFinalizer}
	s.must(s.h.UpdateUpdateRunFinalizers(s.ctx, r))
	gotRun := s.getRun("run")
	if gotRun.Spec.State != fleet.StateRun || len(gotRun.Status.Conditions) != 0 || !slices.Equal(gotRun.Finalizers, r.Finalizers) ||
		gotRun.ResourceVersion != r.ResourceVersion {
		s.t.Errorf("run after a finalizer write: state %s, %d conditions, finalizers %v, resourceVersion %s; want Run, 0, the finalizer, the caller's %s",
			gotRun.Spec.State, len(gotRun.Status.Conditions), gotRun.Finalizers, gotRun.ResourceVersion, r.ResourceVersion)
	}
	r.Finalizers = nil
	s.must(s.h.UpdateUpdateRunStatus(s.ctx, r))
	gotRun = s.getRun("run")
	if gotRun.Spec.State != fleet.StateRun || gotRun.Generation != 1 || len(gotRun.Status.Conditions) != 1 ||
		!slices.Equal(gotRun.Finalizers, []string{fleet.UpdateRunFinalizer}) || gotRun.ResourceVersion != r.ResourceVersion {
		s.t.Errorf("run after a status write: state %s, generation %d, %d conditions, finalizers %v, resourceVersion %s; want Run, 1, 1, the finalizer, the caller's %s",
			gotRun.Spec.State, gotRun.Generation, len(gotRun.Status.Conditions), gotRun.Finalizers, gotRun.ResourceVersion, r.ResourceVersion)
	}
	rv := gotRun.ResourceVersion
	s.must(s.h.UpdateUpdateRunStatus(s.ctx, r))
	if got := s.getRun("run"); got.ResourceVersion != rv {
		s.t.Errorf("an unchanged status was written: resourceVersion %s → %s", rv, got.ResourceVersion)
	}
}

func (s *suite) statusWritesKeepTheSpec() {
	s.s.Apply(s.t, s.placement("app"))
	p, err := s.h.GetPlacement(s.ctx, s.key("app"))
	s.must(err)
	p.Spec.ResourceSelectors[0].Name = "changed-in-memory"
	p.Status.Conditions = []metav1.Condition{condition("ClusterResourcePlacementScheduled", 1)}
	s.must(s.h.UpdatePlacementStatus(s.ctx, p))
	written := p.ResourceVersion
	p, err = s.h.GetPlacement(s.ctx, s.key("app"))
	s.must(err)
	if written != p.ResourceVersion {
		s.t.Errorf("the caller's placement after a status write has resourceVersion %q; the hub's is %q", written, p.ResourceVersion)
	}
	if p.Spec.ResourceSelectors[0].Name != "app" || len(p.Status.Conditions) != 1 || p.Generation != 1 {
		s.t.Errorf("placement after a status write: selector %q, %d conditions, generation %d; want app, 1, 1",
			p.Spec.ResourceSelectors[0].Name, len(p.Status.Conditions), p.Generation)
	}

	s.s.Apply(s.t, s.run("run", "app"))
	r := s.getRun("run")
	r.Status.Conditions = []metav1.Condition{condition(fleet.StagedUpdateRunConditionInitialized, 1)}
	s.must(s.h.UpdateUpdateRunStatus(s.ctx, r))

	// A person's spec change keeps what the engine wrote.
	next := s.run("run", "app")
	next.Spec.State = fleet.StateStop
	s.s.Apply(s.t, next)
	got := s.getRun("run")
	if got.Spec.State != fleet.StateStop || got.Generation != 2 || len(got.Status.Conditions) != 1 {
		s.t.Errorf("run after a person's spec change: state %s, generation %d, %d conditions; want Stop, 2, 1",
			got.Spec.State, got.Generation, len(got.Status.Conditions))
	}
}

func (s *suite) bindingDeletionWaitsForFinalizer() {
	held := s.binding("held", "app", "member-1")
	held.Finalizers = []string{"test.gitfleet.io/work-cleanup"}
	s.must(s.h.CreateBinding(s.ctx, held))
	s.must(s.h.CreateBinding(s.ctx, s.binding("free", "app", "member-2")))

	s.must(s.h.DeleteBinding(s.ctx, s.key("free")))
	if _, err := s.h.GetBinding(s.ctx, s.key("free")); !hub.IsNotFound(err) {
		s.t.Errorf("a deleted binding without finalizers: %v; want NotFound", err)
	}

	s.must(s.h.DeleteBinding(s.ctx, s.key("held")))
	b := s.getBinding("held")
	if b.DeletionTimestamp == nil {
		s.t.Fatal("a deleted binding with a finalizer has no deletionTimestamp")
	}
	s.must(s.h.DeleteBinding(s.ctx, s.key("held"))) // deleting again is fine
	b = s.getBinding("held")
	b.Finalizers = nil
	s.must(s.h.UpdateBinding(s.ctx, b))
	if _, err := s.h.GetBinding(s.ctx, s.key("held")); !hub.IsNotFound(err) {
		s.t.Errorf("a deleted binding whose finalizer was removed: %v; want NotFound", err)
	}
	if list, _ := s.h.ListBindings(s.ctx, s.key("app")); len(list) != 0 {
		s.t.Errorf("ListBindings after both deletions = %d bindings; want 0", len(list))
	}
}

func (s *suite) removedRunIsGone() {
	s.s.Apply(s.t, s.run("run", "app"))
	r := s.getRun("run")
	r.Finalizers = []string{fleet.UpdateRunFinalizer, "test.gitfleet.io/other"}
	s.must(s.h.UpdateUpdateRunFinalizers(s.ctx, r))
	s.s.DeleteRun(s.t, s.key("run"))
	if r := s.getRun("run"); r.DeletionTimestamp == nil {
		s.t.Fatal("a run deleted with the engine's finalizer has no deletionTimestamp")
	}
	// Dropping one finalizer keeps the terminating run; RemoveUpdateRun
	// ends it whatever finalizers are left.
	r = s.getRun("run")
	r.Finalizers = []string{fleet.UpdateRunFinalizer}
	s.must(s.h.UpdateUpdateRunFinalizers(s.ctx, r))
	if got := s.getRun("run"); got.DeletionTimestamp == nil || !slices.Equal(got.Finalizers, r.Finalizers) {
		s.t.Errorf("a terminating run after a finalizer was dropped: deletion %v, finalizers %v; want terminating with %v",
			got.DeletionTimestamp, got.Finalizers, r.Finalizers)
	}
	s.must(s.h.RemoveUpdateRun(s.ctx, s.key("run")))
	if _, err := s.h.GetUpdateRun(s.ctx, s.key("run")); !hub.IsNotFound(err) {
		s.t.Errorf("a removed run: %v; want NotFound", err)
	}
	if runs, _ := s.h.ListUpdateRuns(s.ctx); len(runs) != 0 {
		s.t.Errorf("ListUpdateRuns after the removal = %d runs; want 0", len(runs))
	}
}

func (s *suite) approvalRequestsListedByLabels() {
	for _, a := range []*fleet.ApprovalRequest{
		s.approval("run-a-after-canary", "run-a", "canary"),
		s.approval("run-a-after-prod", "run-a", "prod"),
		s.approval("run-b-after-canary", "run-b", "canary"),
	} {
		s.must(s.h.CreateApprovalRequest(s.ctx, a))
	}
	got, err := s.h.ListApprovalRequests(s.ctx, s.ns, map[string]string{fleet.TargetUpdateRunLabel: "run-a"})
	s.must(err)
	if names := names(got); !slices.Equal(names, []string{"run-a-after-canary", "run-a-after-prod"}) {
		s.t.Errorf("requests of run-a = %v", names)
	}
	other := Namespace
	if s.ns != "" {
		other = ""
	}
	got, err = s.h.ListApprovalRequests(s.ctx, other, map[string]string{fleet.TargetUpdateRunLabel: "run-a"})
	s.must(err)
	if len(got) != 0 {
		s.t.Errorf("requests of run-a in the other family = %v; want none", names(got))
	}
	s.must(s.h.DeleteApprovalRequest(s.ctx, s.key("run-a-after-prod")))
	got, err = s.h.ListApprovalRequests(s.ctx, s.ns, nil)
	s.must(err)
	if names := names(got); !slices.Equal(names, []string{"run-a-after-canary", "run-b-after-canary"}) {
		s.t.Errorf("every request after a deletion = %v", names)
	}
}

func names[T metav1.Object](objs []T) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.GetName()
	}
	return out
}

func (s *suite) listsArePerPlacementAndSorted() {
	for _, b := range []*fleet.Binding{
		s.binding("app-member-3", "app", "member-3"),
		s.binding("app-member-1", "app", "member-1"),
		s.binding("other-member-1", "other", "member-1"),
		s.binding("app-member-2", "app", "member-2"),
	} {
		s.must(s.h.CreateBinding(s.ctx, b))
	}
	got, err := s.h.ListBindings(s.ctx, s.key("app"))
	s.must(err)
	if n := names(got); !slices.Equal(n, []string{"app-member-1", "app-member-2", "app-member-3"}) {
		s.t.Errorf("ListBindings(app) = %v", n)
	}
	ro, err := hub.ListBindingsReadOnly(s.ctx, s.h, s.key("app"))
	s.must(err)
	if n := names(ro); !slices.Equal(n, []string{"app-member-1", "app-member-2", "app-member-3"}) {
		s.t.Errorf("ListBindingsReadOnly(app) = %v", n)
	}
	s.must(s.h.CreateResourceSnapshot(s.ctx, s.resourceSnapshot("app", 0)))
	s.must(s.h.CreateResourceSnapshot(s.ctx, s.resourceSnapshot("other", 0)))
	rs, err := s.h.ListResourceSnapshots(s.ctx, s.key("app"))
	s.must(err)
	if n := names(rs); !slices.Equal(n, []string{fmt.Sprintf(fleet.ResourceSnapshotNameFmt, "app", 0)}) {
		s.t.Errorf("ListResourceSnapshots(app) = %v", n)
	}
	if len(rs[0].Spec.SelectedResources) != 1 {
		s.t.Errorf("the snapshot's selected resources read back as %d", len(rs[0].Spec.SelectedResources))
	}
	s.must(s.h.DeleteResourceSnapshot(s.ctx, s.key(rs[0].Name)))
	if rs, _ := s.h.ListResourceSnapshots(s.ctx, s.key("app")); len(rs) != 0 {
		s.t.Errorf("ListResourceSnapshots(app) after its deletion = %v", names(rs))
	}
	s.s.Apply(s.t, &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "member-b"}})
	s.s.Apply(s.t, &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "member-a"}})
	ms, err := s.h.ListMemberClusters(s.ctx)
	s.must(err)
	if n := names(ms); !slices.Equal(n, []string{"member-a", "member-b"}) {
		s.t.Errorf("ListMemberClusters = %v", n)
	}
	ms, err = hub.ListMemberClustersReadOnly(s.ctx, s.h)
	s.must(err)
	if n := names(ms); !slices.Equal(n, []string{"member-a", "member-b"}) {
		s.t.Errorf("ListMemberClustersReadOnly = %v", n)
	}
}

// removedResourcesAreCounted: the count of removed resources that the
// snapshotter puts on a new master (gitfleet.io/removed-resources) is
// stored and read back by the hub, as the commit it came from is.
func (s *suite) removedResourcesAreCounted() {
	p := &fleet.Placement{ObjectMeta: s.meta("app", nil)}
	cm := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": "app"}}}
	}
	_, _, err := resourcesnapshot.Ensure(s.ctx, s.h, p, []*unstructured.Unstructured{cm("a"), cm("b")}, "c0")
	s.must(err)
	_, _, err = resourcesnapshot.Ensure(s.ctx, s.h, p, []*unstructured.Unstructured{cm("b")}, "c1")
	s.must(err)
	rs, err := s.h.ListResourceSnapshots(s.ctx, s.key("app"))
	s.must(err)
	got := map[string]string{}
	for _, r := range rs {
		got[r.Name] = r.Annotations[fleet.CommitAnnotation] + " removes " + r.Annotations[fleet.RemovedResourcesAnnotation]
	}
	want := map[string]string{fmt.Sprintf(fleet.ResourceSnapshotNameFmt, "app", 0): "c0 removes ", fmt.Sprintf(fleet.ResourceSnapshotNameFmt, "app", 1): "c1 removes 1"}
	if !maps.Equal(got, want) {
		s.t.Errorf("resource snapshots read back as %v, want %v", got, want)
	}
}

// eventsNamePlacementOrRun: every change the engine reacts to is an event
// that names what to wake, whoever made the change.
func (s *suite) eventsNamePlacementOrRun() {
	var mu sync.Mutex
	var got []hub.Event
	s.h.(hub.Notifier).Subscribe(func(e hub.Event) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, e)
	})
	app, run := s.key("app"), s.key("run")
	s.s.Apply(s.t, s.placement("app"))
	s.s.Apply(s.t, &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "member-1"}})
	s.s.Apply(s.t, s.run("run", "app"))
	s.must(s.h.CreatePolicySnapshot(s.ctx, s.policySnapshot("app", 0)))
	s.must(s.h.CreateResourceSnapshot(s.ctx, s.resourceSnapshot("app", 0)))
	s.must(s.h.CreateBinding(s.ctx, s.binding("app-member-1", "app", "member-1")))
	s.must(s.h.CreateApprovalRequest(s.ctx, s.approval("run-after-canary", "run", "canary")))
	b := s.getBinding("app-member-1")
	b.Status.Conditions = []metav1.Condition{condition(fleet.ResourceBindingAvailable, 1)}
	s.must(s.h.UpdateBindingStatus(s.ctx, b))
	snap := fmt.Sprintf(fleet.ResourceSnapshotNameFmt, "app", 0)
	s.must(s.h.DeleteResourceSnapshot(s.ctx, s.key(snap)))

	want := []hub.Event{
		{Kind: hub.EventPlacement, Key: app, Placement: app},
		{Kind: hub.EventMemberCluster, Key: hub.Key{Name: "member-1"}},
		{Kind: hub.EventUpdateRun, Key: run, Run: run},
		{Kind: hub.EventPolicySnapshot, Key: s.key("app-0"), Placement: app},
		{Kind: hub.EventResourceSnapshot, Key: s.key(snap), Placement: app},
		{Kind: hub.EventBinding, Key: s.key("app-member-1"), Placement: app},
		{Kind: hub.EventApprovalRequest, Key: s.key("run-after-canary"), Run: run},
	}
	count := func(e hub.Event) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, g := range got {
			if g == e {
				n++
			}
		}
		return n
	}
	await.Until(s.t, "an event for every change", func() bool {
		for _, e := range want {
			if count(e) == 0 {
				return false
			}
		}
		// The binding's status write and the snapshot's deletion are events too.
		return count(want[5]) >= 2 && count(want[4]) >= 2
	})
	mu.Lock()
	defer mu.Unlock()
	for _, e := range got {
		if e.Kind == hub.EventApprovalRequest && e.Run != run ||
			slices.Contains([]hub.EventKind{hub.EventBinding, hub.EventPolicySnapshot, hub.EventResourceSnapshot}, e.Kind) && e.Placement != app {
			s.t.Errorf("event %+v names the wrong placement or run", e)
		}
	}
}

// evictionsAndBudgets: a person's eviction and budget read back; the
// engine's status write on an eviction keeps its spec and raises its
// resourceVersion, a stale one is a Conflict; missing ones are NotFound.
// Both kinds are cluster-scoped only.
func (s *suite) evictionsAndBudgets() {
	if s.ns != "" {
		return
	}
	_, evictionErr := s.h.GetEviction(s.ctx, s.key("none"))
	_, budgetErr := s.h.GetDisruptionBudget(s.ctx, s.key("none"))
	for what, err := range map[string]error{"GetEviction": evictionErr, "GetDisruptionBudget": budgetErr} {
		if !hub.IsNotFound(err) {
			s.t.Errorf("%s of a missing object: %v; want NotFound", what, err)
		}
	}
	min := intstr.FromString("50%")
	s.s.Apply(s.t, &fleet.ClusterResourcePlacementDisruptionBudget{ObjectMeta: s.meta("app", nil),
		Spec: fleet.PlacementDisruptionBudgetSpec{MinAvailable: &min}})
	b, err := s.h.GetDisruptionBudget(s.ctx, s.key("app"))
	s.must(err)
	if b.Spec.MinAvailable == nil || b.Spec.MinAvailable.String() != "50%" {
		s.t.Errorf("budget reads back with minAvailable %v; want 50%%", b.Spec.MinAvailable)
	}
	s.s.Apply(s.t, &fleet.ClusterResourcePlacementEviction{ObjectMeta: s.meta("evict", nil),
		Spec: fleet.PlacementEvictionSpec{PlacementName: "app", ClusterName: "member-1"}})
	stale, err := s.h.GetEviction(s.ctx, s.key("evict"))
	s.must(err)
	e := stale.DeepCopy()
	e.SetConditions(condition(string(fleet.PlacementEvictionConditionTypeValid), 1))
	s.must(s.h.UpdateEvictionStatus(s.ctx, e))
	if e.ResourceVersion == stale.ResourceVersion {
		s.t.Error("a status write left the eviction's resourceVersion as it was")
	}
	got, err := s.h.GetEviction(s.ctx, s.key("evict"))
	s.must(err)
	if got.Spec.ClusterName != "member-1" || got.GetCondition(string(fleet.PlacementEvictionConditionTypeValid)) == nil {
		s.t.Errorf("after the status write the eviction is %+v, %+v", got.Spec, got.Status)
	}
	if list, err := s.h.ListEvictions(s.ctx); err != nil || len(list) != 1 {
		s.t.Errorf("ListEvictions: %d, %v; want the one eviction", len(list), err)
	}
	if err := s.h.UpdateEvictionStatus(s.ctx, stale); !hub.IsConflict(err) {
		s.t.Errorf("UpdateEvictionStatus on a stale resourceVersion: %v; want Conflict", err)
	}
}
