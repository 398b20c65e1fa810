package kube

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
)

// TestAPulledClusterCostsTheHubFewWrites counts what a run costs the hub's
// API server for each member that pulls (the API server is what a large
// pulled fleet waits on: BenchmarkPullFleet): two runs, a first rollout
// and an update, to three members through real agents, member3's
// manifests becoming available a second after they are applied. Per
// binding and run, serve writes its status twice when the member reports
// applied and available at once — the run's RolloutStarted, carrying the
// ApplyInProgress delivery writes right after the Works (KubeFleet's
// work generator's conditions), and the member's report — and three
// times when availability comes later; the agent writes each Work's
// status once, twice when availability comes later. The bindings end
// as KubeFleet's work generator leaves them, and the first status each
// shows at its new generation is RolloutStarted with ApplyInProgress.
func TestAPulledClusterCostsTheHubFewWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	th := startHub(t)
	ctx := await.Context(t)
	clk := clock.Real{}
	serveWrites, agentWrites := newObjectWrites(), newObjectWrites()
	serveRC, agentRC := rest.CopyConfig(th.rest), rest.CopyConfig(th.rest)
	serveRC.WrapTransport, agentRC.WrapTransport = serveWrites.wrap, agentWrites.wrap
	h := th.newHub(t, Config{Rest: serveRC, Resources: selectWorkload, Deliver: true})
	members := []string{"member1", "member2", "member3"}
	stop := startAgentsOn(t, th, agentRC, h, clk,
		map[string]map[string]string{"member3": {fleet.SimAvailableAfterAnnotation: "1s"}}, members...)

	strategy := &fleet.UpdateStrategy{ObjectMeta: metav1.ObjectMeta{Name: "all"}, Spec: fleet.UpdateStrategySpec{
		Stages: []fleet.StageConfig{{Name: "all", LabelSelector: &metav1.LabelSelector{}, MaxConcurrency: maxConcurrency("100%")}}}}
	th.apply(t, h, strategy)
	stored := th.appPlacement(t, h)
	snapshot := func(data string) {
		t.Helper()
		w := workload.DeepCopy()
		if err := unstructured.SetNestedField(w.Object, data, "data", "k"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := resourcesnapshot.Ensure(ctx, h, stored, []*unstructured.Unstructured{w}, ""); err != nil {
			t.Fatal(err)
		}
	}
	snapshot("v1")
	if _, err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	engine := reconciler.NewEngine(h, clk, reconciler.EngineOptions{Committer: h, OnError: func(c string, err error) { t.Logf("%s: %v", c, err) }})
	f := &engineFleet{th: th, h: h, ctrl: engine}
	f.start(t)
	awaitBindings(t, h, len(members))
	firsts := watchFirstStatuses(t, th)

	// Counted from here: the runs, not the setup.
	serveWrites.reset()
	agentWrites.reset()
	const runs = 2
	for i := range runs {
		if i > 0 {
			snapshot(fmt.Sprintf("v%d", i+1))
		}
		run := hub.Key{Name: fmt.Sprintf("run-%d", i)}
		th.apply(t, h, &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: run.Name}, Spec: fleet.UpdateRunSpec{
			PlacementName: "app", ResourceSnapshotIndex: fmt.Sprint(i), StagedUpdateStrategyName: strategy.Name, State: fleet.StateRun}})
		await.Until(t, run.Name+" to succeed", func() bool {
			r, err := h.GetUpdateRun(ctx, run)
			return err == nil && r.Phase() == fleet.PhaseSucceeded
		})
	}
	// Every write the agents make is counted once they stopped.
	for _, name := range members {
		stop[name]()
	}
	t.Logf("serve's writes: %s", serveWrites)
	t.Logf("the agents' writes: %s", agentWrites)

	bindings, err := h.ListBindings(ctx, hub.Key{Name: "app"})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bindings {
		cluster := b.Spec.TargetCluster
		// Per run: the status writes of a member available at once, and
		// of one whose availability comes later.
		bindingBound, workBound := 2, 1
		if cluster == "member3" {
			bindingBound, workBound = 3, 2
		}
		if n := serveWrites.count("PUT", "clusterresourcebindings", "status", b.Name); n > runs*bindingBound {
			t.Errorf("%s: %d binding status writes over %d runs, want at most %d a run", cluster, n, runs, bindingBound)
		}
		if n := agentWrites.count("PATCH", "works", "status", "app-work"+"@"+"fleet-member-"+cluster); n > runs*workBound {
			t.Errorf("%s: %d Work status writes over %d runs, want at most %d a run", cluster, n, runs, workBound)
		}
		var got []string
		for _, c := range b.Status.Conditions {
			got = append(got, fmt.Sprintf("%s=%s %s @%d", c.Type, c.Status, c.Reason, c.ObservedGeneration))
		}
		sort.Strings(got)
		want := []string{
			fmt.Sprintf("Applied=True AllWorkHaveBeenApplied @%d", b.Generation),
			fmt.Sprintf("Available=True AllWorkAreAvailable @%d", b.Generation),
			fmt.Sprintf("Overridden=True NoOverrideSpecified @%d", b.Generation),
			fmt.Sprintf("RolloutStarted=True RolloutStarted @%d", b.Generation),
			fmt.Sprintf("WorkSynchronized=True AllWorkSynced @%d", b.Generation),
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s's binding ends with\n  %s\nwant\n  %s", cluster, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
	}
	for key, st := range firsts.get() {
		if rs := meta.FindStatusCondition(st.conds, fleet.ResourceBindingRolloutStarted); rs == nil || rs.Status != metav1.ConditionTrue {
			t.Errorf("%s: the first status at generation %d has RolloutStarted %+v, want True", key, st.generation, rs)
		}
		if a := meta.FindStatusCondition(st.conds, fleet.ResourceBindingApplied); a == nil || a.Reason != fleet.ApplyInProgressReason ||
			a.ObservedGeneration != st.generation {
			t.Errorf("%s: the first status at generation %d has Applied %+v, want False %s at that generation", key, st.generation, a, fleet.ApplyInProgressReason)
		}
	}
	if n := len(firsts.get()); n != runs*len(members) {
		t.Errorf("saw %d bindings' first status at a new generation, want %d (%d runs × %d members)", n, runs*len(members), runs, len(members))
	}
}

// objectWrites counts a client's writes to the hub's API server by
// method, resource, subresource and object (name@namespace).
type objectWrites struct {
	mu     sync.Mutex
	counts map[string]int
}

func newObjectWrites() *objectWrites { return &objectWrites{counts: map[string]int{}} }

func (c *objectWrites) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Method != http.MethodGet {
			c.mu.Lock()
			c.counts[writeKey(r.Method, r.URL.Path)]++
			c.mu.Unlock()
		}
		return next.RoundTrip(r)
	})
}

// writeKey is "METHOD resource/subresource name@namespace" of an API path
// (/apis/<group>/<version>/[namespaces/<ns>/]<resource>[/<name>[/<sub>]]).
func writeKey(method, path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	}
	ns := ""
	if len(parts) > 2 && parts[0] == "namespaces" {
		ns, parts = parts[1], parts[2:]
	}
	resource, name, sub := "", "", ""
	switch len(parts) {
	case 3:
		resource, name, sub = parts[0], parts[1], parts[2]
	case 2:
		resource, name = parts[0], parts[1]
	case 1:
		resource = parts[0]
	}
	return fmt.Sprintf("%s %s/%s %s@%s", method, resource, sub, name, ns)
}

func (c *objectWrites) count(method, resource, sub, object string) int {
	if !strings.Contains(object, "@") {
		object += "@"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[fmt.Sprintf("%s %s/%s %s", method, resource, sub, object)]
}

func (c *objectWrites) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.counts)
}

func (c *objectWrites) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range c.counts {
			if !yield(k) {
				return
			}
		}
	})
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %s: %d", k, c.counts[k])
	}
	return b.String()
}

// firstStatuses are, by binding and generation, the first status seen
// with RolloutStarted at that generation (a watch sees every version).
type firstStatuses struct {
	mu   sync.Mutex
	seen map[string]firstStatus
}

type firstStatus struct {
	generation int64
	conds      []metav1.Condition
}

func (f *firstStatuses) get() map[string]firstStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.seen)
}

// watchFirstStatuses watches the cluster-scoped bindings from now until
// the test ends.
func watchFirstStatuses(t *testing.T, th *testHub) *firstStatuses {
	t.Helper()
	ctx := await.Context(t)
	w, err := th.client.Resource(resources[fleet.BindingKind("")]).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f := &firstStatuses{seen: map[string]firstStatus{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			b := &fleet.Binding{}
			if fromUnstructured(u, b) != nil {
				continue
			}
			rs := meta.FindStatusCondition(b.Status.Conditions, fleet.ResourceBindingRolloutStarted)
			if rs == nil || rs.ObservedGeneration != b.Generation {
				continue
			}
			key := fmt.Sprintf("%s@%d", b.Name, b.Generation)
			f.mu.Lock()
			if _, ok := f.seen[key]; !ok {
				f.seen[key] = firstStatus{generation: b.Generation, conds: b.Status.Conditions}
			}
			f.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		w.Stop()
		<-done
	})
	return f
}

// TestTheRolloutStartCarriesInProgressOnlyWhenDeliveryWouldWriteIt: the
// status write that starts a binding's rollout carries delivery's
// in-progress report only when delivery would write exactly that report
// right after (a member that pulls, Works that can be made and change);
// delivery's own report then writes nothing. A member gitfleet pushes to,
// Works the binding's new generation leaves as they are, a snapshot that
// is missing, and a binding reported on at its generation already keep
// the write as the run made it.
func TestTheRolloutStartCarriesInProgressOnlyWhenDeliveryWouldWriteIt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	th := startHub(t)
	ctx := await.Context(t)
	writes := newObjectWrites()
	rc := rest.CopyConfig(th.rest)
	rc.WrapTransport = writes.wrap
	h := th.newHub(t, Config{Rest: rc, Resources: selectWorkload, Deliver: true})
	for name, driver := range map[string]string{"pulled": fleet.DriverWork, "pushed": fleet.DriverSimulated} {
		th.apply(t, h, &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{fleet.DriverAnnotation: driver}}})
	}
	stored := th.appPlacement(t, h)
	snap, _, err := resourcesnapshot.Ensure(ctx, h, stored, []*unstructured.Unstructured{workload}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	bind := func(name, cluster, snapshot string) *fleet.Binding {
		t.Helper()
		b := &fleet.Binding{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{fleet.PlacementTrackingLabel: stored.Name}},
			Spec: fleet.ResourceBindingSpec{State: fleet.BindingStateBound, TargetCluster: cluster, ResourceSnapshotName: snapshot,
				SchedulingPolicySnapshotName: stored.Name + "-0"}}
		if err := h.CreateBinding(ctx, b); err != nil {
			t.Fatal(err)
		}
		got, err := h.GetBinding(ctx, hub.Key{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	// start writes b's status as the run does when it starts b's rollout
	// and returns the conditions the write carried, as "Type=Status
	// Reason" at b's generation.
	start := func(b *fleet.Binding, extra ...metav1.Condition) []string {
		t.Helper()
		meta.RemoveStatusCondition(&b.Status.Conditions, fleet.ResourceBindingRolloutStarted)
		b.Status.Conditions = append(b.Status.Conditions, metav1.Condition{Type: fleet.ResourceBindingRolloutStarted,
			Status: metav1.ConditionTrue, Reason: fleet.RolloutStartedReason, ObservedGeneration: b.Generation,
			LastTransitionTime: metav1.Now()})
		b.Status.Conditions = append(b.Status.Conditions, extra...)
		if err := h.UpdateBindingStatus(ctx, b); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range b.Status.Conditions {
			if c.ObservedGeneration == b.Generation {
				out = append(out, fmt.Sprintf("%s=%s %s", c.Type, c.Status, c.Reason))
			}
		}
		sort.Strings(out)
		return out
	}
	rolloutOnly := []string{"RolloutStarted=True RolloutStarted"}
	folded := []string{"Applied=False ApplyInProgress", "Overridden=True NoOverrideSpecified", "RolloutStarted=True RolloutStarted",
		"WorkSynchronized=True AllWorkSynced"}
	check := func(what string, got, want []string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: the rollout's start wrote %q, want %q", what, got, want)
		}
	}

	pulled := bind("app-pulled", "pulled", snap.Name)
	check("a member that pulls, its Works to be made", start(pulled), folded)
	if err := h.Commit(ctx); err != nil { // delivery writes the Works
		t.Fatal(err)
	}
	if works, err := h.ListWorks(ctx, "pulled", hub.Key{Name: pulled.Name}); err != nil || len(works) != 1 {
		t.Fatalf("the pulled member's Works: %v, %v; want one", works, err)
	}
	if n := writes.count("PUT", "clusterresourcebindings", "status", pulled.Name); n != 1 {
		t.Errorf("%d status writes of the pulled member's binding, want 1: delivery's report after the Works were written changes nothing", n)
	}

	// A new generation whose Works stay as they are.
	pulled, err = h.GetBinding(ctx, hub.Key{Name: pulled.Name})
	if err != nil {
		t.Fatal(err)
	}
	pulled.Spec.SchedulingPolicySnapshotName = stored.Name + "-1"
	if err := h.UpdateBinding(ctx, pulled); err != nil {
		t.Fatal(err)
	}
	if pulled, err = h.GetBinding(ctx, hub.Key{Name: pulled.Name}); err != nil {
		t.Fatal(err)
	}
	check("Works the new generation leaves as they are", start(pulled), rolloutOnly)

	check("a member gitfleet pushes to", start(bind("app-pushed", "pushed", snap.Name)), rolloutOnly)
	check("a snapshot that is missing", start(bind("app-missing", "pulled", "app-9-snapshot")), rolloutOnly)
	reported := bind("app-reported", "pulled", snap.Name)
	check("a binding reported on at its generation", start(reported, metav1.Condition{Type: fleet.ResourceBindingApplied,
		Status: metav1.ConditionTrue, Reason: "AllWorkHaveBeenApplied", ObservedGeneration: reported.Generation, LastTransitionTime: metav1.Now()}),
		[]string{"Applied=True AllWorkHaveBeenApplied", "RolloutStarted=True RolloutStarted"})
}
