package resourcesnapshot_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
)

func configMap(name, data string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": "app"}, "data": map[string]any{"key": data}}}
}

// newHub is an embedded hub with placement web (namespace ns) and the
// placement as stored.
func newHub(t *testing.T, ns string, limit int32) (*embedded.Hub, *fleet.Placement) {
	t.Helper()
	h := embedded.New(clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), nil)
	p := &fleet.Placement{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}}
	if limit > 0 {
		p.Spec.RevisionHistoryLimit = &limit
	}
	h.ApplyPlacement(p)
	stored, err := h.GetPlacement(context.Background(), hub.Key{Namespace: ns, Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	return h, stored
}

// snapshotNames lists the placement's snapshots as name=is-latest.
func snapshotNames(t *testing.T, h *embedded.Hub, p *fleet.Placement) []string {
	t.Helper()
	all, err := h.ListResourceSnapshots(context.Background(), hub.Key{Namespace: p.Namespace, Name: p.Name})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range all {
		out = append(out, s.Name+"="+s.Labels[fleet.IsLatestSnapshotLabel])
	}
	slices.Sort(out)
	return out
}

// TestEnsure covers what the per-commit snapshotter relies on: reuse on
// an equal hash, a new latest group otherwise with the commit recorded,
// history bounded by revisionHistoryLimit, big selections split into
// sub-snapshots.
func TestEnsure(t *testing.T) {
	ctx := context.Background()
	h, p := newHub(t, "", 2)

	s0, created, err := resourcesnapshot.Ensure(ctx, h, p, []*unstructured.Unstructured{configMap("a", "v1")}, "c0")
	if err != nil || !created || s0.Name != "web-0-snapshot" || s0.Annotations[fleet.CommitAnnotation] != "c0" {
		t.Fatalf("first snapshot %v created %v err %v", s0.Name, created, err)
	}
	again, created, err := resourcesnapshot.Ensure(ctx, h, p, []*unstructured.Unstructured{configMap("a", "v1")}, "c1")
	if err != nil || created || again.Name != s0.Name || again.Annotations[fleet.CommitAnnotation] != "c0" {
		t.Fatalf("unchanged selection: %v created %v err %v", again.Name, created, err)
	}
	for i, data := range []string{"v2", "v3"} {
		if _, created, err := resourcesnapshot.Ensure(ctx, h, p, []*unstructured.Unstructured{configMap("a", data)}, ""); err != nil || !created {
			t.Fatalf("change %d: created %v err %v", i, created, err)
		}
	}
	if got := snapshotNames(t, h, p); !slices.Equal(got, []string{"web-1-snapshot=false", "web-2-snapshot=true"}) {
		t.Errorf("snapshots kept %v, want the last two groups", got)
	}

	big := strings.Repeat("x", 500*1024)
	m, created, err := resourcesnapshot.Ensure(ctx, h, p, []*unstructured.Unstructured{configMap("a", big), configMap("b", big), configMap("c", "small")}, "")
	if err != nil || !created {
		t.Fatalf("big selection: created %v err %v", created, err)
	}
	if m.Annotations[fleet.NumberOfResourceSnapshotsAnnotation] != "2" || len(m.Spec.SelectedResources) != 1 {
		t.Errorf("master holds %d resources of a group of %s", len(m.Spec.SelectedResources), m.Annotations[fleet.NumberOfResourceSnapshotsAnnotation])
	}
	all, _ := h.ListResourceSnapshots(ctx, hub.Key{Name: "web"})
	g, ok := resourcesnapshot.Of(all).Latest()
	if !ok || g.Master.Name != "web-3-snapshot" || len(g.Subs) != 1 || !g.Complete() {
		t.Fatalf("latest group %+v", g)
	}
	if sub := g.Subs[0]; sub.Name != "web-3-0" || sub.Annotations[fleet.SubindexOfResourceSnapshotAnnotation] != "0" || len(sub.Spec.SelectedResources) != 2 {
		t.Errorf("sub-snapshot %+v", sub)
	}
	manifests, err := resourcesnapshot.Manifests(g.Snapshots())
	if err != nil || len(manifests) != 3 || manifests[0].GetName() != "a" || manifests[2].GetName() != "c" {
		t.Errorf("the split group holds %d manifests (err %v), want a, b, c in order", len(manifests), err)
	}
}

// TestEnsureReplacesAnIncompleteLatestGroup: a latest group whose
// sub-snapshot is gone is not reused even when its hash matches; the
// selection gets the next index.
func TestEnsureReplacesAnIncompleteLatestGroup(t *testing.T) {
	ctx := context.Background()
	h, p := newHub(t, "ns", 0)
	small := &embeddedLimit{Hub: h, limit: 10}
	selection := []*unstructured.Unstructured{configMap("a", "v1"), configMap("b", "v1")}
	if m, created, err := resourcesnapshot.Ensure(ctx, small, p, selection, ""); err != nil || !created || m.Annotations[fleet.NumberOfResourceSnapshotsAnnotation] != "2" {
		t.Fatalf("first group: created %v err %v", created, err)
	}
	if err := h.DeleteResourceSnapshot(ctx, hub.Key{Namespace: "ns", Name: "web-0-0"}); err != nil {
		t.Fatal(err)
	}
	m, created, err := resourcesnapshot.Ensure(ctx, small, p, selection, "")
	if err != nil || !created || m.Name != "web-1-snapshot" {
		t.Fatalf("after losing a sub-snapshot: %v created %v err %v", m, created, err)
	}
	if got := snapshotNames(t, h, p); !slices.Equal(got, []string{"web-0-snapshot=false", "web-1-0=", "web-1-snapshot=true"}) {
		t.Errorf("snapshots %v", got)
	}
}

// embeddedLimit is an embedded hub storing snapshots of at most limit
// bytes.
type embeddedLimit struct {
	*embedded.Hub
	limit int
}

func (e *embeddedLimit) MaxSnapshotBytes() int { return e.limit }

// TestEnsureCountsRemovedResources: a snapshot group that lacks resources
// of the placement's previous index counts them in
// gitfleet.io/removed-resources (what a run rolling it out deletes); a
// group that only adds or changes resources has no annotation. A previous
// group split into sub-snapshots counts as a whole.
func TestEnsureCountsRemovedResources(t *testing.T) {
	ctx := context.Background()
	h, p := newHub(t, "", 0)
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
		m, created, err := resourcesnapshot.Ensure(ctx, h, p, step.resources, "")
		if err != nil || !created {
			t.Fatalf("%s: created %v err %v", step.name, created, err)
		}
		got, ok := m.Annotations[fleet.RemovedResourcesAnnotation]
		if got != step.removed || ok != (step.removed != "") {
			t.Errorf("%s: %s has %s=%q (set: %v), want %q", step.name, m.Name, fleet.RemovedResourcesAnnotation, got, ok, step.removed)
		}
	}
}

// TestHash pins the resource hash: the same selection always hashes
// alike (status files in Git record it, so it must not change between
// versions), any change or another order gives another hash.
func TestHash(t *testing.T) {
	hash := func(rs ...*unstructured.Unstructured) string {
		t.Helper()
		h, err := resourcesnapshot.Hash(rs)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	a, b := configMap("a", "v1"), configMap("b", "v1")
	if got, want := hash(a, b), "cfaa3aca53c0f9cf1da55dd4a01cbf59579383277488bea70ec9300ba2c71029"; got != want {
		t.Errorf("hash of a, b: %s, want %s", got, want)
	}
	if hash(a, b) != hash(configMap("a", "v1"), configMap("b", "v1")) {
		t.Error("hash is not deterministic")
	}
	for name, other := range map[string]string{
		"a data value": hash(a, configMap("b", "v2")),
		"the order":    hash(b, a),
		"one removed":  hash(a),
	} {
		if other == hash(a, b) {
			t.Errorf("changing %s does not change the hash", name)
		}
	}
	if got, want := hash(), "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"; got != want {
		t.Errorf("hash of an empty selection: %s, want %s (sha-256 of [])", got, want)
	}
}

// BenchmarkHash1000 hashes a selection of 1,000 resources, as every
// commit does for every placement.
func BenchmarkHash1000(b *testing.B) {
	var selection []*unstructured.Unstructured
	for i := range 1000 {
		selection = append(selection, configMap(fmt.Sprintf("cm-%d", i), strings.Repeat("x", 200)))
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := resourcesnapshot.Hash(selection); err != nil {
			b.Fatal(err)
		}
	}
}
