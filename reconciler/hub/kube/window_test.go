package kube

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// A freeze holds a run's stage on a real API server, as on the embedded
// hub; the override merged in Git (the freeze's allowedRuns naming the run,
// which the Git loop applies) wakes the run at once — its requeue is at the
// freeze's end, a day away — and the stage records the freeze it crossed.
func TestFreezeHoldsARunOnKubeHubUntilItAllowsIt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	th := startHub(t)
	h := th.newHub(t, Config{Resources: selectWorkload})
	ctx := await.Context(t)
	now := time.Now().UTC()
	freeze := func(allowed ...string) {
		t.Helper()
		if err := h.Apply(ctx, &fleet.RolloutWindow{ObjectMeta: metav1.ObjectMeta{Name: "prod"}, Spec: fleet.RolloutWindowSpec{
			Freezes: []fleet.Freeze{{Name: "incident", Start: now.AddDate(0, 0, -1).Format("2006-01-02"),
				End: now.AddDate(0, 0, 1).Format("2006-01-02"), AllowedRuns: allowed}}}}); err != nil {
			t.Fatal(err)
		}
	}
	freeze()
	strategy := &fleet.UpdateStrategy{ObjectMeta: metav1.ObjectMeta{Name: "frozen"}, Spec: fleet.UpdateStrategySpec{
		Stages: []fleet.StageConfig{{Name: "prod", LabelSelector: &metav1.LabelSelector{}, Windows: []string{"prod"}}}}}
	f := newEngineFleet(t, th, h, map[string]map[string]string{"member1": {}, "member2": {}}, strategy)
	simulateMembers(t, th.rest, nil)
	f.start(t)

	run := hub.Key{Name: "hotfix"}
	th.apply(t, h, &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: run.Name}, Spec: fleet.UpdateRunSpec{
		PlacementName: "app", StagedUpdateStrategyName: strategy.Name, State: fleet.StateRun}})
	await.Until(t, "the stage to wait for the freeze", func() bool {
		r, err := h.GetUpdateRun(ctx, run)
		if err != nil || len(r.Status.StagesStatus) == 0 {
			return false
		}
		c := meta.FindStatusCondition(r.Status.StagesStatus[0].Conditions, fleet.StageUpdatingConditionProgressing)
		return c != nil && strings.HasPrefix(c.Message, "waiting for window prod/incident (opens ")
	})
	r, err := h.GetUpdateRun(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Status.StagesStatus[0].Clusters {
		if meta.IsStatusConditionTrue(c.Conditions, fleet.ClusterUpdatingConditionStarted) {
			t.Fatalf("cluster %s started in the freeze", c.ClusterName)
		}
	}

	freeze("hotfix")
	awaitSucceeded(t, h, run)
	r, err = h.GetUpdateRun(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Status.StagesStatus[0].OverriddenFreezes; !slices.Equal(got, []string{"prod/incident"}) {
		t.Errorf("overriddenFreezes %v, want [prod/incident]", got)
	}
}

// RolloutWindows live on the API server (config/crd): kubectl reads the one
// the Git loop applied, a restarted hub holds it before the loop applies
// anything, and one a person creates with kubectl is an event that wakes
// the runs.
func TestRolloutWindowsAreStoredOnTheAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	th := startHub(t)
	ctx := await.Context(t)
	h := th.newHub(t, Config{})
	if err := h.Apply(ctx, &fleet.RolloutWindow{ObjectMeta: metav1.ObjectMeta{Name: "prod"},
		Spec: fleet.RolloutWindowSpec{TimeZone: "Europe/Berlin", Windows: []fleet.WeeklyWindow{{Start: "09:00", End: "17:00"}}}}); err != nil {
		t.Fatal(err)
	}
	gvr := fleet.GitfleetGroupVersion.WithResource("rolloutwindows")
	u, err := th.client.Resource(gvr).Get(ctx, "prod", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the API server does not hold the applied window: %v", err)
	}
	if tz, _, _ := unstructured.NestedString(u.Object, "spec", "timeZone"); tz != "Europe/Berlin" {
		t.Errorf("the API server holds timeZone %q; want Europe/Berlin", tz)
	}

	restarted := th.newHub(t, Config{})
	ws, err := restarted.ListRolloutWindows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 1 || ws[0].Name != "prod" || ws[0].Spec.Windows[0].End != "17:00" {
		t.Fatalf("a restarted hub holds %v; want prod", ws)
	}

	var mu sync.Mutex
	woken := false
	restarted.Subscribe(func(e hub.Event) {
		if e.Kind == hub.EventRolloutWindow && e.Key == (hub.Key{Name: "night"}) {
			mu.Lock()
			woken = true
			mu.Unlock()
		}
	})
	night := &unstructured.Unstructured{Object: map[string]any{"apiVersion": fleet.GitfleetGroupVersion.String(), "kind": fleet.KindRolloutWindow,
		"metadata": map[string]any{"name": "night"}, "spec": map[string]any{"windows": []any{map[string]any{"start": "22:00", "end": "06:00"}}}}}
	if _, err := th.client.Resource(gvr).Create(ctx, night, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	await.Until(t, "the window created with kubectl to be an event", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return woken
	})
	if ws, _ := restarted.ListRolloutWindows(ctx); len(ws) != 2 || ws[0].Name != "night" {
		t.Errorf("the hub holds %v; want night and prod", ws)
	}

	// Without the CRD a hub refuses to start, naming it and the fix,
	// rather than waiting for an informer that can never list.
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if err := th.client.Resource(crds).Delete(ctx, "rolloutwindows.gitfleet.io", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	await.Until(t, "the API server to stop serving rolloutwindows", func() bool { return checkServed(th.rest) != nil })
	_, err = New(ctx, Config{Rest: th.rest})
	if want := "the hub does not serve [rolloutwindows.gitfleet.io]; install gitfleet's CRDs: kubectl apply --server-side -R -f config/crd/"; err == nil || err.Error() != want {
		t.Errorf("a hub without the RolloutWindow CRD started with %v; want it refused: %s", err, want)
	}
}
