package kube

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
)

// workload is what the test placement selects (gitfleet would render it
// from Git; the kube hub takes it from Config.Resources).
var workload = &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
	"metadata": map[string]any{"name": "app", "namespace": "default"}, "data": map[string]any{"k": "v"}}}

func selectWorkload(context.Context, *fleet.Placement) ([]*unstructured.Unstructured, error) {
	return []*unstructured.Unstructured{workload.DeepCopy()}, nil
}

// engineFleet is the engine wired on a kube hub as serve wires it on the
// embedded one (scheduler, update-run engine, placement status on one
// controller), with a PickAll placement "app" and its snapshot 0.
type engineFleet struct {
	th   *testHub
	h    *Hub
	ctrl *reconciler.Controller
}

func newEngineFleet(tb testing.TB, th *testHub, h *Hub, members map[string]map[string]string, strategy *fleet.UpdateStrategy) *engineFleet {
	tb.Helper()
	ctx := await.Context(tb)
	clk := clock.Real{}
	for name, labels := range members {
		th.apply(tb, h, &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})
	}
	p := &fleet.Placement{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Spec: fleet.PlacementSpec{
		ResourceSelectors: []fleet.ResourceSelectorTerm{{Version: "v1", Kind: "ConfigMap", Name: "app"}},
		Policy:            &fleet.PlacementPolicy{PlacementType: fleet.PickAllPlacementType},
		Strategy:          fleet.RolloutStrategy{Type: fleet.ExternalRolloutStrategyType}}}
	fleet.SetDefaultsPlacement(p)
	th.apply(tb, h, p)
	th.apply(tb, h, strategy)
	stored, err := h.GetPlacement(ctx, hub.Key{Name: "app"})
	if err != nil {
		tb.Fatal(err)
	}
	if _, _, err := resourcesnapshot.Ensure(ctx, h, stored, []*unstructured.Unstructured{workload}, ""); err != nil {
		tb.Fatal(err)
	}
	ctrl := reconciler.NewEngine(h, clk, reconciler.EngineOptions{
		OnError: func(c string, err error) { tb.Logf("%s: %v", c, err) },
	})
	return &engineFleet{th: th, h: h, ctrl: ctrl}
}

// start runs the controller until the test ends.
func (f *engineFleet) start(tb testing.TB) {
	ctx, cancel := context.WithCancel(await.Context(tb))
	done := make(chan struct{})
	tb.Cleanup(func() { cancel(); <-done })
	f.ctrl.EnqueueAll()
	go func() { defer close(done); f.ctrl.Run(ctx) }()
}

// simulateMembers plays the member agents, as KubeFleet's integration
// tests do: a binding whose rollout started (RolloutStarted at its
// generation) is reported Applied and Available at once, unless hold
// (optional) holds back the report of its cluster. Like a member agent,
// it is another client that watches bindings only (a Hub would also watch
// and decode every run write, which no agent does).
func simulateMembers(tb testing.TB, rc *rest.Config, hold func(cluster string) bool) {
	ctx, cancel := context.WithCancel(await.Context(tb))
	client := dynamic.NewForConfigOrDie(rc)
	factory := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
	gvr := resources[fleet.KindClusterResourceBinding]
	inf := factory.ForResource(gvr).Informer()
	report := func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		b := newBinding()
		if err := fromUnstructured(u, b); err != nil || (hold != nil && hold(b.Spec.TargetCluster)) || !reportAvailable(b) {
			return
		}
		next, err := toUnstructured(fleet.KindClusterResourceBinding, b)
		if err != nil {
			tb.Error(err)
			return
		}
		// A Conflict means a newer binding is on its way to this handler.
		if _, err := client.Resource(gvr).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil &&
			!apierrors.IsConflict(err) && !apierrors.IsNotFound(err) && ctx.Err() == nil {
			tb.Errorf("reporting binding %s: %v", b.Name, err)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    report,
		UpdateFunc: func(_, obj any) { report(obj) },
	}); err != nil {
		tb.Fatal(err)
	}
	factory.Start(ctx.Done())
	tb.Cleanup(func() { cancel(); factory.Shutdown() })
}

// reportAvailable marks b Applied and Available if its rollout started
// and it is not reported yet; it says whether it changed b.
func reportAvailable(b *fleet.Binding) bool {
	if b.DeletionTimestamp != nil || b.Spec.State != fleet.BindingStateBound {
		return false
	}
	if !conditionTrue(b.Status.Conditions, fleet.ResourceBindingRolloutStarted, b.Generation) ||
		conditionTrue(b.Status.Conditions, fleet.ResourceBindingAvailable, b.Generation) {
		return false
	}
	now := metav1.Now()
	for _, t := range []string{fleet.ResourceBindingApplied, fleet.ResourceBindingAvailable} {
		meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue,
			ObservedGeneration: b.Generation, Reason: t, Message: "reported by the simulated member", LastTransitionTime: now})
	}
	return true
}

// awaitBindings waits until placement app has a binding for each of n
// clusters.
func awaitBindings(t testing.TB, h *Hub, n int) {
	t.Helper()
	ctx := await.Context(t)
	await.Until(t, "a binding for every cluster", func() bool {
		bs, err := h.ListBindings(ctx, hub.Key{Name: "app"})
		return err == nil && len(bs) == n
	})
}

func conditionTrue(conds []metav1.Condition, typ string, gen int64) bool {
	c := meta.FindStatusCondition(conds, typ)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == gen
}

// runWatch checks every pass of the engine: clusters start stage by stage
// (none of a stage before every cluster of the previous one succeeded),
// never more in flight than the stage's maxConcurrency allows, and records
// the order clusters started in.
type runWatch struct {
	mu      sync.Mutex
	started []string
	errs    []string
}

func (w *runWatch) observe(maxConcurrency map[string]int) reconciler.PassObserver {
	return func(_, after *fleet.UpdateRun) {
		if after == nil {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		for i, st := range after.Status.StagesStatus {
			inFlight := 0
			for _, c := range st.Clusters {
				started := meta.IsStatusConditionTrue(c.Conditions, fleet.ClusterUpdatingConditionStarted)
				succeeded := meta.IsStatusConditionTrue(c.Conditions, fleet.ClusterUpdatingConditionSucceeded)
				if started && !slices.Contains(w.started, c.ClusterName) {
					w.started = append(w.started, c.ClusterName)
					if i > 0 && !stageSucceeded(after.Status.StagesStatus[i-1]) {
						w.errs = append(w.errs, fmt.Sprintf("%s of stage %s started before stage %s finished",
							c.ClusterName, st.StageName, after.Status.StagesStatus[i-1].StageName))
					}
				}
				if started && !succeeded {
					inFlight++
				}
			}
			if max, ok := maxConcurrency[st.StageName]; ok && inFlight > max {
				w.errs = append(w.errs, fmt.Sprintf("stage %s had %d clusters in flight; maxConcurrency is %d", st.StageName, inFlight, max))
			}
		}
	}
}

// check fails t with every violation seen, and unless n clusters
// started; it returns the clusters in the order they started.
func (w *runWatch) check(t testing.TB, n int) []string {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.errs {
		t.Error(e)
	}
	if len(w.started) != n {
		t.Errorf("clusters started %v; want all %d", w.started, n)
	}
	return slices.Clone(w.started)
}

// awaitSucceeded waits until h shows run Succeeded.
func awaitSucceeded(t testing.TB, h *Hub, run hub.Key) {
	t.Helper()
	ctx := await.Context(t)
	await.Until(t, "run "+run.Name+" to succeed", func() bool {
		r, err := h.GetUpdateRun(ctx, run)
		return err == nil && r.Phase() == fleet.PhaseSucceeded
	})
}

func stageSucceeded(st fleet.StageUpdatingStatus) bool {
	for _, c := range st.Clusters {
		if !meta.IsStatusConditionTrue(c.Conditions, fleet.ClusterUpdatingConditionSucceeded) {
			return false
		}
	}
	return true
}

func maxConcurrency(s string) *intstr.IntOrString {
	v := intstr.Parse(s)
	return &v
}

// TestEngineOnKubeHub runs a quickstart-like run on a real API server:
// staging, canary (sorted by the order label) behind an approval, and prod
// two at a time; members are simulated, the approval is given on the hub.
func TestEngineOnKubeHub(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	th := startHub(t)
	h := th.newHub(t, Config{Resources: selectWorkload})
	members := map[string]map[string]string{
		"member1": {"environment": "canary", "order": "2"},
		"member2": {"environment": "staging"},
		"member3": {"environment": "canary", "order": "1"},
	}
	for i := 1; i <= 5; i++ {
		members[fmt.Sprintf("prod-%d", i)] = map[string]string{"environment": "prod"}
	}
	strategy := &fleet.UpdateStrategy{ObjectMeta: metav1.ObjectMeta{Name: "example-strategy"}, Spec: fleet.UpdateStrategySpec{
		Stages: []fleet.StageConfig{
			{Name: "staging", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"environment": "staging"}}},
			{Name: "canary", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"environment": "canary"}},
				SortingLabelKey: ptrTo("order"), AfterStageTasks: []fleet.StageTask{{Type: fleet.StageTaskTypeApproval}}},
			{Name: "prod", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"environment": "prod"}},
				MaxConcurrency: maxConcurrency("2")},
		}}}
	f := newEngineFleet(t, th, h, members, strategy)
	f.ctrl.Workers = 2
	watch := &runWatch{}
	f.ctrl.Observer = watch.observe(map[string]int{"staging": 1, "canary": 1, "prod": 2})
	simulateMembers(t, th.rest, nil)
	f.start(t)

	ctx := await.Context(t)
	run := hub.Key{Name: "example-run"}
	th.apply(t, h, &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: run.Name}, Spec: fleet.UpdateRunSpec{
		PlacementName: "app", StagedUpdateStrategyName: strategy.Name, State: fleet.StateRun}})

	approval := hub.Key{Name: "example-run-after-canary"}
	// The request is created in the pass before the one that writes the
	// run's Waiting status: wait for both rather than read the run once.
	await.Until(t, "the run to wait for the canary approval", func() bool {
		if _, err := h.GetApprovalRequest(ctx, approval); err != nil {
			return false
		}
		r, err := h.GetUpdateRun(ctx, run)
		return err == nil && r.Phase() == fleet.PhaseWaiting
	})
	watch.mu.Lock()
	if slices.ContainsFunc(watch.started, func(c string) bool { return members[c]["environment"] == "prod" }) {
		t.Errorf("prod started before the canary approval: %v", watch.started)
	}
	watch.mu.Unlock()

	a, err := h.GetApprovalRequest(ctx, approval)
	if err != nil {
		t.Fatal(err)
	}
	meta.SetStatusCondition(&a.Status.Conditions, metav1.Condition{Type: fleet.ApprovalRequestConditionApproved,
		Status: metav1.ConditionTrue, ObservedGeneration: a.Generation, Reason: "testPassed", Message: "approved"})
	if err := h.UpdateApprovalRequestStatus(ctx, a); err != nil {
		t.Fatal(err)
	}
	awaitSucceeded(t, h, run)
	started := watch.check(t, len(members))
	if got, want := started[:3], []string{"member2", "member3", "member1"}; !slices.Equal(got, want) {
		t.Errorf("clusters started in order %v; want %v first (staging, then canary by order)", started, want)
	}
	bindings, err := h.ListBindings(ctx, hub.Key{Name: "app"})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bindings {
		if b.Spec.State != fleet.BindingStateBound || !conditionTrue(b.Status.Conditions, fleet.ResourceBindingAvailable, b.Generation) {
			t.Errorf("binding %s: state %s, conditions %+v; want Bound and Available", b.Name, b.Spec.State, b.Status.Conditions)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestRunFinishesAcrossAnAPIServerRestart stops the hub's API server while
// a cluster is in flight (its member holds its report back), starts it
// again, and lets the member report: the hub's informers list and watch
// again on their own, see the report, and the engine finishes the run,
// stage by stage and one cluster at a time.
func TestRunFinishesAcrossAnAPIServerRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	th := startHub(t)
	h := th.newHub(t, Config{Resources: selectWorkload})
	members := map[string]map[string]string{"staging-1": {"environment": "staging"}}
	for i := 1; i <= 4; i++ {
		members[fmt.Sprintf("prod-%d", i)] = map[string]string{"environment": "prod"}
	}
	strategy := &fleet.UpdateStrategy{ObjectMeta: metav1.ObjectMeta{Name: "two-stages"}, Spec: fleet.UpdateStrategySpec{
		Stages: []fleet.StageConfig{
			{Name: "staging", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"environment": "staging"}}},
			{Name: "prod", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"environment": "prod"}},
				MaxConcurrency: maxConcurrency("1")},
		}}}
	f := newEngineFleet(t, th, h, members, strategy)
	f.ctrl.Workers = 2
	watch := &runWatch{}
	f.ctrl.Observer = watch.observe(map[string]int{"staging": 1, "prod": 1})
	const held = "prod-2"
	simulateMembers(t, th.rest, func(cluster string) bool { return cluster == held })
	f.start(t)

	ctx := await.Context(t)
	run := hub.Key{Name: "restart-run"}
	th.apply(t, h, &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: run.Name}, Spec: fleet.UpdateRunSpec{
		PlacementName: "app", StagedUpdateStrategyName: strategy.Name, State: fleet.StateRun}})
	bindingOf := func(cluster string) *fleet.Binding {
		bs, err := h.ListBindings(ctx, hub.Key{Name: "app"})
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bs {
			if b.Spec.TargetCluster == cluster {
				return b
			}
		}
		return nil
	}
	await.Until(t, "the rollout to "+held+" to start", func() bool {
		b := bindingOf(held)
		return b != nil && conditionTrue(b.Status.Conditions, fleet.ResourceBindingRolloutStarted, b.Generation)
	})

	th.cluster.StopAPIServer()
	th.cluster.StartAPIServer()

	// The member reports through the API server that came back.
	b := bindingOf(held)
	reportAvailable(b)
	u, err := toUnstructured(fleet.KindClusterResourceBinding, b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := th.client.Resource(resources[fleet.KindClusterResourceBinding]).UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("reporting %s available after the restart: %v", held, err)
	}
	awaitSucceeded(t, h, run)
	watch.check(t, len(members))
}
