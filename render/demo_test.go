package render

import (
	"os"
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

func renderDir(t testing.TB, dir string, opts Options) *Content {
	t.Helper()
	c, err := Render(os.DirFS(dir), opts)
	if err != nil {
		t.Fatalf("Render(%s): %v", dir, err)
	}
	return c
}

func names[T interface{ GetName() string }](objs []T) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	return out
}

func resourceKeys(rs []*unstructured.Unstructured) []string {
	out := make([]string, 0, len(rs))
	for _, u := range rs {
		out = append(out, u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName())
	}
	return out
}

// checkDemo asserts the seed 003 demo content, whichever layout it came from.
func checkDemo(t *testing.T, c *Content) {
	t.Helper()
	if len(c.Errors) != 0 {
		t.Fatalf("demo has errors: %v", c.Errors)
	}
	if got, want := names(c.Members), []string{"member1", "member2", "member3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("members = %v, want %v", got, want)
	}
	wantLabels := map[string]map[string]string{
		"member1": {"environment": "canary", "order": "2"},
		"member2": {"environment": "staging"},
		"member3": {"environment": "canary", "order": "1"},
	}
	for _, m := range c.Members {
		if !reflect.DeepEqual(m.Labels, wantLabels[m.Name]) {
			t.Errorf("%s labels = %v, want %v", m.Name, m.Labels, wantLabels[m.Name])
		}
		if m.APIVersion != fleet.ClusterAPIVersion || m.Kind != fleet.KindMemberCluster {
			t.Errorf("%s type = %s %s", m.Name, m.APIVersion, m.Kind)
		}
	}
	if got := resourceKeys(c.Resources); !reflect.DeepEqual(got, []string{"Namespace /test-namespace", "ConfigMap test-namespace/test-cm"}) {
		t.Errorf("resources = %v", got)
	}
	if v, _, _ := unstructured.NestedString(c.Resources[1].Object, "data", "key"); v != "value1" {
		t.Errorf("test-cm data.key = %q, want value1", v)
	}

	if len(c.Placements) != 1 {
		t.Fatalf("placements = %v", names(c.Placements))
	}
	p := c.Placements[0]
	if p.Name != "example-placement" || p.Kind != fleet.KindClusterResourcePlacement || p.Spec.Strategy.Type != fleet.ExternalRolloutStrategyType ||
		p.Spec.Policy.PlacementType != fleet.PickAllPlacementType {
		t.Errorf("placement = %s %s %+v %+v", p.Kind, p.Name, p.Spec.Strategy, p.Spec.Policy)
	}
	if p.Spec.Strategy.ApplyStrategy == nil || *p.Spec.RevisionHistoryLimit != 10 {
		t.Errorf("placement not defaulted: %+v", p.Spec)
	}

	if len(c.Strategies) != 1 {
		t.Fatalf("strategies = %v", names(c.Strategies))
	}
	st := c.Strategies[0].Spec.Stages
	if len(st) != 2 || st[0].Name != "staging" || st[1].Name != "canary" {
		t.Fatalf("stages = %+v", st)
	}
	if w := st[0].AfterStageTasks[0]; w.Type != fleet.StageTaskTypeTimedWait || w.WaitTime.Duration != time.Minute {
		t.Errorf("staging after task = %+v", w)
	}
	if st[1].SortingLabelKey == nil || *st[1].SortingLabelKey != "order" || st[1].AfterStageTasks[0].Type != fleet.StageTaskTypeApproval {
		t.Errorf("canary stage = %+v", st[1])
	}
	if st[0].MaxConcurrency == nil || st[0].MaxConcurrency.IntValue() != 1 {
		t.Errorf("maxConcurrency not defaulted: %v", st[0].MaxConcurrency)
	}

	if len(c.Runs) != 1 {
		t.Fatalf("runs = %v", names(c.Runs))
	}
	r := c.Runs[0]
	if r.Name != "example-run" || r.Spec.PlacementName != "example-placement" || r.Spec.StagedUpdateStrategyName != "example-strategy" || r.Spec.State != fleet.StateRun {
		t.Errorf("run = %+v", r.Spec)
	}
}

func TestRenderPlainDemo(t *testing.T) {
	c := renderDir(t, "testdata/demo", Options{})
	checkDemo(t, c)
	for ref, want := range map[ObjectRef]Source{
		{Group: fleet.ClusterGroup, Kind: "MemberCluster", Name: "member2"}:                {"clusters/members.yaml", 14},
		{Kind: "ConfigMap", Namespace: "test-namespace", Name: "test-cm"}:                  {"workloads/configmap.yaml", 1},
		{Group: fleet.PlacementGroup, Kind: "ClusterStagedUpdateRun", Name: "example-run"}: {"fleet/run.yaml", 3},
	} {
		if got := c.Sources[ref]; got != want {
			t.Errorf("source of %s = %+v, want %+v", ref, got, want)
		}
	}
}

func TestRenderKustomizeDemoEqualsPlainDemo(t *testing.T) {
	k := renderDir(t, "testdata/demo-kustomize", Options{})
	checkDemo(t, k)
	p := renderDir(t, "testdata/demo", Options{})
	if !reflect.DeepEqual(k.Resources, p.Resources) {
		t.Errorf("resources differ:\nkustomize %v\nplain     %v", k.Resources, p.Resources)
	}
	for _, pair := range [][2]any{{k.Members, p.Members}, {k.Placements, p.Placements}, {k.Strategies, p.Strategies}, {k.Runs, p.Runs}} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("fleet objects differ:\nkustomize %+v\nplain     %+v", pair[0], pair[1])
		}
	}
	// Origins name the source file, and kustomize's annotation is gone.
	for ref, want := range map[ObjectRef]Source{
		{Kind: "ConfigMap", Namespace: "test-namespace", Name: "test-cm"}:                  {File: "base/kustomization.yaml"},
		{Kind: "Namespace", Name: "test-namespace"}:                                        {File: "base/namespace.yaml"},
		{Group: fleet.PlacementGroup, Kind: "ClusterStagedUpdateRun", Name: "example-run"}: {File: "fleet/run.yaml"},
	} {
		if got := k.Sources[ref]; got != want {
			t.Errorf("source of %s = %+v, want %+v", ref, got, want)
		}
	}
}

func TestRenderKustomizeOverlayAtPath(t *testing.T) {
	c := renderDir(t, "testdata/overlays-repo", Options{Path: "envs/prod"})
	if len(c.Errors) != 0 {
		t.Fatalf("errors: %v", c.Errors)
	}
	if got := resourceKeys(c.Resources); !reflect.DeepEqual(got, []string{"Namespace /test-namespace", "ConfigMap test-namespace/test-cm"}) {
		t.Fatalf("resources = %v", got)
	}
	if v, _, _ := unstructured.NestedString(c.Resources[1].Object, "data", "key"); v != "value2" {
		t.Errorf("patched data.key = %q, want value2", v)
	}
	if got := c.Sources[ObjectRef{Kind: "ConfigMap", Namespace: "test-namespace", Name: "test-cm"}].File; got != "base/configmap.yaml" {
		t.Errorf("source = %q, want base/configmap.yaml", got)
	}
}

func TestReadApprovalsReadsMergedApproval(t *testing.T) {
	ars, errs := ReadApprovals(os.DirFS("testdata/demo"), "approvals")
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	if len(ars) != 1 {
		t.Fatalf("approvals = %d, want 1", len(ars))
	}
	a := ars[0]
	if a.Name != "example-run-after-canary" || a.Kind != fleet.KindClusterApprovalRequest || a.Spec.TargetUpdateRun != "example-run" ||
		a.Spec.TargetStage != "canary" || len(a.Status.Conditions) != 1 || a.Status.Conditions[0].Type != fleet.ApprovalRequestConditionApproved {
		t.Errorf("approval = %+v", a)
	}
	if ars, errs := ReadApprovals(os.DirFS("testdata/demo"), "nothing-here"); ars != nil || errs != nil {
		t.Errorf("missing folder: %v %v", ars, errs)
	}
}
