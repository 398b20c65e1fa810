package kube

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"testing/fstest"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/hubtest"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
	"github.com/gitfleet/gitfleet/render"
)

// TestTheKubeHubHoldsTheEnvelopeAndTheMemberItsManifests renders KubeFleet's
// webhook envelope (examples/envelopes/clusterscoped.yaml) and a quota
// envelope from Git, as serve does: the hub's API server stores the
// envelopes in the placement's resource snapshot, never the webhook
// configuration or the quota (which would act on the hub), and a
// simulated member bound to the snapshot receives what they wrap.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestTheKubeHubHoldsTheEnvelopeAndTheMemberItsManifests(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	example, err := os.ReadFile(filepath.Join("..", "..", "..", "internal", "crd", "testdata", "accepted", "clusterresourceenvelope-clusterscoped.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	content, err := render.Render(fstest.MapFS{
		"webhook.yaml": {Data: example},
		"quota.yaml": {Data: []byte(`apiVersion: v1
kind: Namespace
metadata: {name: app}
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ResourceEnvelope
metadata: {name: quota, namespace: app}
data:
  quota.yaml:
    apiVersion: v1
    kind: ResourceQuota
    metadata: {name: quota, namespace: app}
    spec:
      hard: {pods: "10"}
`)},
	}, render.Options{})
	if err != nil {
		t.Fatal(err)
	}

	th := startHub(t)
	ctx := await.Context(t)
	h := th.newHub(t, Config{Select: render.Select, Deliver: true})
	h.SetResources(content.Resources)
	th.apply(t, h, &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "member1",
		Annotations: map[string]string{fleet.DriverAnnotation: fleet.DriverSimulated}}})
	p := &fleet.Placement{ObjectMeta: metav1.ObjectMeta{Name: "envelopes"}, Spec: fleet.PlacementSpec{
		ResourceSelectors: []fleet.ResourceSelectorTerm{
			{Group: fleet.PlacementGroup, Version: fleet.Version, Kind: fleet.KindClusterResourceEnvelope, Name: "example"},
			{Version: "v1", Kind: "Namespace", Name: "app"},
		},
		Policy:   &fleet.PlacementPolicy{PlacementType: fleet.PickAllPlacementType},
		Strategy: fleet.RolloutStrategy{Type: fleet.ExternalRolloutStrategyType}}}
	fleet.SetDefaultsPlacement(p)
	th.apply(t, h, p)
	if _, err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	stored, err := h.GetPlacement(ctx, hub.Key{Name: p.Name})
	if err != nil {
		t.Fatal(err)
	}
	selected, err := h.SelectResources(ctx, stored)
	if err != nil {
		t.Fatal(err)
	}
	snap, _, err := resourcesnapshot.Ensure(ctx, h, stored, selected, "")
	if err != nil {
		t.Fatal(err)
	}

	// The hub's API server holds the envelopes, inside the snapshot.
	u, err := th.client.Resource(resources[fleet.KindClusterResourceSnapshot]).Get(ctx, snap.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	items, _, _ := unstructured.NestedSlice(u.Object, "spec", "selectedResources")
	var kinds []string
	for _, it := range items {
		kinds = append(kinds, it.(map[string]any)["kind"].(string))
	}
	sort.Strings(kinds)
	if want := []string{"ClusterResourceEnvelope", "Namespace", "ResourceEnvelope"}; !slices.Equal(kinds, want) {
		t.Errorf("the hub's snapshot holds %v, want %v", kinds, want)
	}
	if got := u.GetAnnotations()[fleet.NumberOfEnvelopedObjectsAnnotation]; got != "2" {
		t.Errorf("%s = %q, want 2", fleet.NumberOfEnvelopedObjectsAnnotation, got)
	}
	for _, gvr := range []schema.GroupVersionResource{
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	} {
		if _, err := th.client.Resource(gvr).Get(ctx, map[string]string{"validatingwebhookconfigurations": "guard", "clusterroles": "pod-reader"}[gvr.Resource], metav1.GetOptions{}); err == nil {
			t.Errorf("the hub holds the wrapped %s", gvr.Resource)
		}
	}

	// KubeFleet's example is an object of its own on the hub too (kubectl
	// apply): the CRD keeps every wrapped manifest, unpruned, and holding
	// it puts no webhook configuration on the hub.
	cre := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(example, &cre.Object); err != nil {
		t.Fatal(err)
	}
	creGVR := schema.GroupVersionResource{Group: fleet.PlacementGroup, Version: fleet.Version, Resource: "clusterresourceenvelopes"}
	if _, err := th.client.Resource(creGVR).Create(ctx, cre, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	held, err := th.client.Resource(creGVR).Get(ctx, "example", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := jsonOf(t, held.Object["data"]), jsonOf(t, cre.Object["data"]); got != want {
		t.Errorf("the hub stored the envelope's data as\n%s\nwant\n%s", got, want)
	}
	if _, err := th.client.Resource(schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1",
		Resource: "validatingwebhookconfigurations"}).Get(ctx, "guard", metav1.GetOptions{}); err == nil {
		t.Error("the hub holds the webhook configuration its envelope wraps")
	}

	// Bound, member1 receives what the envelopes wrap.
	if err := h.CreateBinding(ctx, &fleet.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: "envelopes-member1", Labels: map[string]string{fleet.PlacementTrackingLabel: p.Name}},
		Spec: fleet.ResourceBindingSpec{State: fleet.BindingStateBound, TargetCluster: "member1",
			ResourceSnapshotName: snap.Name, SchedulingPolicySnapshotName: p.Name + "-0"},
		Status: fleet.ResourceBindingStatus{Conditions: []metav1.Condition{hubtest.RolloutStarted(1)}},
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{"ClusterRole pod-reader", "Namespace app", "ResourceQuota app/quota", "ValidatingWebhookConfiguration guard"}
	var got []string
	await.Until(t, "member1 to hold what the envelopes wrap", func() bool {
		if err := h.Commit(ctx); err != nil {
			t.Logf("commit: %v", err)
		}
		sim, ok := h.Members().Simulated("member1")
		if !ok {
			return false
		}
		got = nil
		for _, pl := range sim.Placed() {
			for _, r := range pl.Resources {
				got = append(got, r.GetKind()+" "+fleet.EnvelopeRef(r.GetNamespace(), r.GetName()))
			}
		}
		sort.Strings(got)
		return slices.Equal(got, want)
	})
}
