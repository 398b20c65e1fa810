package kube

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/reconciler/placement"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
)

// sizedConfigMap is a config map of about size bytes.
func sizedConfigMap(name string, size int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"data":     map[string]any{"blob": strings.Repeat("x", size)}}}
}

// snapshotShape is what a snapshot group looks like to a reader: each
// snapshot's name, labels, annotations and the names of its resources.
func snapshotShape(t *testing.T, snaps []*fleet.ResourceSnapshot) []string {
	t.Helper()
	var out []string
	for _, s := range snaps {
		var names []string
		for _, raw := range s.Spec.SelectedResources {
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(raw.Raw); err != nil {
				t.Fatalf("snapshot %s: %v", s.Name, err)
			}
			names = append(names, u.GetName())
		}
		out = append(out, fmt.Sprintf("%s labels=%v annotations=%v resources=%v", s.Name, s.Labels, s.Annotations, names))
	}
	slices.Sort(out)
	return out
}

func bigPlacement(name string) *fleet.Placement {
	p := &fleet.Placement{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: fleet.PlacementSpec{
		ResourceSelectors: []fleet.ResourceSelectorTerm{{Version: "v1", Kind: "ConfigMap"}},
		Policy:            &fleet.PlacementPolicy{PlacementType: fleet.PickAllPlacementType},
		Strategy:          fleet.RolloutStrategy{Type: fleet.ExternalRolloutStrategyType}}}
	fleet.SetDefaultsPlacement(p)
	return p
}

// TestLargeSelectionsAreSplitIntoSubSnapshots: a selection past the
// object size limit is stored as KubeFleet stores it, a master
// ({placement}-{index}-snapshot, with the group's hash and
// number-of-resource-snapshots) and sub-snapshots ({placement}-{index}-{subindex},
// with subindex-of-resource-snapshot), on the API server exactly as in the
// embedded hub; and a placement's status lists the resources of the whole
// group.
func TestLargeSelectionsAreSplitIntoSubSnapshots(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	th := startHub(t)
	ctx := await.Context(t)

	// Four config maps of 500 KB: 2 MB, past etcd's 1.5 MiB request limit.
	var selection []*unstructured.Unstructured
	for i := range 4 {
		selection = append(selection, sizedConfigMap(fmt.Sprintf("big-%d", i), 500*1024))
	}
	whole := &fleet.ResourceSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "whole-0-snapshot",
		Labels: map[string]string{fleet.PlacementTrackingLabel: "whole", fleet.ResourceIndexLabel: "0"}}}
	for _, r := range selection {
		raw, err := json.Marshal(r.Object)
		if err != nil {
			t.Fatal(err)
		}
		whole.Spec.SelectedResources = append(whole.Spec.SelectedResources, runtime.RawExtension{Raw: raw})
	}
	h := th.newHub(t, Config{})
	if err := h.CreateResourceSnapshot(ctx, whole); err == nil {
		t.Fatal("the API server stored the 2 MB selection as one object; the test shows nothing")
	} else {
		t.Logf("one object refused as expected: %v", err)
	}

	p := bigPlacement("big")
	th.apply(t, h, p)
	stored, err := h.GetPlacement(ctx, hub.Key{Name: p.Name})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := resourcesnapshot.Ensure(ctx, h, stored, selection, "c1"); err != nil {
		t.Fatalf("snapshotting 2 MB on the kube hub: %v", err)
	}
	onKube, err := h.ListResourceSnapshots(ctx, hub.Key{Name: p.Name})
	if err != nil {
		t.Fatal(err)
	}
	e := embedded.New(clock.Real{}, nil)
	e.ApplyPlacement(p.DeepCopy())
	if _, _, err := resourcesnapshot.Ensure(ctx, e, p, selection, "c1"); err != nil {
		t.Fatal(err)
	}
	inMemory, err := e.ListResourceSnapshots(ctx, hub.Key{Name: p.Name})
	if err != nil {
		t.Fatal(err)
	}
	kubeShape, memShape := snapshotShape(t, onKube), snapshotShape(t, inMemory)
	if len(kubeShape) != 4 {
		t.Errorf("2 MB in 500 KB resources made %d snapshots; want a master and 3 sub-snapshots:\n%s", len(kubeShape), strings.Join(kubeShape, "\n"))
	}
	if !slices.Equal(kubeShape, memShape) {
		t.Errorf("the kube hub's snapshot group\n%s\ndiffers from the embedded hub's\n%s", strings.Join(kubeShape, "\n"), strings.Join(memShape, "\n"))
	}
	var master *fleet.ResourceSnapshot
	for _, s := range onKube {
		if s.Name == "big-0-snapshot" {
			master = s
		}
	}
	if master == nil || master.Annotations[fleet.NumberOfResourceSnapshotsAnnotation] != "4" ||
		master.Labels[fleet.IsLatestSnapshotLabel] != "true" || master.Annotations[fleet.ResourceGroupHashAnnotation] == "" {
		t.Errorf("master %+v; want big-0-snapshot, latest, with the group's hash and 4 snapshots", master)
	}

	// A hub with a lower limit splits finer; the status still lists all.
	small := th.newHub(t, Config{MaxSnapshotBytes: 1024})
	sp := bigPlacement("small")
	th.apply(t, small, sp)
	if stored, err = small.GetPlacement(ctx, hub.Key{Name: sp.Name}); err != nil {
		t.Fatal(err)
	}
	selection = nil
	for i := range 5 {
		selection = append(selection, sizedConfigMap(fmt.Sprintf("small-%d", i), 400))
	}
	if _, _, err := resourcesnapshot.Ensure(ctx, small, stored, selection, ""); err != nil {
		t.Fatal(err)
	}
	snaps, err := small.ListResourceSnapshots(ctx, hub.Key{Name: sp.Name})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range snaps {
		names = append(names, s.Name+"/"+s.Annotations[fleet.SubindexOfResourceSnapshotAnnotation])
	}
	slices.Sort(names)
	if want := []string{"small-0-0/0", "small-0-1/1", "small-0-snapshot/"}; !slices.Equal(names, want) {
		t.Errorf("five 500-byte resources at a 1 KB limit made snapshots %v; want %v", names, want)
	}
	if err := (&placement.Updater{Hub: small, Clock: clock.Real{}}).Update(ctx, hub.Key{Name: sp.Name}); err != nil {
		t.Fatal(err)
	}
	got, err := small.GetPlacement(ctx, hub.Key{Name: sp.Name})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Status.SelectedResources) != len(selection) {
		t.Errorf("placement status lists %v; want the %d resources of the group", got.Status.SelectedResources, len(selection))
	}
}
