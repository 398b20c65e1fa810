package kube

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/restlimits"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/internal/testing/kubetest"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/hubtest"
)

// testHub is a real kube-apiserver with gitfleet's CRDs installed, and an
// admin client that plays the people and agents around the hub.
type testHub struct {
	cluster *kubetest.Cluster
	rest    *rest.Config
	client  dynamic.Interface
}

// startHub starts a kube-apiserver (skipped without the test binaries),
// installs config/crd as `kubectl apply --server-side -R -f config/crd/`
// does, waits until every kind is served and creates hubtest.Namespace.
func startHub(t testing.TB) *testHub {
	t.Helper()
	c := kubetest.Start(t, "hub")[0]
	rc := &rest.Config{Host: c.Server, BearerToken: c.AdminToken, TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS: restlimits.QPS, Burst: restlimits.Burst}
	th := &testHub{cluster: c, rest: rc, client: dynamic.NewForConfigOrDie(rc)}
	ctx := await.Context(t)
	c.InstallCRDs(filepath.Join("..", "..", "..", "config", "crd"))
	await.Until(t, "the fleet CRDs to be served", func() bool { return checkServed(rc) == nil })
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(hubtest.Namespace)
	if _, err := th.client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).
		Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return th
}

// newHub returns a kube hub on th (through cfg.Rest when set) whose
// informers stop with t.
func (th *testHub) newHub(t testing.TB, cfg Config) *Hub {
	t.Helper()
	ctx, cancel := context.WithCancel(await.Context(t))
	t.Cleanup(cancel)
	if cfg.Rest == nil {
		cfg.Rest = th.rest
	}
	h, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// reset deletes every fleet object, finalizers and all, so each test
// starts on an empty hub without paying for a new API server.
func (th *testHub) reset(t testing.TB) {
	t.Helper()
	ctx := await.Context(t)
	for _, gvr := range resources {
		list, err := th.client.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range list.Items {
			r := th.resource(gvr, u.GetNamespace())
			if len(u.GetFinalizers()) > 0 {
				if _, err := r.Patch(ctx, u.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`),
					metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
					t.Fatal(err)
				}
			}
			if err := r.Delete(ctx, u.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
		}
	}
	await.Until(t, "the hub to be empty", func() bool {
		for _, gvr := range resources {
			list, err := th.client.Resource(gvr).List(ctx, metav1.ListOptions{})
			if err != nil || len(list.Items) > 0 {
				return false
			}
		}
		return true
	})
}

func (th *testHub) resource(gvr schema.GroupVersionResource, namespace string) dynamic.ResourceInterface {
	if namespace == "" {
		return th.client.Resource(gvr)
	}
	return th.client.Resource(gvr).Namespace(namespace)
}

// kindOf is the kind of a person's object.
func kindOf(t testing.TB, obj hubtest.Object) string {
	switch o := obj.(type) {
	case *fleet.Placement:
		return fleet.PlacementKind(o.Namespace)
	case *fleet.MemberCluster:
		return fleet.KindMemberCluster
	case *fleet.UpdateStrategy:
		return fleet.UpdateStrategyKind(o.Namespace)
	case *fleet.UpdateRun:
		return fleet.UpdateRunKind(o.Namespace)
	case *fleet.ClusterResourcePlacementEviction:
		return fleet.KindClusterResourcePlacementEviction
	case *fleet.ClusterResourcePlacementDisruptionBudget:
		return fleet.KindClusterResourcePlacementDisruptionBudget
	}
	t.Fatalf("no person writes a %T", obj)
	return ""
}

// apply plays `kubectl apply --server-side` of a person's object (what
// `serve --hub kube` will do with the objects of the tracked branch), and
// returns once h shows it.
func (th *testHub) apply(t testing.TB, h *Hub, obj hubtest.Object) {
	t.Helper()
	if w, ok := obj.(*fleet.RolloutWindow); ok {
		// No CRD: the hub keeps what the Git loop applies (windows.go).
		if err := h.Apply(await.Context(t), w.DeepCopy()); err != nil {
			t.Fatal(err)
		}
		return
	}
	kind := kindOf(t, obj)
	u, err := toUnstructured(kind, obj)
	if err != nil {
		t.Fatal(err)
	}
	delete(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	data, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	// The person comes after the engine's status writes handed over so far
	// (runstatus.go), as after a synchronous write; one racing them makes
	// the engine's write a Conflict and its run pass again.
	if err := h.settle(await.Context(t), kind, keyOf(u)); err != nil {
		t.Fatal(err)
	}
	force := true
	written, err := th.resource(resources[kind], u.GetNamespace()).Patch(await.Context(t), u.GetName(), types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: "person", Force: &force})
	if err != nil {
		t.Fatalf("applying %s %s: %v", kind, u.GetName(), err)
	}
	if err := h.informers[kind].caughtUp(await.Context(t), written); err != nil {
		t.Fatal(err)
	}
}

// appPlacement applies the placement "app", picking every member for the
// ConfigMap app with runs rolling it out, and returns it as the hub
// stores it.
func (th *testHub) appPlacement(t testing.TB, h *Hub) *fleet.Placement {
	t.Helper()
	p := &fleet.Placement{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Spec: fleet.PlacementSpec{
		ResourceSelectors: []fleet.ResourceSelectorTerm{{Version: "v1", Kind: "ConfigMap", Name: "app"}},
		Policy:            &fleet.PlacementPolicy{PlacementType: fleet.PickAllPlacementType},
		Strategy:          fleet.RolloutStrategy{Type: fleet.ExternalRolloutStrategyType}}}
	fleet.SetDefaultsPlacement(p)
	th.apply(t, h, p)
	stored, err := h.GetPlacement(await.Context(t), hub.Key{Name: p.Name})
	if err != nil {
		t.Fatal(err)
	}
	return stored
}

// deleteRun plays `kubectl delete` of a run, and returns once h shows it.
func (th *testHub) deleteRun(t testing.TB, h *Hub, key hub.Key) {
	t.Helper()
	kind := fleet.UpdateRunKind(key.Namespace)
	if err := h.settle(await.Context(t), kind, key); err != nil {
		t.Fatal(err)
	}
	if err := th.resource(resources[kind], key.Namespace).Delete(await.Context(t), key.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := h.informers[kind].gone(await.Context(t), key); err != nil {
		t.Fatal(err)
	}
}

// TestConformance runs the hub conformance suite on a real kube-apiserver.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	th := startHub(t)
	hubtest.Run(t, func(t *testing.T) hubtest.Subject {
		th.reset(t)
		h := th.newHub(t, Config{})
		return hubtest.Subject{Hub: h,
			Apply:     func(t testing.TB, obj hubtest.Object) { th.apply(t, h, obj) },
			DeleteRun: func(t testing.TB, key hub.Key) { th.deleteRun(t, h, key) },
			// A second hub on the same API server, one that delivers.
			Delivering: func(t testing.TB) hubtest.Subject {
				d := th.newHub(t, Config{Deliver: true})
				return hubtest.Subject{Hub: d,
					Apply:     func(t testing.TB, obj hubtest.Object) { th.apply(t, d, obj) },
					DeleteRun: func(t testing.TB, key hub.Key) { th.deleteRun(t, d, key) }}
			}}
	})
}

func TestMain(m *testing.M) {
	// The scheduler logs to the default logger; keep test output readable.
	slog.SetDefault(slog.New(slog.DiscardHandler))
	os.Exit(m.Run())
}
