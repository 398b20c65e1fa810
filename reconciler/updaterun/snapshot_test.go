package updaterun

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

func configMap(name, data string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": "app"}, "data": map[string]any{"key": data}}}
}

// TestEnsureLatestResourceSnapshot covers what the per-commit snapshotter
// relies on: reuse on an equal hash, a new latest group otherwise with the
// commit recorded, history bounded by revisionHistoryLimit, big selections
// split into sub-snapshots.
func TestEnsureLatestResourceSnapshot(t *testing.T) {
	e := newEnv(t, "")
	limit := int32(2)
	e.placement(func(p *fleet.Placement) { p.Spec.RevisionHistoryLimit = &limit })
	p, _ := e.h.GetPlacement(e.ctx, e.pkey())

	s0, created, err := EnsureLatestResourceSnapshot(e.ctx, e.h, p, []*unstructured.Unstructured{configMap("a", "v1")}, "c0")
	if err != nil || !created || s0.Name != placementName+"-0-snapshot" || s0.Annotations[fleet.CommitAnnotation] != "c0" {
		t.Fatalf("first snapshot %v created %v err %v", s0.Name, created, err)
	}
	again, created, err := EnsureLatestResourceSnapshot(e.ctx, e.h, p, []*unstructured.Unstructured{configMap("a", "v1")}, "c1")
	if err != nil || created || again.Name != s0.Name || again.Annotations[fleet.CommitAnnotation] != "c0" {
		t.Fatalf("unchanged selection: %v created %v err %v", again.Name, created, err)
	}
	for i, data := range []string{"v2", "v3"} {
		if _, created, err := EnsureLatestResourceSnapshot(e.ctx, e.h, p, []*unstructured.Unstructured{configMap("a", data)}, ""); err != nil || !created {
			t.Fatalf("change %d: created %v err %v", i, created, err)
		}
	}
	if got := snapshotNames(e); !slices.Equal(got, []string{placementName + "-1-snapshot=false", placementName + "-2-snapshot=true"}) {
		t.Errorf("snapshots kept %v, want the last two groups", got)
	}

	big := strings.Repeat("x", 500*1024)
	m, created, err := EnsureLatestResourceSnapshot(e.ctx, e.h, p, []*unstructured.Unstructured{configMap("a", big), configMap("b", big), configMap("c", "small")}, "")
	if err != nil || !created {
		t.Fatalf("big selection: created %v err %v", created, err)
	}
	if m.Annotations[fleet.NumberOfResourceSnapshotsAnnotation] != "2" || len(m.Spec.SelectedResources) != 1 {
		t.Errorf("master holds %d resources of a group of %s", len(m.Spec.SelectedResources), m.Annotations[fleet.NumberOfResourceSnapshotsAnnotation])
	}
	all, _ := e.h.ListResourceSnapshots(e.ctx, e.pkey())
	var sub *fleet.ResourceSnapshot
	for _, s := range all {
		if s.Name == placementName+"-3-0" {
			sub = s
		}
	}
	if sub == nil || sub.Annotations[fleet.SubindexOfResourceSnapshotAnnotation] != "0" || len(sub.Spec.SelectedResources) != 2 ||
		sub.Labels[fleet.ResourceIndexLabel] != "3" {
		t.Errorf("sub-snapshot %+v", sub)
	}
	if h1, _, _ := HashResources([]*unstructured.Unstructured{configMap("a", "v1")}); h1 == s0.Annotations[fleet.ResourceGroupHashAnnotation] {
		if h2, _, _ := HashResources([]*unstructured.Unstructured{configMap("a", "v2")}); h2 == h1 {
			t.Error("different selections hash alike")
		}
	} else {
		t.Error("hash is not deterministic")
	}
}

// A snapshot group that lacks resources of the placement's previous index
// counts them in gitfleet.io/removed-resources (what a run rolling it out
// deletes); a group that only adds or changes resources has no annotation.
// A previous group split into sub-snapshots counts as a whole.
func TestResourceSnapshotCountsRemovedResources(t *testing.T) {
	e := newEnv(t, "")
	e.placement(nil)
	p, _ := e.h.GetPlacement(e.ctx, e.pkey())
	big := strings.Repeat("x", 500*1024)
	for _, step := range []struct {
		name      string
		resources []*unstructured.Unstructured
		removed   string // "" for no annotation
	}{
		{"the first index removes nothing", []*unstructured.Unstructured{configMap("a", "v1"), configMap("b", "v1")}, ""},
		{"one of two left", []*unstructured.Unstructured{configMap("a", "v1")}, "1"},
		{"a change and an addition", []*unstructured.Unstructured{configMap("a", "v2"), configMap("c", "v1")}, ""},
		{"a group split in two", []*unstructured.Unstructured{configMap("a", big), configMap("b", big), configMap("c", "v1")}, ""},
		{"every resource of a split group but one", []*unstructured.Unstructured{configMap("c", "v1")}, "2"},
		{"an empty selection", nil, "1"},
	} {
		m, created, err := EnsureLatestResourceSnapshot(e.ctx, e.h, p, step.resources, "")
		if err != nil || !created {
			t.Fatalf("%s: created %v err %v", step.name, created, err)
		}
		got, ok := m.Annotations[fleet.RemovedResourcesAnnotation]
		if got != step.removed || ok != (step.removed != "") {
			t.Errorf("%s: %s has %s=%q (set: %v), want %q", step.name, m.Name, fleet.RemovedResourcesAnnotation, got, ok, step.removed)
		}
		all, err := e.h.ListResourceSnapshots(e.ctx, e.pkey())
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range all {
			if s.Name == m.Name && s.Annotations[fleet.RemovedResourcesAnnotation] != step.removed {
				t.Errorf("%s: the hub stores %v", step.name, s.Annotations)
			}
		}
	}
}

// TestSnapshotInUseOutlivesTheHistoryLimit: more changes than
// revisionHistoryLimit while a stopped run holds snapshot 0 delete the
// unused snapshots only; 0 stays, with the ten newest besides it, and the
// run resumes on it.
func TestSnapshotInUseOutlivesTheHistoryLimit(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			e := newEnv(t, f.ns).fixture().create()
			e.ok()
			if got := e.get().Status.ResourceSnapshotIndexUsed; got != "0" {
				t.Fatalf("run initialized on snapshot %q, want 0", got)
			}
			e.setState(fleet.StateStop)
			e.ok()
			p, _ := e.h.GetPlacement(e.ctx, e.pkey())
			for i := 1; i <= fleet.DefaultRevisionHistoryLimit+2; i++ {
				if _, created, err := EnsureLatestResourceSnapshot(e.ctx, e.h, p, []*unstructured.Unstructured{configMap("a", fmt.Sprint(i))}, ""); err != nil || !created {
					t.Fatalf("change %d: created %v err %v", i, created, err)
				}
			}
			want := []string{placementName + "-0-snapshot=false"}
			for i := 3; i <= 12; i++ {
				want = append(want, fmt.Sprintf("%s-%d-snapshot=%v", placementName, i, i == 12))
			}
			slices.Sort(want)
			if got := snapshotNames(e); !slices.Equal(got, want) {
				t.Errorf("snapshots kept %v, want %v", got, want)
			}
			e.setState(fleet.StateRun)
			e.ok()
			if r := e.get(); r.Status.ResourceSnapshotIndexUsed != "0" || meta.IsStatusConditionFalse(r.Status.Conditions, fleet.StagedUpdateRunConditionSucceeded) {
				t.Errorf("resumed run: snapshot %q, conditions %v", r.Status.ResourceSnapshotIndexUsed, r.Status.Conditions)
			}
		})
	}
}
