package agent

import (
	"log/slog"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/internal/testing/kubetest"
	"github.com/gitfleet/gitfleet/reconciler/membercluster"
)

// TestAReportTheCacheHasNotSeenIsNotWrittenAgain: the agent reports on a
// Work from its cache's copy, which may not show the agent's own last
// status write yet (a pass that the agent's finalizer write starts reads
// the Work without it). The same status reported again on that stale copy
// is not written twice (each write is one of the hub API server's, on
// which a large pulled fleet waits); a status that changed is, keeping
// the transition times of the conditions that did not change; and a Work
// made again under the same name (another UID) is reported on afresh.
func TestAReportTheCacheHasNotSeenIsNotWrittenAgain(t *testing.T) {
	hubCluster := kubetest.Start(t, "hub")[0]
	hubCluster.InstallCRDs(filepath.Join("..", "..", "config", "crd"))
	ctx := await.Context(t)
	var writes atomic.Int32
	rc := hubCluster.AdminConfig()
	rc.WrapTransport = func(next http.RoundTripper) http.RoundTripper {
		return roundTrip(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodPatch {
				writes.Add(1)
			}
			return next.RoundTrip(r)
		})
	}
	ns := membercluster.Namespace("m1")
	dyn := dynamic.NewForConfigOrDie(hubCluster.AdminConfig())
	if _, err := dyn.Resource(nsGVR).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	create := func() *fleet.Work {
		t.Helper()
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": fleet.SchemeGroupVersion.String(), "kind": fleet.KindWork,
			"metadata": map[string]any{"name": "app-work", "namespace": ns}, "spec": map[string]any{"workload": map[string]any{}}}}
		created, err := dyn.Resource(works).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w := &fleet.Work{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(created.Object, w); err != nil {
			t.Fatal(err)
		}
		return w
	}
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a, err := New(Config{Hub: rc, MemberName: "m1", Clock: clk, Log: slog.New(slog.DiscardHandler)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	status := func(available metav1.ConditionStatus) fleet.WorkStatus {
		return fleet.WorkStatus{Conditions: []metav1.Condition{
			{Type: fleet.WorkConditionTypeApplied, Status: metav1.ConditionTrue, Reason: "AllManifestsApplied", ObservedGeneration: 1},
			{Type: fleet.WorkConditionTypeAvailable, Status: available, Reason: "Reported", ObservedGeneration: 1}}}
	}
	stale := create() // the cache's copy: no status
	report := func(w *fleet.Work, st fleet.WorkStatus, want int32, what string) {
		t.Helper()
		before := writes.Load()
		if err := a.report(ctx, w, st); err != nil {
			t.Fatal(err)
		}
		if got := writes.Load() - before; got != want {
			t.Errorf("%s: %d status writes, want %d", what, got, want)
		}
	}
	onHub := func() []metav1.Condition {
		t.Helper()
		got, err := dyn.Resource(works).Namespace(ns).Get(ctx, "app-work", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w := &fleet.Work{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(got.Object, w); err != nil {
			t.Fatal(err)
		}
		return w.Status.Conditions
	}
	report(stale, status(metav1.ConditionFalse), 1, "the first report")
	written := onHub()[0].LastTransitionTime
	report(stale, status(metav1.ConditionFalse), 0, "the same report on the stale copy")
	clk.Advance(2 * time.Second)
	report(stale, status(metav1.ConditionTrue), 1, "a changed report on the stale copy")
	if c := onHub(); len(c) != 2 || !c[0].LastTransitionTime.Equal(&written) || c[1].Status != metav1.ConditionTrue ||
		c[1].LastTransitionTime.Equal(&written) {
		t.Errorf("the Work's conditions on the hub %+v: want Applied still transitioned at %s, Available True since", c, written)
	}

	if err := dyn.Resource(works).Namespace(ns).Delete(ctx, "app-work", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	report(create(), status(metav1.ConditionTrue), 1, "the report on a Work made again")
}

var nsGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
