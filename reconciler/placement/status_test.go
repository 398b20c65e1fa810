package placement_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/internal/testing/golden"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/reconciler/placement"
	"github.com/gitfleet/gitfleet/reconciler/scheduler"
)

// demo is the seed demo (seed 003): three simulated members, the
// example-placement CRP (PickAll, External) selecting test-namespace, and
// resource snapshots 0 (value1) and 1 (value2, latest).
type demo struct {
	t   *testing.T
	ctx context.Context
	clk *clock.Fake
	hub *embedded.Hub
	key hub.Key
}

func seedMember(name string, kv ...string) *fleet.MemberCluster {
	m := &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{},
		Annotations: map[string]string{fleet.DriverAnnotation: fleet.DriverSimulated}}}
	for i := 0; i+1 < len(kv); i += 2 {
		m.Labels[kv[i]] = kv[i+1]
	}
	return m
}

type option func(p *fleet.Placement, members []*fleet.MemberCluster)

// stuck makes member2 never available (seed 000's stuck rollout).
func stuck(_ *fleet.Placement, members []*fleet.MemberCluster) {
	members[1].Annotations[fleet.SimUnavailableAnnotation] = "InvalidImageName"
}

func newDemo(t *testing.T, namespace string, opts ...option) *demo {
	t.Helper()
	d := &demo{t: t, ctx: context.Background(), clk: clock.NewFake(time.Date(2026, 1, 12, 22, 37, 57, 0, time.UTC)),
		key: hub.Key{Namespace: namespace, Name: "example-placement"}}
	d.hub = embedded.New(d.clk, nil)
	members := []*fleet.MemberCluster{
		seedMember("member1", "environment", "canary", "order", "2"),
		seedMember("member2", "environment", "staging"),
		seedMember("member3", "environment", "canary", "order", "1"),
	}
	p := &fleet.Placement{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: d.key.Name},
		Spec: fleet.PlacementSpec{
			ResourceSelectors: []fleet.ResourceSelectorTerm{{Group: "", Version: "v1", Kind: "Namespace", Name: "test-namespace"}},
			Policy:            &fleet.PlacementPolicy{PlacementType: fleet.PickAllPlacementType},
			Strategy:          fleet.RolloutStrategy{Type: fleet.ExternalRolloutStrategyType},
		},
	}
	for _, o := range opts {
		o(p, members)
	}
	for _, m := range members {
		d.hub.ApplyMemberCluster(m)
	}
	d.hub.ApplyPlacement(p)
	d.must((&scheduler.Scheduler{Hub: d.hub, Clock: d.clk}).Schedule(d.ctx, d.key))
	d.snapshot(0, "value1", false)
	d.snapshot(1, "value2", true)
	return d
}

func (d *demo) must(err error) {
	d.t.Helper()
	if err != nil {
		d.t.Fatal(err)
	}
}

func (d *demo) snapshot(index int, value string, latest bool) {
	raw := func(s string) runtime.RawExtension { return runtime.RawExtension{Raw: []byte(s)} }
	d.must(d.hub.CreateResourceSnapshot(d.ctx, &fleet.ResourceSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: d.key.Namespace, Name: fmt.Sprintf("example-placement-%d-snapshot", index),
			Labels: map[string]string{fleet.PlacementTrackingLabel: d.key.Name, fleet.ResourceIndexLabel: fmt.Sprint(index),
				fleet.IsLatestSnapshotLabel: fmt.Sprint(latest)},
			Annotations: map[string]string{fleet.ResourceGroupHashAnnotation: fmt.Sprint(index)}},
		Spec: fleet.ResourceSnapshotSpec{SelectedResources: []runtime.RawExtension{
			raw(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"test-namespace"}}`),
			raw(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"test-cm","namespace":"test-namespace"},"data":{"key":"` + value + `"}}`),
			raw(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"nginx-deployment","namespace":"test-namespace"}}`),
		}},
	}))
}

func (d *demo) binding(cluster string) *fleet.Binding {
	d.t.Helper()
	bs, err := d.hub.ListBindings(d.ctx, d.key)
	d.must(err)
	for _, b := range bs {
		if b.Spec.TargetCluster == cluster {
			return b
		}
	}
	d.t.Fatalf("no binding for %s", cluster)
	return nil
}

// roll does what the run does to start a cluster (Bound on the snapshot,
// then RolloutStarted at the new generation), then commits so the member
// gets it — 16 s later than the previous step.
func (d *demo) roll(cluster string, index int) {
	d.t.Helper()
	d.clk.Advance(16 * time.Second)
	b := d.binding(cluster)
	b.Spec.State = fleet.BindingStateBound
	b.Spec.ResourceSnapshotName = fmt.Sprintf("example-placement-%d-snapshot", index)
	b.Spec.ApplyStrategy = &fleet.ApplyStrategy{ComparisonOption: fleet.ComparisonOptionTypePartialComparison,
		WhenToApply: fleet.WhenToApplyTypeAlways, Type: fleet.ApplyStrategyTypeClientSideApply, WhenToTakeOver: fleet.WhenToTakeOverTypeAlways}
	p, err := d.hub.GetPlacement(d.ctx, d.key)
	d.must(err)
	if as := p.Spec.Strategy.ApplyStrategy; as != nil {
		b.Spec.ApplyStrategy = as.DeepCopy()
	}
	d.must(d.hub.UpdateBinding(d.ctx, b))
	b = d.binding(cluster)
	meta.RemoveStatusCondition(&b.Status.Conditions, fleet.ResourceBindingRolloutStarted)
	meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{Type: fleet.ResourceBindingRolloutStarted,
		Status: metav1.ConditionTrue, Reason: fleet.RolloutStartedReason, ObservedGeneration: b.Generation,
		LastTransitionTime: metav1.NewTime(d.clk.Now()),
		Message:            fmt.Sprintf("Detected the new changes on the resources and started the rollout process, resourceSnapshotIndex: %d, updateRun: example-run", index)})
	d.must(d.hub.UpdateBindingStatus(d.ctx, b))
	d.must(d.hub.Commit(d.ctx))
}

func (d *demo) status() *fleet.Placement {
	d.t.Helper()
	d.must((&placement.Updater{Hub: d.hub, Clock: d.clk}).Update(d.ctx, d.key))
	p, err := d.hub.GetPlacement(d.ctx, d.key)
	d.must(err)
	return p
}

// goldenPlacement compares the placement, as `kubectl get -o yaml` would
// show it (without the resourceVersion, which counts hub writes), to
// testdata/<name>.yaml.
func goldenPlacement(t *testing.T, name string, p *fleet.Placement) {
	t.Helper()
	p = p.DeepCopy()
	p.ResourceVersion = ""
	got, err := yaml.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, name+".yaml", got)
}

func TestSeedDemoPlacementStatus(t *testing.T) {
	tests := []struct {
		name   string
		opts   []option
		rolled map[string]int // cluster → snapshot index a run rolled out, in name order
	}{
		{name: "before-any-run"},
		{name: "mixed-indices", rolled: map[string]int{"member2": 1}},
		{name: "all-on-one-index", rolled: map[string]int{"member1": 1, "member2": 1, "member3": 1}},
		{name: "all-on-one-index-before-rollback", rolled: map[string]int{"member1": 0, "member2": 0, "member3": 0}},
		{name: "stuck-member", opts: []option{stuck}, rolled: map[string]int{"member2": 1}},
		{name: "stuck-member-all-on-one-index", opts: []option{stuck}, rolled: map[string]int{"member1": 1, "member2": 1, "member3": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDemo(t, "", tt.opts...)
			for _, c := range []string{"member1", "member2", "member3"} {
				if index, ok := tt.rolled[c]; ok {
					d.roll(c, index)
				}
			}
			d.clk.Advance(time.Minute)
			goldenPlacement(t, tt.name, d.status())
		})
	}
}

func TestStatusIsWrittenOnlyWhenItChanges(t *testing.T) {
	d := newDemo(t, "")
	first := d.status()
	d.clk.Advance(time.Hour)
	if again := d.status(); again.ResourceVersion != first.ResourceVersion {
		t.Fatal("an unchanged status was written again")
	}
	scheduledSince := meta.FindStatusCondition(first.Status.Conditions, "ClusterResourcePlacementScheduled").LastTransitionTime

	d.roll("member3", 1)
	p := d.status()
	if p.ResourceVersion == first.ResourceVersion {
		t.Fatal("a changed status was not written")
	}
	if got := meta.FindStatusCondition(p.Status.Conditions, "ClusterResourcePlacementScheduled").LastTransitionTime; !got.Equal(&scheduledSince) {
		t.Errorf("Scheduled transition time moved from %s to %s without a status change", scheduledSince, got)
	}
	rs := meta.FindStatusCondition(p.Status.PlacementStatuses[2].Conditions, "RolloutStarted")
	if rs.Status != metav1.ConditionTrue || !rs.LastTransitionTime.Time.Equal(d.clk.Now().Truncate(time.Second)) {
		t.Errorf("member3 RolloutStarted = %s since %s, want True since now", rs.Status, rs.LastTransitionTime)
	}
}

func TestResourcePlacementStatus(t *testing.T) {
	d := newDemo(t, "my-app-namespace", stuck)
	for _, c := range []string{"member1", "member2", "member3"} {
		d.roll(c, 1)
	}
	p := d.status()
	var types []string
	for _, c := range p.Status.Conditions {
		types = append(types, c.Type)
	}
	want := "[ResourcePlacementScheduled ResourcePlacementRolloutStarted ResourcePlacementOverridden ResourcePlacementWorkSynchronized ResourcePlacementApplied ResourcePlacementAvailable]"
	if fmt.Sprint(types) != want {
		t.Fatalf("condition types = %v, want %s", types, want)
	}
	available := meta.FindStatusCondition(p.Status.PlacementStatuses[1].Conditions, "Available")
	if available.Message != "Work object my-app-namespace.example-placement-work is not yet available" {
		t.Errorf("member2 Available message = %q", available.Message)
	}
}

func TestReportDiffPlacementEndsWithDiffReported(t *testing.T) {
	d := newDemo(t, "", func(p *fleet.Placement, _ []*fleet.MemberCluster) {
		p.Spec.Strategy.ApplyStrategy = &fleet.ApplyStrategy{Type: fleet.ApplyStrategyTypeReportDiff}
	})
	for _, c := range []string{"member1", "member2", "member3"} {
		d.roll(c, 1)
	}
	p := d.status()
	c := meta.FindStatusCondition(p.Status.Conditions, "ClusterResourcePlacementDiffReported")
	if c == nil || c.Status != metav1.ConditionTrue || c.Message != "Diff reporting in 3 cluster(s) has been completed" {
		t.Fatalf("DiffReported = %+v; conditions %+v", c, p.Status.Conditions)
	}
	if meta.FindStatusCondition(p.Status.Conditions, "ClusterResourcePlacementApplied") != nil {
		t.Error("a ReportDiff placement shows Applied")
	}
}

func TestMissingPickFixedClusterShowsScheduleFailed(t *testing.T) {
	d := newDemo(t, "", func(p *fleet.Placement, _ []*fleet.MemberCluster) {
		p.Spec.Policy = &fleet.PlacementPolicy{PlacementType: fleet.PickFixedPlacementType, ClusterNames: []string{"member1", "member9"}}
	})
	p := d.status()
	sched := meta.FindStatusCondition(p.Status.Conditions, "ClusterResourcePlacementScheduled")
	if sched.Status != metav1.ConditionFalse || sched.Reason != scheduler.NotFullyScheduledReason {
		t.Errorf("Scheduled = %+v", sched)
	}
	if n := len(p.Status.PlacementStatuses); n != 2 {
		t.Fatalf("%d placement statuses, want member1 and member9", n)
	}
	s := p.Status.PlacementStatuses[1]
	c := meta.FindStatusCondition(s.Conditions, "Scheduled")
	if s.ClusterName != "member9" || c.Status != metav1.ConditionFalse || c.Reason != "ScheduleFailed" ||
		c.Message != `Specified cluster "member9" is not found` {
		t.Errorf("member9 status = %+v", s)
	}
}

// TestUpdaterComputesWhatAFreshPassComputes holds the Updater, which reuses
// the entries of clusters whose binding did not change since its last
// pass, to what a pass that remembers nothing computes: after each step of
// a rollout (bindings bound, members reporting, a new latest snapshot, a
// rollback), a fresh Updater finds nothing to write.
func TestUpdaterComputesWhatAFreshPassComputes(t *testing.T) {
	d := newDemo(t, "", stuck)
	u := &placement.Updater{Hub: d.hub, Clock: d.clk}
	steps := []struct {
		name string
		do   func()
	}{
		{"before any run", func() {}},
		{"member2 rolled", func() { d.roll("member2", 1) }},
		{"member1 rolled", func() { d.roll("member1", 1) }},
		{"an hour later", func() { d.clk.Advance(time.Hour) }},
		{"member3 rolled", func() { d.roll("member3", 1) }},
		{"a new latest snapshot", func() { d.snapshot(2, "value3", true) }},
		{"member1 rolled back", func() { d.roll("member1", 0) }},
	}
	for _, step := range steps {
		step.do()
		d.must(u.Update(d.ctx, d.key))
		remembered, err := d.hub.GetPlacement(d.ctx, d.key)
		d.must(err)
		d.must((&placement.Updater{Hub: d.hub, Clock: d.clk}).Update(d.ctx, d.key))
		fresh, err := d.hub.GetPlacement(d.ctx, d.key)
		d.must(err)
		if fresh.ResourceVersion != remembered.ResourceVersion {
			a, _ := yaml.Marshal(remembered.Status)
			b, _ := yaml.Marshal(fresh.Status)
			t.Fatalf("%s: a fresh pass changed the Updater's status\nUpdater:\n%s\nfresh:\n%s", step.name, a, b)
		}
	}
}
