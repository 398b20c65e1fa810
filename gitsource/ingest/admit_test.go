package ingest_test

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource/ingest"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/render"
)

// Overrides in Git are fleet objects like the others: the admitter applies
// them to the hub (where `kubectl get clusterresourceoverrides` shows them
// on a Kubernetes hub), deletes those removed from Git, and keeps the last
// accepted one of a file that stops rendering.
func TestOverridesInGitReachTheHubAndLeaveWithTheirFile(t *testing.T) {
	ctx := context.Background()
	h := embedded.New(clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), embedded.NewMemoryStore())
	a := ingest.New(h, nil)
	cro := &fleet.ClusterResourceOverride{ObjectMeta: metav1.ObjectMeta{Name: "namespace-env"},
		Spec: fleet.ClusterResourceOverrideSpec{ClusterResourceSelectors: []fleet.ResourceSelectorTerm{{Version: "v1", Kind: "Namespace", Name: "app"}}}}
	ro := &fleet.ResourceOverride{ObjectMeta: metav1.ObjectMeta{Name: "config", Namespace: "app"},
		Spec: fleet.ResourceOverrideSpec{ResourceSelectors: []fleet.ResourceSelector{{Version: "v1", Kind: "ConfigMap", Name: "config"}}}}
	croRef := render.ObjectRef{Group: fleet.PlacementGroup, Kind: fleet.KindClusterResourceOverride, Name: cro.Name}
	roRef := render.ObjectRef{Group: fleet.PlacementGroup, Kind: fleet.KindResourceOverride, Namespace: "app", Name: ro.Name}
	sources := map[render.ObjectRef]render.Source{croRef: {File: "cro.yaml"}, roRef: {File: "ro.yaml"}}

	held := func() (cros, ros []string) {
		t.Helper()
		c, err := h.ListClusterResourceOverrides(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r, err := h.ListResourceOverrides(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range c {
			cros = append(cros, o.Name)
		}
		for _, o := range r {
			ros = append(ros, o.Namespace+"/"+o.Name)
		}
		return cros, ros
	}
	admit := func(c *render.Content) {
		t.Helper()
		if rejected, err := a.Admit(ctx, c); err != nil || len(rejected) > 0 {
			t.Fatalf("Admit: %v, rejected %v", err, rejected)
		}
	}

	admit(&render.Content{ClusterResourceOverrides: []*fleet.ClusterResourceOverride{cro},
		ResourceOverrides: []*fleet.ResourceOverride{ro}, Sources: sources})
	if cros, ros := held(); len(cros) != 1 || len(ros) != 1 {
		t.Fatalf("after the first commit the hub holds %v and %v; want both overrides", cros, ros)
	}

	// cro.yaml no longer renders: its override stays; ro.yaml is deleted.
	admit(&render.Content{Sources: sources, Errors: []render.ManifestError{{File: "cro.yaml"}}})
	if cros, ros := held(); len(cros) != 1 || len(ros) != 0 {
		t.Fatalf("after cro.yaml broke and ro.yaml was deleted the hub holds %v and %v; want namespace-env alone", cros, ros)
	}

	admit(&render.Content{})
	if cros, ros := held(); len(cros) != 0 || len(ros) != 0 {
		t.Fatalf("after both files were deleted the hub holds %v and %v; want none", cros, ros)
	}
}

// refusingHub is an embedded hub whose Apply refuses one object as a
// Kubernetes hub's API server refuses what its schema does not allow.
type refusingHub struct {
	*embedded.Hub
	refuse string
}

func (h refusingHub) Apply(ctx context.Context, obj hub.Object) error {
	if obj.GetName() == h.refuse {
		gk := schema.GroupKind{Group: fleet.PlacementGroup, Kind: hub.KindOf(obj)}
		return apierrors.NewInvalid(gk, obj.GetName(), field.ErrorList{field.Required(field.NewPath("spec", "x"), "")})
	}
	return h.Hub.Apply(ctx, obj)
}

// An object the hub's API server refuses, though gitfleet's own validation
// took it, is a refused change like any other: the others are applied, the
// refusal is reported with the file, and the sync does not fail (failing
// would retry the same commit forever).
func TestAnObjectTheHubRefusesDoesNotStopTheSync(t *testing.T) {
	ctx := context.Background()
	h := refusingHub{embedded.New(clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), embedded.NewMemoryStore()), "refused"}
	a := ingest.New(h, nil)
	cro := func(name string) *fleet.ClusterResourceOverride {
		return &fleet.ClusterResourceOverride{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	ref := render.ObjectRef{Group: fleet.PlacementGroup, Kind: fleet.KindClusterResourceOverride, Name: "refused"}
	rejected, err := a.Admit(ctx, &render.Content{
		ClusterResourceOverrides: []*fleet.ClusterResourceOverride{cro("refused"), cro("taken")},
		Sources:                  map[render.ObjectRef]render.Source{ref: {File: "overrides.yaml"}}})
	if err != nil {
		t.Fatalf("Admit failed on a refused object: %v", err)
	}
	want := "the change to ClusterResourceOverride refused in overrides.yaml was rejected: ClusterResourceOverride.placement.kubernetes-fleet.io \"refused\" is invalid: spec.x: Required value; the last accepted spec is still in use"
	if len(rejected) != 1 || rejected[0] != want {
		t.Errorf("rejected %q;\nwant [%q]", rejected, want)
	}
	held, err := h.ListClusterResourceOverrides(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(held) != 1 || held[0].Name != "taken" {
		t.Errorf("the hub holds %d overrides; want taken alone", len(held))
	}
}

// The admitter tells the update-run engine why a strategy of the last
// render was refused (its first error, where it is), and forgets it once a
// render no longer refuses it; other strategies were not refused.
func TestAdmitterTellsWhyAStrategyWasRefused(t *testing.T) {
	ctx := context.Background()
	h := embedded.New(clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), embedded.NewMemoryStore())
	a := ingest.New(h, nil)
	refused := &render.Content{Sources: map[render.ObjectRef]render.Source{}, Errors: []render.ManifestError{
		{File: "cm.yaml", Line: 3, Kind: "ConfigMap", Namespace: "app", Name: "example-strategy", Message: "not a strategy"},
		{File: "strategy.yaml", Line: 11, Kind: fleet.KindClusterStagedUpdateStrategy, Name: "example-strategy",
			Field: "spec.stages[1].maxConcurrency", Message: "Invalid value: 0: maxConcurrency must be at least 1"},
		{File: "strategy.yaml", Line: 14, Kind: fleet.KindClusterStagedUpdateStrategy, Name: "example-strategy",
			Field: "spec.stages[2].name", Message: "Required value"},
		{File: "team.yaml", Kind: fleet.KindStagedUpdateStrategy, Namespace: "team-a", Name: "web", Message: "duplicate definition"},
	}}
	for _, tc := range []struct {
		name    string
		content *render.Content
		key     hub.Key
		want    string
	}{
		{"the first error of a refused strategy", refused, hub.Key{Name: "example-strategy"},
			"spec.stages[1].maxConcurrency: Invalid value: 0: maxConcurrency must be at least 1 (strategy.yaml:11)"},
		{"a namespaced strategy, an error without field or line", refused, hub.Key{Namespace: "team-a", Name: "web"},
			"duplicate definition (team.yaml)"},
		{"a strategy that was not refused", refused, hub.Key{Name: "other"}, ""},
		{"a later render that refuses nothing", &render.Content{Sources: map[render.ObjectRef]render.Source{}},
			hub.Key{Name: "example-strategy"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := a.Admit(ctx, tc.content); err != nil {
				t.Fatal(err)
			}
			if got := a.RefusedStrategy(tc.key); got != tc.want {
				t.Errorf("RefusedStrategy(%v) = %q, want %q", tc.key, got, tc.want)
			}
		})
	}
}

// Evictions removed from Git are deleted, but not one a person created
// with kubectl on a Kubernetes hub (managed by another field manager):
// that one is in no file, and KubeFleet keeps evictions for auditing.
func TestEvictionsLeaveWithTheirFileOnlyIfGitAppliedThem(t *testing.T) {
	ctx := context.Background()
	h := embedded.New(clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), embedded.NewMemoryStore())
	a := ingest.New(h, nil)
	eviction := func(name string, managers ...metav1.ManagedFieldsEntry) *fleet.ClusterResourcePlacementEviction {
		return &fleet.ClusterResourcePlacementEviction{ObjectMeta: metav1.ObjectMeta{Name: name, ManagedFields: managers},
			Spec: fleet.PlacementEvictionSpec{PlacementName: "app", ClusterName: "member1"}}
	}
	for _, e := range []*fleet.ClusterResourcePlacementEviction{
		eviction("from-git"),
		eviction("applied-by-gitfleet", metav1.ManagedFieldsEntry{Manager: "gitfleet", Operation: metav1.ManagedFieldsOperationApply}),
		eviction("by-kubectl", metav1.ManagedFieldsEntry{Manager: "kubectl-create", Operation: metav1.ManagedFieldsOperationUpdate}),
	} {
		if err := h.Apply(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if rejected, err := a.Admit(ctx, &render.Content{}); err != nil || len(rejected) > 0 {
		t.Fatalf("Admit: %v, rejected %v", err, rejected)
	}
	left, err := h.ListEvictions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].Name != "by-kubectl" {
		t.Errorf("after a commit without evictions the hub holds %d evictions (%v); want by-kubectl alone", len(left), left)
	}
}

// unpackCountingHub counts the reads of whole runs, which on the embedded
// hub unpack a finished run's clusters.
type unpackCountingHub struct {
	*embedded.Hub
	wholeReads int
}

func (h *unpackCountingHub) GetUpdateRun(ctx context.Context, key hub.Key) (*fleet.UpdateRun, error) {
	h.wholeReads++
	return h.Hub.GetUpdateRun(ctx, key)
}

func (h *unpackCountingHub) ListUpdateRuns(ctx context.Context) ([]*fleet.UpdateRun, error) {
	h.wholeReads++
	return h.Hub.ListUpdateRuns(ctx)
}

// Admission reads runs for their metadata and spec only: on a hub that
// hands them out without their clusters, it never reads a run whole (a
// finished run's clusters stay packed, however many runs there are), and
// an immutable field's change is still refused and noted, a run gone from
// Git still deleted.
func TestAdmissionReadsRunsWithoutTheirClusters(t *testing.T) {
	ctx := context.Background()
	h := &unpackCountingHub{Hub: embedded.New(clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), embedded.NewMemoryStore())}
	a := ingest.New(h, nil)
	run := func(name, placement string) *fleet.UpdateRun {
		return &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: fleet.UpdateRunSpec{PlacementName: placement, StagedUpdateStrategyName: "s", State: fleet.StateRun}}
	}
	content := func(runs ...*fleet.UpdateRun) *render.Content {
		return &render.Content{Runs: runs, Sources: map[render.ObjectRef]render.Source{}}
	}
	if _, err := a.Admit(ctx, content(run("kept", "app"), run("gone", "app"))); err != nil {
		t.Fatal(err)
	}
	rejected, err := a.Admit(ctx, content(run("kept", "other")))
	if err != nil {
		t.Fatal(err)
	}
	if len(rejected) != 1 {
		t.Errorf("changing an immutable placementName: rejected %q, want one refusal", rejected)
	}
	kept, err := h.Hub.GetUpdateRun(ctx, hub.Key{Name: "kept"})
	if err != nil || kept.Spec.PlacementName != "app" || kept.Annotations[fleet.RejectedChangeAnnotation] == "" {
		t.Errorf("the refused run: %v, %+v; want placementName app kept and the refusal noted", err, kept)
	}
	if _, err := h.Hub.GetUpdateRun(ctx, hub.Key{Name: "gone"}); err != nil && !hub.IsNotFound(err) {
		t.Fatal(err)
	} else if err == nil {
		if gone, _ := h.Hub.GetUpdateRun(ctx, hub.Key{Name: "gone"}); gone.DeletionTimestamp == nil {
			t.Error("the run gone from Git is not being deleted")
		}
	}
	if h.wholeReads != 0 {
		t.Errorf("admission read runs whole %d times, want never", h.wholeReads)
	}
}
