package updaterun

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/golden"
)

// selectResources puts a ConfigMap of namespace "app" into resource
// snapshot 0, so overrides of that namespace and that ConfigMap select it.
func (e *env) selectResources() {
	s, err := e.h.ListResourceSnapshots(e.ctx, e.pkey())
	if err != nil || len(s) != 1 {
		e.t.Fatalf("want the fixture's one resource snapshot, got %d (%v)", len(s), err)
	}
	raw, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "app-config", "namespace": "app"}})
	s[0].Spec.SelectedResources = []runtime.RawExtension{{Raw: raw}}
	if err := e.h.UpdateResourceSnapshot(e.ctx, s[0]); err != nil {
		e.t.Fatal(err)
	}
}

func eastusRule() fleet.OverrideRule {
	return fleet.OverrideRule{
		ClusterSelector: &fleet.ClusterSelector{ClusterSelectorTerms: []fleet.ClusterSelectorTerm{
			{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eastus"}}}}},
		JSONPatchOverrides: []fleet.JSONPatchOverride{{Operator: fleet.JSONPatchOverrideOpAdd,
			Path: "/metadata/labels/test", Value: apiextensionsv1.JSON{Raw: []byte(`"test"`)}}},
	}
}

func overrideMeta(override, namespace string, index int, latest bool) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: fmt.Sprintf(fleet.OverrideSnapshotNameFmt, override, index), Namespace: namespace,
		Labels: map[string]string{fleet.OverrideTrackingLabel: override, fleet.OverrideIndexLabel: fmt.Sprint(index),
			fleet.IsLatestSnapshotLabel: fmt.Sprint(latest)}}
}

func (e *env) clusterResourceOverride(name string, index int, latest bool, spec fleet.ClusterResourceOverrideSpec) {
	if err := e.h.PutClusterResourceOverrideSnapshot(e.ctx, &fleet.ClusterResourceOverrideSnapshot{
		ObjectMeta: overrideMeta(name, "", index, latest),
		Spec:       fleet.ClusterResourceOverrideSnapshotSpec{OverrideSpec: spec}}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) resourceOverride(name, namespace string, index int, latest bool, spec fleet.ResourceOverrideSpec) {
	if err := e.h.PutResourceOverrideSnapshot(e.ctx, &fleet.ResourceOverrideSnapshot{
		ObjectMeta: overrideMeta(name, namespace, index, latest),
		Spec:       fleet.ResourceOverrideSnapshotSpec{OverrideSpec: spec}}); err != nil {
		e.t.Fatal(err)
	}
}

var appNamespace = []fleet.ResourceSelectorTerm{{Version: "v1", Kind: "Namespace", Name: "app"}}

// TestInitializationRecordsOverrideSnapshots is spec §9.2 33: a
// ClusterResourceOverride whose rule selects region=eastus is recorded on
// the eastus clusters (stage1) only; the deletion stage gets none; the
// initialization is stable. Around it: two overrides are listed by name, a
// ResourceOverride by namespace and name; snapshots that are not the latest,
// that select nothing of the run, or that are limited to another placement
// are not recorded.
func TestInitializationRecordsOverrideSnapshots(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			e := newEnv(t, f.ns).fixture()
			e.selectResources()
			policy := &fleet.OverridePolicy{OverrideRules: []fleet.OverrideRule{eastusRule()}}
			e.clusterResourceOverride("test-cro", 0, false, fleet.ClusterResourceOverrideSpec{ClusterResourceSelectors: appNamespace, Policy: policy})
			e.clusterResourceOverride("test-cro", 1, true, fleet.ClusterResourceOverrideSpec{ClusterResourceSelectors: appNamespace, Policy: policy})
			e.clusterResourceOverride("another-cro", 0, true, fleet.ClusterResourceOverrideSpec{ClusterResourceSelectors: appNamespace,
				Policy: &fleet.OverridePolicy{OverrideRules: []fleet.OverrideRule{{ClusterSelector: &fleet.ClusterSelector{}}}}})
			e.clusterResourceOverride("other-namespace", 0, true, fleet.ClusterResourceOverrideSpec{
				ClusterResourceSelectors: []fleet.ResourceSelectorTerm{{Version: "v1", Kind: "Namespace", Name: "other"}}, Policy: policy})
			e.clusterResourceOverride("other-placement", 0, true, fleet.ClusterResourceOverrideSpec{
				Placement: &fleet.PlacementRef{Name: "other"}, ClusterResourceSelectors: appNamespace, Policy: policy})
			e.resourceOverride("test-ro", "app", 0, true, fleet.ResourceOverrideSpec{
				ResourceSelectors: []fleet.ResourceSelector{{Version: "v1", Kind: "ConfigMap", Name: "app-config"}},
				Policy:            &fleet.OverridePolicy{OverrideRules: []fleet.OverrideRule{eastusRule()}}})
			e.run.Spec.State = fleet.StateInitialize
			e.create()
			e.ok()
			run := e.get()
			if !isTrue(find(run.Status.Conditions, fleet.StagedUpdateRunConditionInitialized), run.Generation) {
				t.Fatalf("not initialized:%s", condsString(run.Status.Conditions))
			}
			for _, s := range run.Status.StagesStatus {
				for _, c := range s.Clusters {
					wantCRO := []string{"another-cro-0"}
					var wantRO []fleet.NamespacedName
					if s.StageName == "stage1" {
						wantCRO = []string{"another-cro-0", "test-cro-1"}
						wantRO = []fleet.NamespacedName{{Namespace: "app", Name: "test-ro-0"}}
					}
					if !slices.Equal(c.ClusterResourceOverrideSnapshots, wantCRO) || !slices.Equal(c.ResourceOverrideSnapshots, wantRO) {
						t.Errorf("%s/%s: cluster resource overrides %v, resource overrides %v; want %v, %v",
							s.StageName, c.ClusterName, c.ClusterResourceOverrideSnapshots, c.ResourceOverrideSnapshots, wantCRO, wantRO)
					}
				}
			}
			for _, c := range run.Status.DeletionStageStatus.Clusters {
				if c.ClusterResourceOverrideSnapshots != nil || c.ResourceOverrideSnapshots != nil {
					t.Errorf("deletion-stage cluster %s has overrides", c.ClusterName)
				}
			}
			wantStableInitialization(t, e, run)
			if f.ns == "" {
				goldenStages(t, "scenario-33-overrides", run)
			}
		})
	}
}

// TestInitializationWithoutMatchingOverridesRecordsNone: an override that
// selects nothing the run delivers leaves every cluster without overrides.
func TestInitializationWithoutMatchingOverridesRecordsNone(t *testing.T) {
	e := newEnv(t, "").fixture()
	e.selectResources()
	e.clusterResourceOverride("other-namespace", 0, true, fleet.ClusterResourceOverrideSpec{
		ClusterResourceSelectors: []fleet.ResourceSelectorTerm{{Version: "v1", Kind: "Namespace", Name: "other"}},
		Policy:                   &fleet.OverridePolicy{OverrideRules: []fleet.OverrideRule{eastusRule()}}})
	e.create()
	e.ok()
	for _, s := range e.get().Status.StagesStatus {
		for _, c := range s.Clusters {
			if c.ClusterResourceOverrideSnapshots != nil || c.ResourceOverrideSnapshots != nil {
				t.Errorf("%s has overrides", c.ClusterName)
			}
		}
	}
}

// wantStableInitialization checks that a run initialized in state
// Initialize is not written again by the next pass, and the metric it left.
func wantStableInitialization(t *testing.T, e *env, run *fleet.UpdateRun) {
	t.Helper()
	wantResult(t, "again", e.ok(), Result{Blocked: true})
	if again := e.get(); again.ResourceVersion != run.ResourceVersion {
		t.Error("an initialized run in Initialize was written again")
	}
	if got := e.rec.last(); got != "Initialize/Initialized/True/UpdateRunInitializedSuccessfully/none" {
		t.Errorf("metric %s", got)
	}
}

// goldenStages compares the run's stage statuses, as its status file shows
// them, to testdata/<name>.yaml.
func goldenStages(t *testing.T, name string, run *fleet.UpdateRun) {
	t.Helper()
	got, err := yaml.Marshal(map[string]any{"stagesStatus": run.Status.StagesStatus, "deletionStageStatus": run.Status.DeletionStageStatus})
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, name+".yaml", got)
}
