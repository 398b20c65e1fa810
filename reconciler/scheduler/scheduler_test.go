package scheduler_test

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/reconciler/scheduler"
)

// The seed demo fleet (seed 003).
func seedMembers() []*fleet.MemberCluster {
	return []*fleet.MemberCluster{
		member("member1", "environment", "canary", "order", "2"),
		member("member2", "environment", "staging"),
		member("member3", "environment", "canary", "order", "1"),
	}
}

func member(name string, kv ...string) *fleet.MemberCluster {
	m := &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	for i := 0; i+1 < len(kv); i += 2 {
		m.Labels[kv[i]] = kv[i+1]
	}
	return m
}

type fixture struct {
	t     *testing.T
	ctx   context.Context
	clk   *clock.Fake
	hub   *embedded.Hub
	sched *scheduler.Scheduler
	key   hub.Key
}

func newFixture(t *testing.T, namespace string, members ...*fleet.MemberCluster) *fixture {
	clk := clock.NewFake(time.Date(2026, 1, 8, 0, 19, 58, 0, time.UTC))
	h := embedded.New(clk, nil)
	for _, m := range members {
		h.ApplyMemberCluster(m)
	}
	return &fixture{t: t, ctx: context.Background(), clk: clk, hub: h,
		sched: &scheduler.Scheduler{Hub: h, Clock: clk},
		key:   hub.Key{Namespace: namespace, Name: "example-placement"}}
}

// place applies the placement with policy and schedules it.
func (f *fixture) place(policy *fleet.PlacementPolicy) {
	f.t.Helper()
	f.hub.ApplyPlacement(&fleet.Placement{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.key.Namespace, Name: f.key.Name},
		Spec: fleet.PlacementSpec{Policy: policy,
			Strategy: fleet.RolloutStrategy{Type: fleet.ExternalRolloutStrategyType}},
	})
	f.schedule()
}

func (f *fixture) schedule() {
	f.t.Helper()
	if err := f.sched.Schedule(f.ctx, f.key); err != nil {
		f.t.Fatalf("Schedule: %v", err)
	}
}

func (f *fixture) snapshots() []*fleet.PolicySnapshot {
	f.t.Helper()
	s, err := f.hub.ListPolicySnapshots(f.ctx, f.key)
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

func (f *fixture) latest() *fleet.PolicySnapshot {
	f.t.Helper()
	var out *fleet.PolicySnapshot
	for _, s := range f.snapshots() {
		if s.Labels[fleet.IsLatestSnapshotLabel] == "true" {
			if out != nil {
				f.t.Fatalf("two latest policy snapshots: %s and %s", out.Name, s.Name)
			}
			out = s
		}
	}
	if out == nil {
		f.t.Fatal("no latest policy snapshot")
	}
	return out
}

func (f *fixture) bindings() map[string]*fleet.Binding {
	f.t.Helper()
	list, err := f.hub.ListBindings(f.ctx, f.key)
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]*fleet.Binding{}
	for _, b := range list {
		out[b.Spec.TargetCluster] = b
	}
	return out
}

// states renders the bindings as "cluster=State@snapshot", sorted.
func (f *fixture) states() string {
	var out []string
	for c, b := range f.bindings() {
		out = append(out, fmt.Sprintf("%s=%s@%s", c, b.Spec.State, b.Spec.SchedulingPolicySnapshotName))
	}
	sort.Strings(out)
	return fmt.Sprint(out)
}

// bound does what a run does to a cluster's binding.
func (f *fixture) bound(cluster string) {
	f.t.Helper()
	b := f.bindings()[cluster]
	b.Spec.State = fleet.BindingStateBound
	b.Spec.ResourceSnapshotName = "example-placement-0-snapshot"
	b.Spec.ApplyStrategy = &fleet.ApplyStrategy{Type: fleet.ApplyStrategyTypeClientSideApply}
	b.Spec.ClusterResourceOverrideSnapshots = []string{"cro-1-0"}
	if err := f.hub.UpdateBinding(f.ctx, b); err != nil {
		f.t.Fatal(err)
	}
}

func scheduledCond(s *fleet.PolicySnapshot) *metav1.Condition {
	return meta.FindStatusCondition(s.Status.Conditions, fleet.PolicySnapshotScheduled)
}

func canaryAffinity() *fleet.Affinity {
	return &fleet.Affinity{ClusterAffinity: &fleet.ClusterAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &fleet.ClusterSelector{ClusterSelectorTerms: []fleet.ClusterSelectorTerm{
			{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"environment": "canary"}}}}}}}
}

func n(i int32) *int32 { return &i }

func TestPolicies(t *testing.T) {
	tests := []struct {
		name        string
		policy      *fleet.PlacementPolicy
		taint       bool // member2 is tainted NoSchedule gpu=true
		wantStates  string
		wantStatus  metav1.ConditionStatus
		wantMessage string
		wantReasons map[string]string // decision reasons in the snapshot status
	}{
		{name: "no policy picks all", policy: nil,
			wantStates: "[member1=Scheduled@example-placement-0 member2=Scheduled@example-placement-0 member3=Scheduled@example-placement-0]",
			wantStatus: metav1.ConditionTrue, wantMessage: "found all cluster needed as specified by the scheduling policy, found 3 cluster(s)",
			wantReasons: map[string]string{"member2": `Successfully scheduled resources for placement in "member2" (affinity score: 0, topology spread score: 0): picked by scheduling policy`}},
		{name: "PickAll with required affinity ORs its terms",
			policy: &fleet.PlacementPolicy{PlacementType: fleet.PickAllPlacementType, Affinity: &fleet.Affinity{ClusterAffinity: &fleet.ClusterAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &fleet.ClusterSelector{ClusterSelectorTerms: []fleet.ClusterSelectorTerm{
					{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"order": "1"}}},
					{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"environment": "staging"}}}}}}}},
			wantStates:  "[member2=Scheduled@example-placement-0 member3=Scheduled@example-placement-0]",
			wantStatus:  metav1.ConditionTrue,
			wantMessage: "found all cluster needed as specified by the scheduling policy, found 2 cluster(s)"},
		{name: "PickAll skips a cluster tainted NoSchedule", taint: true,
			policy:      &fleet.PlacementPolicy{PlacementType: fleet.PickAllPlacementType},
			wantStates:  "[member1=Scheduled@example-placement-0 member3=Scheduled@example-placement-0]",
			wantStatus:  metav1.ConditionTrue,
			wantMessage: "found all cluster needed as specified by the scheduling policy, found 2 cluster(s)"},
		{name: "PickAll with a toleration picks the tainted cluster", taint: true,
			policy: &fleet.PlacementPolicy{PlacementType: fleet.PickAllPlacementType,
				Tolerations: []fleet.Toleration{{Key: "gpu", Operator: "Exists"}}},
			wantStates: "[member1=Scheduled@example-placement-0 member2=Scheduled@example-placement-0 member3=Scheduled@example-placement-0]",
			wantStatus: metav1.ConditionTrue, wantMessage: "found all cluster needed as specified by the scheduling policy, found 3 cluster(s)"},
		{name: "PickFixed picks the listed clusters, taints or not", taint: true,
			policy:      &fleet.PlacementPolicy{PlacementType: fleet.PickFixedPlacementType, ClusterNames: []string{"member2", "member1"}},
			wantStates:  "[member1=Scheduled@example-placement-0 member2=Scheduled@example-placement-0]",
			wantStatus:  metav1.ConditionTrue,
			wantMessage: "found all cluster needed as specified by the scheduling policy, found 2 cluster(s)",
			wantReasons: map[string]string{"member1": `Successfully scheduled resources for placement in "member1": picked by scheduling policy`}},
		{name: "PickFixed naming a missing cluster is not fully scheduled",
			policy:      &fleet.PlacementPolicy{PlacementType: fleet.PickFixedPlacementType, ClusterNames: []string{"member1", "member9"}},
			wantStates:  "[member1=Scheduled@example-placement-0]",
			wantStatus:  metav1.ConditionFalse,
			wantMessage: "could not find all clusters needed as specified by the scheduling policy, found 1 cluster(s) instead",
			wantReasons: map[string]string{"member9": `Specified cluster "member9" is not found`}},
		{name: "PickN ranks by preferred affinity weight, then name",
			policy: &fleet.PlacementPolicy{PlacementType: fleet.PickNPlacementType, NumberOfClusters: n(2),
				Affinity: &fleet.Affinity{ClusterAffinity: &fleet.ClusterAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []fleet.PreferredClusterSelector{
					{Weight: 10, Preference: fleet.ClusterSelectorTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"environment": "canary"}}}},
					{Weight: 5, Preference: fleet.ClusterSelectorTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"order": "1"}}}}}}}},
			wantStates:  "[member1=Scheduled@example-placement-0 member3=Scheduled@example-placement-0]",
			wantStatus:  metav1.ConditionTrue,
			wantMessage: "found all cluster needed as specified by the scheduling policy, found 2 cluster(s)",
			wantReasons: map[string]string{
				"member3": `Successfully scheduled resources for placement in "member3" (affinity score: 15, topology spread score: 0): picked by scheduling policy`,
				"member2": `Cluster "member2" does not score high enough (affinity score: 0, topology spread score: 0)`}},
		// KubeFleet picks among equal scores the names that sort last
		// (its e2e: N=1 over member-cluster-1..3 lands on member-cluster-3).
		{name: "PickN with equal scores picks the names that sort last",
			policy:      &fleet.PlacementPolicy{PlacementType: fleet.PickNPlacementType, NumberOfClusters: n(2)},
			wantStates:  "[member2=Scheduled@example-placement-0 member3=Scheduled@example-placement-0]",
			wantStatus:  metav1.ConditionTrue,
			wantMessage: "found all cluster needed as specified by the scheduling policy, found 2 cluster(s)"},
		{name: "PickN asking for more clusters than match is not fully scheduled",
			policy:      &fleet.PlacementPolicy{PlacementType: fleet.PickNPlacementType, NumberOfClusters: n(3), Affinity: canaryAffinity()},
			wantStates:  "[member1=Scheduled@example-placement-0 member3=Scheduled@example-placement-0]",
			wantStatus:  metav1.ConditionFalse,
			wantMessage: "could not find all clusters needed as specified by the scheduling policy, found 2 cluster(s) instead"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			members := seedMembers()
			if tt.taint {
				members[1].Spec.Taints = []fleet.Taint{{Key: "gpu", Value: "true", Effect: "NoSchedule"}}
			}
			f := newFixture(t, "", members...)
			f.place(tt.policy)

			if got := f.states(); got != tt.wantStates {
				t.Errorf("bindings = %s, want %s", got, tt.wantStates)
			}
			snap := f.latest()
			c := scheduledCond(snap)
			if c == nil || c.Status != tt.wantStatus || c.Message != tt.wantMessage || c.ObservedGeneration != snap.Generation {
				t.Errorf("Scheduled = %+v, want %s %q at generation %d", c, tt.wantStatus, tt.wantMessage, snap.Generation)
			}
			reasons := map[string]string{}
			for _, d := range snap.Status.ClusterDecisions {
				reasons[d.ClusterName] = d.Reason
			}
			for cluster, want := range tt.wantReasons {
				if reasons[cluster] != want {
					t.Errorf("decision for %s = %q, want %q", cluster, reasons[cluster], want)
				}
			}
			nameShape := regexp.MustCompile(`^example-placement-member[0-9]-[0-9a-f]{8}$`)
			for c, b := range f.bindings() {
				if !nameShape.MatchString(b.Name) || b.Name != scheduler.BindingName("example-placement", c) {
					t.Errorf("binding of %s is named %q", c, b.Name)
				}
				if b.Labels[fleet.PlacementTrackingLabel] != "example-placement" || b.Spec.ClusterDecision.ClusterName != c {
					t.Errorf("binding of %s has labels %v and decision %+v", c, b.Labels, b.Spec.ClusterDecision)
				}
			}
		})
	}
}

func TestPolicySnapshotShape(t *testing.T) {
	f := newFixture(t, "", seedMembers()...)
	f.place(&fleet.PlacementPolicy{PlacementType: fleet.PickNPlacementType, NumberOfClusters: n(2)})
	snap := f.latest()
	if snap.Name != "example-placement-0" || snap.Kind != fleet.KindClusterSchedulingPolicySnapshot {
		t.Fatalf("snapshot is %s %s, want ClusterSchedulingPolicySnapshot example-placement-0", snap.Kind, snap.Name)
	}
	wantLabels := map[string]string{fleet.PlacementTrackingLabel: "example-placement",
		fleet.IsLatestSnapshotLabel: "true", fleet.PolicyIndexLabel: "0"}
	if fmt.Sprint(snap.Labels) != fmt.Sprint(wantLabels) {
		t.Errorf("labels = %v, want %v", snap.Labels, wantLabels)
	}
	if got := snap.Annotations[fleet.NumberOfClustersAnnotation]; got != "2" {
		t.Errorf("number-of-clusters = %q, want 2", got)
	}
	if snap.Spec.Policy == nil || snap.Spec.Policy.NumberOfClusters != nil || snap.Spec.Policy.PlacementType != fleet.PickNPlacementType {
		t.Errorf("spec.policy = %+v, want the PickN policy without numberOfClusters", snap.Spec.Policy)
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).Match(snap.Spec.PolicyHash) {
		t.Errorf("policyHash = %q, want a hex sha-256", snap.Spec.PolicyHash)
	}
}

func TestPickNCountChangeKeepsTheSnapshot(t *testing.T) {
	f := newFixture(t, "", seedMembers()...)
	f.place(&fleet.PlacementPolicy{PlacementType: fleet.PickNPlacementType, NumberOfClusters: n(1)})
	hash := string(f.latest().Spec.PolicyHash)
	f.bound("member3")

	steps := []struct {
		count      int32
		wantStates string
	}{
		{3, "[member1=Scheduled@example-placement-0 member2=Scheduled@example-placement-0 member3=Bound@example-placement-0]"},
		// Scaling in drops the lowest score, ties by name: member1.
		{2, "[member1=Unscheduled@example-placement-0 member2=Scheduled@example-placement-0 member3=Bound@example-placement-0]"},
		// Scaling out again restores member1.
		{3, "[member1=Scheduled@example-placement-0 member2=Scheduled@example-placement-0 member3=Bound@example-placement-0]"},
	}
	for _, step := range steps {
		f.place(&fleet.PlacementPolicy{PlacementType: fleet.PickNPlacementType, NumberOfClusters: n(step.count)})
		if got := len(f.snapshots()); got != 1 {
			t.Fatalf("count %d: %d policy snapshots, want still 1", step.count, got)
		}
		snap := f.latest()
		if snap.Name != "example-placement-0" || string(snap.Spec.PolicyHash) != hash || snap.Generation != 1 {
			t.Fatalf("count %d: latest snapshot %s (generation %d), want example-placement-0 unchanged", step.count, snap.Name, snap.Generation)
		}
		if got, want := snap.Annotations[fleet.NumberOfClustersAnnotation], fmt.Sprint(step.count); got != want {
			t.Errorf("count %d: number-of-clusters = %q, want %q", step.count, got, want)
		}
		if got := f.states(); got != step.wantStates {
			t.Errorf("count %d: bindings = %s, want %s", step.count, got, step.wantStates)
		}
	}
	if got := f.bindings()["member1"].Annotations[scheduler.PreviousBindingStateAnnotation]; got != "" {
		t.Errorf("restored binding still carries %s=%q", scheduler.PreviousBindingStateAnnotation, got)
	}
}

func TestPolicyChangeMakesANewIndex(t *testing.T) {
	f := newFixture(t, "", seedMembers()...)
	f.place(&fleet.PlacementPolicy{PlacementType: fleet.PickFixedPlacementType, ClusterNames: []string{"member1", "member2"}})
	f.bound("member1")
	before := f.bindings()["member1"]

	// §9.7 item 6: add member3 (policy index 1), then shrink to [member3] (index 2).
	f.place(&fleet.PlacementPolicy{PlacementType: fleet.PickFixedPlacementType, ClusterNames: []string{"member1", "member2", "member3"}})
	if got, want := f.states(), "[member1=Bound@example-placement-1 member2=Scheduled@example-placement-1 member3=Scheduled@example-placement-1]"; got != want {
		t.Fatalf("after adding member3: %s, want %s", got, want)
	}
	after := f.bindings()["member1"]
	if after.Spec.ResourceSnapshotName != before.Spec.ResourceSnapshotName ||
		fmt.Sprint(after.Spec.ApplyStrategy) != fmt.Sprint(before.Spec.ApplyStrategy) ||
		fmt.Sprint(after.Spec.ClusterResourceOverrideSnapshots) != fmt.Sprint(before.Spec.ClusterResourceOverrideSnapshots) {
		t.Errorf("re-pointing touched the run's fields: before %+v, after %+v", before.Spec, after.Spec)
	}

	f.place(&fleet.PlacementPolicy{PlacementType: fleet.PickFixedPlacementType, ClusterNames: []string{"member3"}})
	if got, want := f.states(), "[member1=Unscheduled@example-placement-1 member2=Unscheduled@example-placement-1 member3=Scheduled@example-placement-2]"; got != want {
		t.Fatalf("after shrinking to member3: %s, want %s", got, want)
	}
	if got := f.bindings()["member1"].Annotations[scheduler.PreviousBindingStateAnnotation]; got != "Bound" {
		t.Errorf("unscheduled binding remembers state %q, want Bound", got)
	}
	latest := map[string]string{}
	for _, s := range f.snapshots() {
		latest[s.Name] = s.Labels[fleet.IsLatestSnapshotLabel]
	}
	want := map[string]string{"example-placement-0": "false", "example-placement-1": "false", "example-placement-2": "true"}
	if fmt.Sprint(latest) != fmt.Sprint(want) {
		t.Errorf("is-latest-snapshot labels = %v, want %v", latest, want)
	}
}

// §9.7 item 15: a member leaving unschedules its binding; rejoining brings
// it back.
func TestJoinAndLeave(t *testing.T) {
	f := newFixture(t, "", seedMembers()...)
	f.place(&fleet.PlacementPolicy{PlacementType: fleet.PickAllPlacementType})
	for _, c := range []string{"member1", "member2", "member3"} {
		f.bound(c)
	}
	rv := f.bindings()["member2"].ResourceVersion

	f.hub.DeleteMemberCluster("member1")
	f.schedule()
	if got, want := f.states(), "[member1=Unscheduled@example-placement-0 member2=Bound@example-placement-0 member3=Bound@example-placement-0]"; got != want {
		t.Fatalf("after member1 left: %s, want %s", got, want)
	}
	if f.bindings()["member2"].ResourceVersion != rv {
		t.Error("member2's binding was rewritten when member1 left")
	}
	if c := scheduledCond(f.latest()); c.Message != "found all cluster needed as specified by the scheduling policy, found 2 cluster(s)" {
		t.Errorf("Scheduled after leave = %q", c.Message)
	}

	f.hub.ApplyMemberCluster(seedMembers()[0])
	f.schedule()
	if got, want := f.states(), "[member1=Bound@example-placement-0 member2=Bound@example-placement-0 member3=Bound@example-placement-0]"; got != want {
		t.Fatalf("after member1 rejoined: %s, want %s", got, want)
	}

	// Leave again; a run's deletion stage deletes the binding; rejoin
	// creates a fresh Scheduled one.
	f.hub.DeleteMemberCluster("member1")
	f.schedule()
	if err := f.hub.DeleteBinding(f.ctx, hub.Key{Name: f.bindings()["member1"].Name}); err != nil {
		t.Fatal(err)
	}
	f.hub.ApplyMemberCluster(seedMembers()[0])
	f.schedule()
	if got, want := f.states(), "[member1=Scheduled@example-placement-0 member2=Bound@example-placement-0 member3=Bound@example-placement-0]"; got != want {
		t.Fatalf("after member1 rejoined without a binding: %s, want %s", got, want)
	}
}

func TestTaintsDoNotEvict(t *testing.T) {
	members := seedMembers()
	f := newFixture(t, "", members...)
	f.place(nil)
	members[1].Spec.Taints = []fleet.Taint{{Key: "drain", Effect: "NoSchedule"}}
	f.hub.ApplyMemberCluster(members[1])
	f.schedule()
	if got := f.bindings()["member2"].Spec.State; got != fleet.BindingStateScheduled {
		t.Fatalf("member2's binding is %s after a taint, want Scheduled", got)
	}
}

func TestLabelChangeUnschedulesUnderRequiredAffinity(t *testing.T) {
	members := seedMembers()
	f := newFixture(t, "", members...)
	f.place(&fleet.PlacementPolicy{PlacementType: fleet.PickAllPlacementType, Affinity: canaryAffinity()})
	members[0].Labels["environment"] = "prod"
	f.hub.ApplyMemberCluster(members[0])
	f.schedule()
	if got, want := f.states(), "[member1=Unscheduled@example-placement-0 member3=Scheduled@example-placement-0]"; got != want {
		t.Fatalf("after member1 stopped matching: %s, want %s", got, want)
	}
}

func TestScheduleIsIdempotent(t *testing.T) {
	policies := map[string]*fleet.PlacementPolicy{
		"PickAll":   nil,
		"PickFixed": {PlacementType: fleet.PickFixedPlacementType, ClusterNames: []string{"member1", "member9"}},
		"PickN":     {PlacementType: fleet.PickNPlacementType, NumberOfClusters: n(2), Affinity: canaryAffinity()},
	}
	for name, policy := range policies {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, "", seedMembers()...)
			f.place(policy)
			f.bound("member1")
			before := f.versions()
			f.clk.Advance(time.Hour)
			f.schedule()
			f.schedule()
			if after := f.versions(); after != before {
				t.Fatalf("a repeated Schedule wrote:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// versions renders every snapshot's and binding's resourceVersion.
func (f *fixture) versions() string {
	var out []string
	for _, s := range f.snapshots() {
		out = append(out, s.Name+"="+s.ResourceVersion)
	}
	for _, b := range f.bindings() {
		out = append(out, b.Name+"="+b.ResourceVersion)
	}
	sort.Strings(out)
	return fmt.Sprint(out)
}

func TestResourcePlacementBindingsLiveInItsNamespace(t *testing.T) {
	f := newFixture(t, "my-app-namespace", seedMembers()...)
	f.place(nil)
	snap := f.latest()
	if snap.Namespace != "my-app-namespace" || snap.Kind != fleet.KindSchedulingPolicySnapshot {
		t.Fatalf("snapshot %s/%s is a %s", snap.Namespace, snap.Name, snap.Kind)
	}
	for c, b := range f.bindings() {
		if b.Namespace != "my-app-namespace" || b.Kind != fleet.KindResourceBinding {
			t.Errorf("binding of %s is %s %s/%s", c, b.Kind, b.Namespace, b.Name)
		}
	}
	if len(f.bindings()) != 3 {
		t.Fatalf("%d bindings, want 3", len(f.bindings()))
	}
}

func TestDeletedPlacementUnschedulesItsBindings(t *testing.T) {
	f := newFixture(t, "", seedMembers()...)
	f.place(nil)
	f.bound("member3")
	f.hub.DeletePlacement(f.key)
	f.schedule()
	if got, want := f.states(), "[member1=Unscheduled@example-placement-0 member2=Unscheduled@example-placement-0 member3=Unscheduled@example-placement-0]"; got != want {
		t.Fatalf("after the placement was deleted: %s, want %s", got, want)
	}
	f.schedule() // and nothing more to do
}

// propertyMembers is a fleet of simulated members whose annotations give
// their properties (the embedded hub records them in their status as they
// join); member4 reports none.
func propertyMembers() []*fleet.MemberCluster {
	with := func(m *fleet.MemberCluster, nodes, availableCPU string) *fleet.MemberCluster {
		m.Annotations = map[string]string{fleet.DriverAnnotation: fleet.DriverSimulated}
		if nodes != "" {
			m.Annotations[fleet.NodeCountProperty] = nodes
			m.Annotations[fleet.AvailableCPUCapacityProperty] = availableCPU
		}
		return m
	}
	return []*fleet.MemberCluster{
		with(member("member1", "environment", "canary"), "2", "4"),
		with(member("member2", "environment", "staging"), "5", "16"),
		with(member("member3", "environment", "canary"), "3", "8"),
		with(member("member4", "environment", "canary"), "", ""),
	}
}

func TestPropertySelectorFiltersRequiredTerms(t *testing.T) {
	f := newFixture(t, "", propertyMembers()...)
	f.place(&fleet.PlacementPolicy{PlacementType: fleet.PickAllPlacementType, Affinity: &fleet.Affinity{ClusterAffinity: &fleet.ClusterAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &fleet.ClusterSelector{ClusterSelectorTerms: []fleet.ClusterSelectorTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"environment": "canary"}},
			PropertySelector: &fleet.PropertySelector{MatchExpressions: []fleet.PropertySelectorRequirement{
				{Name: fleet.NodeCountProperty, Operator: fleet.PropertySelectorGreaterThanOrEqualTo, Values: []string{"3"}},
				{Name: fleet.AvailableCPUCapacityProperty, Operator: fleet.PropertySelectorGreaterThan, Values: []string{"2"}},
			}},
		}}}}}})
	// member2 has the properties but not the label, member1 too few nodes,
	// member4 reports no properties.
	if got, want := f.states(), "[member3=Scheduled@example-placement-0]"; got != want {
		t.Fatalf("bindings = %s, want %s", got, want)
	}
}

func TestPropertySorterRanksPickN(t *testing.T) {
	f := newFixture(t, "", propertyMembers()...)
	f.place(&fleet.PlacementPolicy{PlacementType: fleet.PickNPlacementType, NumberOfClusters: n(2),
		Affinity: &fleet.Affinity{ClusterAffinity: &fleet.ClusterAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []fleet.PreferredClusterSelector{
			{Weight: 100, Preference: fleet.ClusterSelectorTerm{PropertySorter: &fleet.PropertySorter{
				Name: fleet.AvailableCPUCapacityProperty, SortOrder: fleet.Descending}}},
		}}}})
	if got, want := f.states(), "[member2=Scheduled@example-placement-0 member3=Scheduled@example-placement-0]"; got != want {
		t.Fatalf("bindings = %s, want %s", got, want)
	}
	// (8-4)/(16-4)*100 = 33; the lowest value and a missing one score 0.
	reasons := map[string]string{}
	for _, d := range f.latest().Status.ClusterDecisions {
		reasons[d.ClusterName] = d.Reason
	}
	for cluster, want := range map[string]string{
		"member2": `Successfully scheduled resources for placement in "member2" (affinity score: 100, topology spread score: 0): picked by scheduling policy`,
		"member3": `Successfully scheduled resources for placement in "member3" (affinity score: 33, topology spread score: 0): picked by scheduling policy`,
	} {
		if reasons[cluster] != want {
			t.Errorf("decision of %s = %q, want %q", cluster, reasons[cluster], want)
		}
	}
	for _, cluster := range []string{"member1", "member4"} {
		if !regexp.MustCompile(`score: 0\b`).MatchString(reasons[cluster]) {
			t.Errorf("decision of %s = %q, want a score of 0", cluster, reasons[cluster])
		}
	}

	// Ascending turns the ranking around: member1 100, member3 67.
	f.place(&fleet.PlacementPolicy{PlacementType: fleet.PickNPlacementType, NumberOfClusters: n(2),
		Affinity: &fleet.Affinity{ClusterAffinity: &fleet.ClusterAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []fleet.PreferredClusterSelector{
			{Weight: 100, Preference: fleet.ClusterSelectorTerm{PropertySorter: &fleet.PropertySorter{
				Name: fleet.AvailableCPUCapacityProperty, SortOrder: fleet.Ascending}}},
		}}}})
	if got, want := f.states(), "[member1=Scheduled@example-placement-1 member2=Unscheduled@example-placement-0 member3=Scheduled@example-placement-1]"; got != want {
		t.Fatalf("bindings = %s, want %s", got, want)
	}
}
