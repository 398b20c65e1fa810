package updaterun

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
)

// The fixture is upstream's integration-test fixture (spec §9): ten target
// clusters cluster-0..9 (group=prod, region westus for even i and eastus
// for odd i, index=9-i), three unscheduled clusters (binding for
// unscheduled-cluster-0 on an old policy snapshot, -1 and -2 Unscheduled on
// the latest), a PickN(10) policy snapshot, resource snapshot 0, and a
// two-stage strategy. Members are simulated the way envtest does it: tests
// write the binding conditions by hand.

var start = time.Date(2026, 1, 8, 0, 0, 0, 0, time.UTC)

const (
	placementName = "test-placement"
	strategyName  = "test-strategy"
	runName       = "test-run"
)

type env struct {
	t   testing.TB
	ctx context.Context
	clk *clock.Fake
	h   *embedded.Hub
	r   *Reconciler
	rec *fakeRecorder
	ns  string
	run *fleet.UpdateRun // spec of the run under test, applied by create
}

// families runs a test for the cluster-scoped and the namespaced family.
var families = []struct{ name, ns string }{{"cluster", ""}, {"namespaced", "test-ns"}}

func newEnv(t testing.TB, ns string) *env {
	clk := clock.NewFake(start)
	h := embedded.New(clk, nil)
	rec := &fakeRecorder{}
	e := &env{t: t, ctx: context.Background(), clk: clk, h: h, rec: rec, ns: ns,
		r: &Reconciler{Hub: h, Clock: clk, Metrics: rec}}
	e.run = &fleet.UpdateRun{
		ObjectMeta: metav1.ObjectMeta{Name: runName, Namespace: ns},
		Spec: fleet.UpdateRunSpec{PlacementName: placementName, StagedUpdateStrategyName: strategyName,
			ResourceSnapshotIndex: "0", State: fleet.StateRun},
	}
	return e
}

// fixture installs the §9 fleet: members, placement, policy snapshots,
// bindings, resource snapshot 0 and the two-stage strategy.
func (e *env) fixture() *env {
	for i := 0; i < 10; i++ {
		region := "westus"
		if i%2 == 1 {
			region = "eastus"
		}
		e.member(fmt.Sprintf("cluster-%d", i), map[string]string{"group": "prod", "region": region, "index": fmt.Sprint(9 - i)})
	}
	for i := 0; i < 3; i++ {
		e.member(fmt.Sprintf("unscheduled-cluster-%d", i), map[string]string{"group": "staging"})
	}
	e.placement(nil)
	e.policySnapshot(0, false, pickN(10), true)
	e.policySnapshot(1, true, pickN(10), true)
	for i := 0; i < 10; i++ {
		e.binding(fmt.Sprintf("cluster-%d", i), 1, fleet.BindingStateScheduled)
	}
	e.binding("unscheduled-cluster-0", 0, fleet.BindingStateUnscheduled)
	e.binding("unscheduled-cluster-1", 1, fleet.BindingStateUnscheduled)
	e.binding("unscheduled-cluster-2", 1, fleet.BindingStateUnscheduled)
	e.resourceSnapshot(0, true, "hash-0")
	e.strategy(twoStages())
	return e
}

func pickN(n int) *fleet.PlacementPolicy {
	v := int32(n)
	return &fleet.PlacementPolicy{PlacementType: fleet.PickNPlacementType, NumberOfClusters: &v}
}

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func selector(kv ...string) *metav1.LabelSelector {
	s := &metav1.LabelSelector{MatchLabels: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.MatchLabels[kv[i]] = kv[i+1]
	}
	return s
}

func strptr(s string) *string { return &s }

func approval() fleet.StageTask { return fleet.StageTask{Type: fleet.StageTaskTypeApproval} }
func timedWait(d time.Duration) fleet.StageTask {
	return fleet.StageTask{Type: fleet.StageTaskTypeTimedWait, WaitTime: dur(d)}
}

// twoStages is the §9 strategy: stage1 = eastus by index (9,7,5,3,1),
// before Approval, after [TimedWait 4s, Approval]; stage2 = westus by name
// (0,2,4,6,8), before Approval, after [Approval, TimedWait 4s].
func twoStages() fleet.UpdateStrategySpec {
	return fleet.UpdateStrategySpec{Stages: []fleet.StageConfig{
		{Name: "stage1", LabelSelector: selector("group", "prod", "region", "eastus"), SortingLabelKey: strptr("index"),
			BeforeStageTasks: []fleet.StageTask{approval()},
			AfterStageTasks:  []fleet.StageTask{timedWait(4 * time.Second), approval()}},
		{Name: "stage2", LabelSelector: selector("group", "prod", "region", "westus"),
			BeforeStageTasks: []fleet.StageTask{approval()},
			AfterStageTasks:  []fleet.StageTask{approval(), timedWait(4 * time.Second)}},
	}}
}

func (e *env) member(name string, labels map[string]string) {
	e.h.ApplyMemberCluster(&fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})
}

func (e *env) pkey() hub.Key { return hub.Key{Namespace: e.ns, Name: placementName} }

func (e *env) placement(mutate func(*fleet.Placement)) {
	p := &fleet.Placement{
		ObjectMeta: metav1.ObjectMeta{Name: placementName, Namespace: e.ns},
		Spec: fleet.PlacementSpec{
			Policy:   pickN(10),
			Strategy: fleet.RolloutStrategy{Type: fleet.ExternalRolloutStrategyType},
		},
	}
	if mutate != nil {
		mutate(p)
	}
	e.h.ApplyPlacement(p)
}

func (e *env) policySnapshot(idx int, latest bool, pol *fleet.PlacementPolicy, scheduled bool) *fleet.PolicySnapshot {
	s := &fleet.PolicySnapshot{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf(fleet.PolicySnapshotNameFmt, placementName, idx), Namespace: e.ns,
			Labels: map[string]string{fleet.PlacementTrackingLabel: placementName,
				fleet.IsLatestSnapshotLabel: fmt.Sprint(latest), fleet.PolicyIndexLabel: fmt.Sprint(idx)},
		},
		Spec: fleet.SchedulingPolicySnapshotSpec{Policy: pol},
	}
	if pol != nil && pol.NumberOfClusters != nil {
		s.Annotations = map[string]string{fleet.NumberOfClustersAnnotation: fmt.Sprint(*pol.NumberOfClusters)}
	}
	if scheduled {
		s.Status.Conditions = []metav1.Condition{{Type: fleet.PolicySnapshotScheduled, Status: metav1.ConditionTrue,
			ObservedGeneration: 1, Reason: "Scheduled", LastTransitionTime: metav1.NewTime(start)}}
	}
	if err := e.h.CreatePolicySnapshot(e.ctx, s); err != nil {
		e.t.Fatal(err)
	}
	return s
}

func (e *env) updatePolicySnapshot(idx int, mutate func(*fleet.PolicySnapshot)) {
	all, _ := e.h.ListPolicySnapshots(e.ctx, e.pkey())
	for _, s := range all {
		if s.Name == fmt.Sprintf(fleet.PolicySnapshotNameFmt, placementName, idx) {
			oldGen := s.Generation
			mutate(s)
			if err := e.h.UpdatePolicySnapshot(e.ctx, s); err != nil {
				e.t.Fatal(err)
			}
			// A policy change raises the generation; the scheduler then
			// reports Scheduled again for it.
			cur, _ := e.h.ListPolicySnapshots(e.ctx, e.pkey())
			for _, c := range cur {
				if c.Name == s.Name && c.Generation != oldGen && len(c.Status.Conditions) > 0 && c.Status.Conditions[0].ObservedGeneration == oldGen {
					c.Status.Conditions[0].ObservedGeneration = c.Generation
					if err := e.h.UpdatePolicySnapshot(e.ctx, c); err != nil {
						e.t.Fatal(err)
					}
				}
			}
			return
		}
	}
	e.t.Fatalf("no policy snapshot %d", idx)
}

func bindingName(cluster string) string { return "binding-" + cluster }

func (e *env) binding(cluster string, policyIdx int, state fleet.BindingState) {
	b := &fleet.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: bindingName(cluster), Namespace: e.ns,
			Labels: map[string]string{fleet.PlacementTrackingLabel: placementName}},
		Spec: fleet.ResourceBindingSpec{State: state, TargetCluster: cluster,
			SchedulingPolicySnapshotName: fmt.Sprintf(fleet.PolicySnapshotNameFmt, placementName, policyIdx)},
	}
	if err := e.h.CreateBinding(e.ctx, b); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) getBinding(cluster string) *fleet.Binding {
	b, err := e.h.GetBinding(e.ctx, hub.Key{Namespace: e.ns, Name: bindingName(cluster)})
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

func (e *env) bindingExists(cluster string) bool {
	_, err := e.h.GetBinding(e.ctx, hub.Key{Namespace: e.ns, Name: bindingName(cluster)})
	return err == nil
}

func (e *env) updateBinding(cluster string, mutate func(*fleet.Binding)) {
	b := e.getBinding(cluster)
	mutate(b)
	if err := e.h.UpdateBinding(e.ctx, b); err != nil {
		e.t.Fatal(err)
	}
}

// setBindingCondition plays the member: it reports a delivery condition at
// the binding's current generation.
func (e *env) setBindingCondition(cluster, typ string, status metav1.ConditionStatus, reason string) {
	b := e.getBinding(cluster)
	removeCondition(&b.Status.Conditions, typ)
	b.Status.Conditions = append(b.Status.Conditions, metav1.Condition{Type: typ, Status: status,
		ObservedGeneration: b.Generation, Reason: reason, LastTransitionTime: metav1.NewTime(e.clk.Now())})
	if err := e.h.UpdateBindingStatus(e.ctx, b); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) available(clusters ...string) {
	for _, c := range clusters {
		e.setBindingCondition(c, fleet.ResourceBindingAvailable, metav1.ConditionTrue, "Available")
	}
}

func (e *env) resourceSnapshot(idx int, latest bool, hash string) {
	s := &fleet.ResourceSnapshot{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf(fleet.ResourceSnapshotNameFmt, placementName, idx), Namespace: e.ns,
			Labels: map[string]string{fleet.PlacementTrackingLabel: placementName,
				fleet.ResourceIndexLabel: fmt.Sprint(idx), fleet.IsLatestSnapshotLabel: fmt.Sprint(latest)},
		},
	}
	if hash != "" {
		s.Annotations = map[string]string{fleet.ResourceGroupHashAnnotation: hash, fleet.NumberOfResourceSnapshotsAnnotation: "1"}
	}
	if err := e.h.CreateResourceSnapshot(e.ctx, s); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) strategy(spec fleet.UpdateStrategySpec) {
	e.h.ApplyUpdateStrategy(&fleet.UpdateStrategy{ObjectMeta: metav1.ObjectMeta{Name: strategyName, Namespace: e.ns}, Spec: spec})
}

func (e *env) key() hub.Key { return hub.Key{Namespace: e.ns, Name: e.run.Name} }

// create applies the run (as Git would).
func (e *env) create() *env {
	e.h.ApplyUpdateRun(e.run.DeepCopy())
	return e
}

// setState changes the run's state, raising its generation.
func (e *env) setState(s fleet.State) {
	r, err := e.h.GetUpdateRun(e.ctx, e.key())
	if err != nil {
		e.t.Fatal(err)
	}
	r.Spec.State = s
	e.h.ApplyUpdateRun(r)
}

// pass runs one reconcile pass and returns its result; retriable errors are
// returned for the test to check.
func (e *env) pass() (Result, error) {
	e.t.Helper()
	return e.r.Reconcile(e.ctx, e.key())
}

// ok runs one pass that must not fail.
func (e *env) ok() Result {
	e.t.Helper()
	res, err := e.pass()
	if err != nil {
		e.t.Fatalf("pass failed: %v", err)
	}
	return res
}

func (e *env) get() *fleet.UpdateRun {
	e.t.Helper()
	r, err := e.h.GetUpdateRun(e.ctx, e.key())
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

func (e *env) arKey(name string) hub.Key { return hub.Key{Namespace: e.ns, Name: name} }

func (e *env) ar(name string) (*fleet.ApprovalRequest, bool) {
	a, err := e.h.GetApprovalRequest(e.ctx, e.arKey(name))
	if hub.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return a, true
}

// approve plays the person: Approved=True at the request's generation.
func (e *env) approve(name string) {
	e.approveAt(name, -1)
}

// approveAt writes Approved=True with the given observedGeneration (-1: the
// request's generation).
func (e *env) approveAt(name string, observed int64) {
	e.t.Helper()
	a, ok := e.ar(name)
	if !ok {
		e.t.Fatalf("approval request %s does not exist", name)
	}
	if observed < 0 {
		observed = a.Generation
	}
	removeCondition(&a.Status.Conditions, fleet.ApprovalRequestConditionApproved)
	a.Status.Conditions = append(a.Status.Conditions, metav1.Condition{Type: fleet.ApprovalRequestConditionApproved,
		Status: metav1.ConditionTrue, ObservedGeneration: observed, Reason: fleet.ClusterApprovalRequestApprovedReason,
		Message: "ClusterApprovalRequest has been approved", LastTransitionTime: metav1.NewTime(e.clk.Now())})
	if err := e.h.ApplyApprovalRequestStatus(e.ctx, a); err != nil {
		e.t.Fatal(err)
	}
}

// ---- condition assertions ----

// cond is an expected condition: msg is exact unless it starts with "~",
// then it must be contained; an empty msg is not checked.
type cond struct{ typ, status, reason, msg string }

func (c cond) String() string { return fmt.Sprintf("%s=%s/%s %q", c.typ, c.status, c.reason, c.msg) }

func condsString(cs []metav1.Condition) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "\n    %s=%s/%s %q (gen %d)", c.Type, c.Status, c.Reason, c.Message, c.ObservedGeneration)
	}
	return b.String()
}

// wantConds checks that got holds exactly the wanted condition types, with
// the wanted status, reason and message.
func wantConds(t testing.TB, where string, got []metav1.Condition, want ...cond) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %d conditions, want %d %v:%s", where, len(got), len(want), want, condsString(got))
		return
	}
	for _, w := range want {
		g := find(got, w.typ)
		if g == nil {
			t.Errorf("%s: no %s condition:%s", where, w.typ, condsString(got))
			continue
		}
		if string(g.Status) != w.status || g.Reason != w.reason {
			t.Errorf("%s: %s is %s/%s, want %s/%s", where, w.typ, g.Status, g.Reason, w.status, w.reason)
		}
		switch {
		case w.msg == "":
		case strings.HasPrefix(w.msg, "~"):
			if !strings.Contains(g.Message, w.msg[1:]) {
				t.Errorf("%s: %s message %q does not contain %q", where, w.typ, g.Message, w.msg[1:])
			}
		default:
			if g.Message != w.msg {
				t.Errorf("%s: %s message\n got %q\nwant %q", where, w.typ, g.Message, w.msg)
			}
		}
	}
}

// Common expectations.
var (
	initOK         = cond{fleet.StagedUpdateRunConditionInitialized, "True", fleet.UpdateRunInitializeSucceededReason, InitializedSucceededMessage}
	runProgressing = cond{fleet.StagedUpdateRunConditionProgressing, "True", fleet.UpdateRunProgressingReason, RunProgressingMessage}
	runStopping    = cond{fleet.StagedUpdateRunConditionProgressing, "Unknown", fleet.UpdateRunStoppingReason, RunStoppingMessage}
	runStopped     = cond{fleet.StagedUpdateRunConditionProgressing, "False", fleet.UpdateRunStoppedReason, RunStoppedMessage}
	runSucceeded   = []cond{initOK,
		{fleet.StagedUpdateRunConditionProgressing, "False", fleet.UpdateRunSucceededReason, RunSucceededProgMessage},
		{fleet.StagedUpdateRunConditionSucceeded, "True", fleet.UpdateRunSucceededReason, RunSucceededMessage}}

	stageStarted  = cond{fleet.StageUpdatingConditionProgressing, "True", fleet.StageUpdatingStartedReason, StageStartedMessage}
	stageWaitPre  = cond{fleet.StageUpdatingConditionProgressing, "False", fleet.StageUpdatingWaitingReason, StageWaitingBeforeMessage}
	stageWaitPost = cond{fleet.StageUpdatingConditionProgressing, "False", fleet.StageUpdatingWaitingReason, StageWaitingAfterMessage}
	stageStopping = cond{fleet.StageUpdatingConditionProgressing, "Unknown", fleet.StageUpdatingStoppingReason, StageStoppingMessage}
	stageStopped  = cond{fleet.StageUpdatingConditionProgressing, "False", fleet.StageUpdatingStoppedReason, StageStoppedMessage}
	stageDone     = []cond{
		{fleet.StageUpdatingConditionProgressing, "False", fleet.StageUpdatingSucceededReason, StageSucceededProgMessage},
		{fleet.StageUpdatingConditionSucceeded, "True", fleet.StageUpdatingSucceededReason, StageSucceededMessage}}
	stageSkipped = []cond{
		{fleet.StageUpdatingConditionProgressing, "False", fleet.StageUpdatingSkippedNoClustersReason, StageSkippedNoClustersMessage},
		{fleet.StageUpdatingConditionSucceeded, "True", fleet.StageUpdatingSkippedNoClustersReason, StageSkippedNoClustersMessage}}

	clusterStarted = cond{fleet.ClusterUpdatingConditionStarted, "True", fleet.ClusterUpdatingStartedReason, ClusterStartedMessage}
	clusterDone    = cond{fleet.ClusterUpdatingConditionSucceeded, "True", fleet.ClusterUpdatingSucceededReason, ClusterSucceededMessage}

	taskCreated  = cond{fleet.StageTaskConditionApprovalRequestCreated, "True", fleet.StageTaskApprovalRequestCreatedReason, TaskApprovalRequestCreatedMessage}
	taskApproved = cond{fleet.StageTaskConditionApprovalRequestApproved, "True", fleet.StageTaskApprovalRequestApprovedReason, TaskApprovalRequestApprovedMessage}
	waitElapsed  = cond{fleet.StageTaskConditionWaitTimeElapsed, "True", fleet.AfterStageTaskWaitTimeElapsedReason, TaskWaitTimeElapsedMessage}
)

func runWaiting(kind, stage string) cond {
	return cond{fleet.StagedUpdateRunConditionProgressing, "False", fleet.UpdateRunWaitingReason, fmt.Sprintf(RunWaitingMessageFmt, kind, stage)}
}

func runFailed(msg string) []cond {
	return []cond{initOK,
		{fleet.StagedUpdateRunConditionProgressing, "False", fleet.UpdateRunFailedReason, RunFailedProgMessage},
		{fleet.StagedUpdateRunConditionSucceeded, "False", fleet.UpdateRunFailedReason, msg}}
}

func initFailed(msg string) cond {
	return cond{fleet.StagedUpdateRunConditionInitialized, "False", fleet.UpdateRunInitializeFailedReason, msg}
}

// clusterNames lists a stage's clusters in order.
func clusterNames(s fleet.StageUpdatingStatus) []string {
	out := []string{}
	for _, c := range s.Clusters {
		out = append(out, c.ClusterName)
	}
	return out
}

func intOrStr(s string) *intstr.IntOrString { v := intstr.Parse(s); return &v }

// ---- metrics ----

// fakeRecorder records what the engine reports to the metrics seam.
type fakeRecorder struct {
	mu        sync.Mutex
	statuses  []string // "<state>/<type>/<status>/<reason>/<failureType>", consecutive duplicates dropped
	approvals map[string]int
	durations int
	deleted   []string
}

func (f *fakeRecorder) RecordStatus(run *fleet.UpdateRun) {
	c, ok := MetricCondition(run)
	if !ok {
		return
	}
	s := fmt.Sprintf("%s/%s/%s/%s/%s", run.Spec.State, c.Type, c.Status, c.Reason, FailureType(c))
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.statuses); n == 0 || f.statuses[n-1] != s {
		f.statuses = append(f.statuses, s)
	}
}

func (f *fakeRecorder) ObserveApprovalLatency(_ *fleet.UpdateRun, taskType string, seconds float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.approvals == nil {
		f.approvals = map[string]int{}
	}
	f.approvals[taskType]++
}

func (f *fakeRecorder) ObserveStageClusterUpdatingDuration(*fleet.UpdateRun, float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.durations++
}

func (f *fakeRecorder) DeleteRun(namespace, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, namespace+"/"+name)
}

func (f *fakeRecorder) last() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.statuses) == 0 {
		return ""
	}
	return f.statuses[len(f.statuses)-1]
}
