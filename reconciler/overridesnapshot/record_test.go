package overridesnapshot

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/reconciler/snapshothistory"
)

func cro(name, value string) *fleet.ClusterResourceOverride {
	return &fleet.ClusterResourceOverride{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: fleet.ClusterResourceOverrideSpec{
			ClusterResourceSelectors: []fleet.ResourceSelectorTerm{{Version: "v1", Kind: "Namespace", Name: "app"}},
			Policy: &fleet.OverridePolicy{OverrideRules: []fleet.OverrideRule{{
				ClusterSelector: &fleet.ClusterSelector{},
				JSONPatchOverrides: []fleet.JSONPatchOverride{{Operator: fleet.JSONPatchOverrideOpAdd,
					Path: "/metadata/labels/v", Value: apiextensionsv1.JSON{Raw: []byte(`"` + value + `"`)}}},
			}}},
		},
	}
}

func ro(name, value string) *fleet.ResourceOverride {
	c := cro(name, value)
	return &fleet.ResourceOverride{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "app"},
		Spec: fleet.ResourceOverrideSpec{
			ResourceSelectors: []fleet.ResourceSelector{{Version: "v1", Kind: "ConfigMap", Name: "cfg"}},
			Policy:            c.Spec.Policy,
		},
	}
}

// state lists the snapshots as name=latest[@commit].
func state(t *testing.T, h *embedded.Hub) []string {
	t.Helper()
	cros, err := h.ListClusterResourceOverrideSnapshots(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ros, err := h.ListResourceOverrideSnapshots(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range cros {
		out = append(out, fmt.Sprintf("%s=%s@%s", s.Name, s.Labels[fleet.IsLatestSnapshotLabel], s.Annotations[fleet.CommitAnnotation]))
	}
	for _, s := range ros {
		out = append(out, fmt.Sprintf("%s/%s=%s@%s", s.Namespace, s.Name, s.Labels[fleet.IsLatestSnapshotLabel], s.Annotations[fleet.CommitAnnotation]))
	}
	return out
}

type commit struct {
	cros     []*fleet.ClusterResourceOverride
	ros      []*fleet.ResourceOverride
	withheld string // an override name that did not render in this commit
	created  int
}

func TestRecordKeepsOneSnapshotPerChangingCommit(t *testing.T) {
	tests := []struct {
		name    string
		commits []commit
		want    []string
	}{
		{
			name:    "a new override gets index 0 with its commit",
			commits: []commit{{cros: []*fleet.ClusterResourceOverride{cro("a", "1")}, ros: []*fleet.ResourceOverride{ro("b", "1")}, created: 2}},
			want:    []string{"a-0=true@c0", "app/b-0=true@c0"},
		},
		{
			name: "an unchanged override gets nothing new",
			commits: []commit{
				{cros: []*fleet.ClusterResourceOverride{cro("a", "1")}, created: 1},
				{cros: []*fleet.ClusterResourceOverride{cro("a", "1")}, created: 0},
			},
			want: []string{"a-0=true@c0"},
		},
		{
			name: "a changed override gets the next index and the old one is not latest",
			commits: []commit{
				{ros: []*fleet.ResourceOverride{ro("b", "1")}, created: 1},
				{ros: []*fleet.ResourceOverride{ro("b", "2")}, created: 1},
			},
			want: []string{"app/b-0=false@c0", "app/b-1=true@c1"},
		},
		{
			name: "a deleted override is no longer latest but its snapshots stay for the runs that froze them",
			commits: []commit{
				{cros: []*fleet.ClusterResourceOverride{cro("a", "1")}, ros: []*fleet.ResourceOverride{ro("b", "1")}, created: 2},
				{created: 0},
			},
			want: []string{"a-0=false@c0", "app/b-0=false@c0"},
		},
		{
			name: "an override that does not render keeps its latest snapshot",
			commits: []commit{
				{cros: []*fleet.ClusterResourceOverride{cro("a", "1")}, created: 1},
				{withheld: "a", created: 0},
			},
			want: []string{"a-0=true@c0"},
		},
		{
			name: "an override restored unchanged is latest again",
			commits: []commit{
				{cros: []*fleet.ClusterResourceOverride{cro("a", "1")}, created: 1},
				{created: 0},
				{cros: []*fleet.ClusterResourceOverride{cro("a", "1")}, created: 0},
			},
			want: []string{"a-0=true@c0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := embedded.New(clock.NewFake(metav1.Now().Time), nil)
			for i, c := range tt.commits {
				withheld := func(_, _, name string) bool { return name == c.withheld }
				n, err := Record(context.Background(), h, snapshothistory.Of(context.Background(), h), c.cros, c.ros, withheld, fmt.Sprintf("c%d", i))
				if err != nil {
					t.Fatal(err)
				}
				if n != c.created {
					t.Errorf("commit %d created %d snapshots, want %d", i, n, c.created)
				}
			}
			if got := state(t, h); !slices.Equal(got, tt.want) {
				t.Errorf("snapshots %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRecordKeepsTheLastTenSnapshots(t *testing.T) {
	h := embedded.New(clock.NewFake(metav1.Now().Time), nil)
	for i := 0; i < 12; i++ {
		if _, err := Record(context.Background(), h, snapshothistory.Of(context.Background(), h), []*fleet.ClusterResourceOverride{cro("a", fmt.Sprint(i))}, nil, nil, ""); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	all, _ := h.ListClusterResourceOverrideSnapshots(context.Background())
	for _, s := range all {
		got = append(got, s.Name)
	}
	slices.Sort(got)
	want := []string{"a-10", "a-11", "a-2", "a-3", "a-4", "a-5", "a-6", "a-7", "a-8", "a-9"}
	if !slices.Equal(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
}

// TestRecordKeepsSnapshotsInUse: a snapshot a run froze or a binding
// carries outlives twelve changes; the ten newest unused are kept besides.
func TestRecordKeepsSnapshotsInUse(t *testing.T) {
	ctx := context.Background()
	h := embedded.New(clock.NewFake(metav1.Now().Time), nil)
	record := func(i int) {
		t.Helper()
		if _, err := Record(ctx, h, snapshothistory.Of(ctx, h), []*fleet.ClusterResourceOverride{cro("a", fmt.Sprint(i))},
			[]*fleet.ResourceOverride{ro("b", fmt.Sprint(i))}, nil, ""); err != nil {
			t.Fatal(err)
		}
	}
	record(0)
	record(1)
	h.ApplyUpdateRun(&fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: "run"},
		Spec: fleet.UpdateRunSpec{PlacementName: "app", StagedUpdateStrategyName: "s", State: fleet.StateStop}})
	run, err := h.GetUpdateRun(ctx, hub.Key{Name: "run"})
	if err != nil {
		t.Fatal(err)
	}
	run.Status.StagesStatus = []fleet.StageUpdatingStatus{{StageName: "one", Clusters: []fleet.ClusterUpdatingStatus{
		{ClusterName: "m1", ClusterResourceOverrideSnapshots: []string{"a-0"}}}}}
	if err := h.UpdateUpdateRunStatus(ctx, run); err != nil {
		t.Fatal(err)
	}
	h.ApplyPlacement(&fleet.Placement{ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: fleet.PlacementSpec{Strategy: fleet.RolloutStrategy{Type: fleet.ExternalRolloutStrategyType}}})
	if err := h.CreateBinding(ctx, &fleet.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: "app-m2", Labels: map[string]string{fleet.PlacementTrackingLabel: "app"}},
		Spec: fleet.ResourceBindingSpec{State: fleet.BindingStateBound, TargetCluster: "m2",
			ResourceOverrideSnapshots: []fleet.NamespacedName{{Namespace: "app", Name: "b-1"}}},
	}); err != nil {
		t.Fatal(err)
	}
	for i := 2; i < 14; i++ {
		record(i)
	}
	var got []string
	for _, s := range state(t, h) {
		got = append(got, strings.SplitN(s, "=", 2)[0])
	}
	slices.Sort(got)
	want := []string{"a-0"}
	for i := 4; i < 14; i++ {
		want = append(want, fmt.Sprintf("a-%d", i))
	}
	want = append(want, "app/b-1")
	for i := 4; i < 14; i++ {
		want = append(want, fmt.Sprintf("app/b-%d", i))
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
}
