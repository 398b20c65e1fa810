package kube

import (
	"sort"
	"testing"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/hubtest"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
	"github.com/gitfleet/gitfleet/render"
)

// TestAPulledMemberGetsWorksAndItsAgentsReportsReachTheBinding: a member
// annotated gitfleet.io/driver: work is never reached by gitfleet; its
// Works appear in fleet-member-<cluster> on the hub's API server, named as
// KubeFleet names them, and what an agent writes into their status
// becomes the binding's conditions and failed placements. Deleting the
// binding deletes its Works, and the binding stays until the agent lets
// them go.
func TestAPulledMemberGetsWorksAndItsAgentsReportsReachTheBinding(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	content, err := render.Render(fstest.MapFS{"app.yaml": {Data: []byte(`apiVersion: v1
kind: Namespace
metadata: {name: app}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: app}
data: {level: info}
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
`)}}, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	th := startHub(t)
	ctx := await.Context(t)
	h := th.newHub(t, Config{Select: render.Select, Deliver: true})
	h.SetResources(content.Resources)
	th.apply(t, h, &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "member1",
		Annotations: map[string]string{fleet.DriverAnnotation: fleet.DriverWork}}})
	p := &fleet.Placement{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Spec: fleet.PlacementSpec{
		ResourceSelectors: []fleet.ResourceSelectorTerm{{Version: "v1", Kind: "Namespace", Name: "app"}},
		Policy:            &fleet.PlacementPolicy{PlacementType: fleet.PickAllPlacementType},
		Strategy:          fleet.RolloutStrategy{Type: fleet.ExternalRolloutStrategyType}}}
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
	key := hub.Key{Name: "app-member1"}
	if err := h.CreateBinding(ctx, &fleet.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: key.Name, Labels: map[string]string{fleet.PlacementTrackingLabel: p.Name}},
		Spec: fleet.ResourceBindingSpec{State: fleet.BindingStateBound, TargetCluster: "member1",
			ResourceSnapshotName: snap.Name, SchedulingPolicySnapshotName: p.Name + "-0"},
		Status: fleet.ResourceBindingStatus{Conditions: []metav1.Condition{hubtest.RolloutStarted(1)}},
	}); err != nil {
		t.Fatal(err)
	}
	if err := h.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	works := th.client.Resource(worksGVR).Namespace("fleet-member-member1")
	list, err := works.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, w := range list.Items {
		names = append(names, w.GetName())
	}
	sort.Strings(names)
	if len(names) != 2 || names[0] != "app-work" || names[1][:len("app-work-envelope-")] != "app-work-envelope-" {
		t.Fatalf("works in fleet-member-member1: %v, want app-work and app-work-envelope-<digest>", names)
	}
	condOf := func(t string) *metav1.Condition {
		b, err := h.GetBinding(ctx, key)
		if err != nil {
			return nil
		}
		return meta.FindStatusCondition(b.Status.Conditions, t)
	}
	if c := condOf(fleet.ResourceBindingApplied); c == nil || c.Reason != fleet.ApplyInProgressReason {
		t.Fatalf("Applied right after the works were written = %+v, want %s", c, fleet.ApplyInProgressReason)
	}

	// The agent reports: the plain work applied and available, the
	// envelope's quota refused.
	report := func(name string, applied metav1.ConditionStatus, manifests ...map[string]any) {
		t.Helper()
		w, err := works.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		gen := w.GetGeneration()
		conds := []any{
			map[string]any{"type": "Applied", "status": string(applied), "reason": "Reported", "message": "", "observedGeneration": gen, "lastTransitionTime": "2026-01-01T00:00:00Z"},
			map[string]any{"type": "Available", "status": string(applied), "reason": "Reported", "message": "", "observedGeneration": gen, "lastTransitionTime": "2026-01-01T00:00:00Z"},
		}
		var mcs []any
		for _, m := range manifests {
			mcs = append(mcs, m)
		}
		w.Object["status"] = map[string]any{"conditions": conds, "manifestConditions": mcs}
		if _, err := works.UpdateStatus(ctx, w, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	report(names[0], metav1.ConditionTrue)
	report(names[1], metav1.ConditionFalse, map[string]any{
		"identifier": map[string]any{"ordinal": int64(0), "version": "v1", "kind": "ResourceQuota", "namespace": "app", "name": "quota"},
		"conditions": []any{map[string]any{"type": "Applied", "status": "False", "reason": "ManifestApplyFailed", "message": "quota refused",
			"observedGeneration": int64(1), "lastTransitionTime": "2026-01-01T00:00:00Z"}},
	})
	await.Until(t, "the binding to say the envelope's work failed to apply", func() bool {
		c := condOf(fleet.ResourceBindingApplied)
		return c != nil && c.Message == "Work object "+names[1]+" has failed to apply"
	})
	b, err := h.GetBinding(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if f := b.Status.FailedPlacements; len(f) != 1 || f[0].Name != "quota" || f[0].Envelope == nil || f[0].Envelope.Name != "quota" ||
		f[0].Condition.Reason != "ManifestApplyFailed" {
		t.Fatalf("failedPlacements = %+v, want the quota of envelope quota", f)
	}
	report(names[1], metav1.ConditionTrue)
	await.Until(t, "the binding to be available", func() bool {
		c := condOf(fleet.ResourceBindingAvailable)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == "AllWorkAreAvailable"
	})

	// The agent holds a work with its finalizer: the binding stays
	// terminating until the agent lets go.
	held, err := works.Get(ctx, names[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	held.SetFinalizers([]string{"kubernetes-fleet.io/work-cleanup"})
	if _, err := works.Update(ctx, held, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := h.DeleteBinding(ctx, key); err != nil {
		t.Fatal(err)
	}
	if err := h.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.GetBinding(ctx, key); err != nil {
		t.Fatalf("the binding went while the agent held a work: %v", err)
	}
	held, err = works.Get(ctx, names[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	held.SetFinalizers(nil)
	if _, err := works.Update(ctx, held, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	await.Until(t, "the binding and its works to be gone", func() bool {
		_, err := h.GetBinding(ctx, key)
		left, lerr := works.List(ctx, metav1.ListOptions{})
		return hub.IsNotFound(err) && lerr == nil && len(left.Items) == 0
	})
}
