package embedded_test

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
)

// delivering binds member1 on snapshot 0 with the given override snapshot
// names and delivers it.
func (f *fixture) deliverWithOverrides(cros []string, ros []fleet.NamespacedName) *fleet.Binding {
	f.t.Helper()
	b := f.binding("member1")
	b.Spec.State = fleet.BindingStateBound
	b.Spec.ResourceSnapshotName = placementName + "-0-snapshot"
	b.Spec.ClusterResourceOverrideSnapshots = cros
	b.Spec.ResourceOverrideSnapshots = ros
	f.start(b)
	must(f.t, f.hub.Commit(f.ctx))
	return f.binding("member1")
}

func (f *fixture) resourceOverride(name, path string) {
	f.t.Helper()
	must(f.t, f.hub.PutResourceOverrideSnapshot(f.ctx, &fleet.ResourceOverrideSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "test-namespace"},
		Spec: fleet.ResourceOverrideSnapshotSpec{OverrideSpec: fleet.ResourceOverrideSpec{
			ResourceSelectors: []fleet.ResourceSelector{{Version: "v1", Kind: "ConfigMap", Name: "test-cm"}},
			Policy: &fleet.OverridePolicy{OverrideRules: []fleet.OverrideRule{{ClusterSelector: &fleet.ClusterSelector{},
				JSONPatchOverrides: []fleet.JSONPatchOverride{{Operator: fleet.JSONPatchOverrideOpReplace, Path: path,
					Value: apiextensionsv1.JSON{Raw: []byte(`"overridden"`)}}}}}},
		}},
	}))
}

func TestDeliveryAppliesTheBindingsOverrideSnapshots(t *testing.T) {
	f := newFixture(t, simulated("member1"))
	f.resourceOverride("cm-0", "/data/key")
	b := f.deliverWithOverrides(nil, []fleet.NamespacedName{{Namespace: "test-namespace", Name: "cm-0"}})
	wantCond(t, b, fleet.ResourceBindingOverridden, metav1.ConditionTrue, "OverriddenSucceeded")
	wantCond(t, b, fleet.ResourceBindingAvailable, metav1.ConditionTrue, "AllWorkAreAvailable")
	for _, p := range f.placed("member1") {
		for _, r := range p.Resources {
			if r.GetKind() == "ConfigMap" && r.Object["data"].(map[string]any)["key"] != "overridden" {
				t.Errorf("member1 received %v", r.Object["data"])
			}
		}
	}
}

// What fails to override is not delivered at all, and the binding says why
// in KubeFleet's words.
func TestOverridesThatFailDeliverNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		cros []string
		ros  []fleet.NamespacedName
		want string
	}{
		{"a deleted cluster resource override snapshot", []string{"gone-0"}, nil,
			"Failed to apply the override rules on the resources: clusterResourceOverrideSnapshot gone-0 is not found"},
		{"a deleted resource override snapshot", nil, []fleet.NamespacedName{{Namespace: "test-namespace", Name: "gone-0"}},
			"Failed to apply the override rules on the resources: resourceOverrideSnapshot {gone-0 test-namespace} is not found"},
		{"a patch of a path that does not exist", nil, []fleet.NamespacedName{{Namespace: "test-namespace", Name: "bad-0"}},
			`Failed to apply the override rules on the resources: ResourceOverrideSnapshot "bad-0" failed to apply on ConfigMap "test-cm" in namespace "test-namespace": replace operation does not apply: doc is missing key: /data/nothing: missing value`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, simulated("member1"))
			f.resourceOverride("bad-0", "/data/nothing")
			b := f.deliverWithOverrides(tc.cros, tc.ros)
			wantCond(t, b, fleet.ResourceBindingOverridden, metav1.ConditionFalse, "OverriddenFailed")
			if got := cond(b, fleet.ResourceBindingOverridden).Message; got != tc.want {
				t.Errorf("message %q, want %q", got, tc.want)
			}
			if c := cond(b, fleet.ResourceBindingApplied); c != nil {
				t.Errorf("Applied is reported (%s) although nothing was delivered", c.Status)
			}
			if got := f.placed("member1"); len(got) != 0 {
				t.Fatalf("member1 holds %+v, want nothing", got)
			}
		})
	}
}

// A restarted gitfleet reads the override snapshots back from its store, so
// runs initialized before the restart still deliver what they froze.
func TestOverrideSnapshotsSurviveARestart(t *testing.T) {
	f := newFixture(t, simulated("member1"))
	f.resourceOverride("cm-0", "/data/key")
	must(t, f.hub.PutClusterResourceOverrideSnapshot(f.ctx, &fleet.ClusterResourceOverrideSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: "ns-0"}}))
	must(t, f.hub.Commit(f.ctx))

	restarted := embedded.New(f.clk, f.store)
	if _, err := restarted.Restore(f.ctx); err != nil {
		t.Fatal(err)
	}
	cros, err := restarted.ListClusterResourceOverrideSnapshots(f.ctx)
	must(t, err)
	ros, err := restarted.ListResourceOverrideSnapshots(f.ctx)
	must(t, err)
	if len(cros) != 1 || cros[0].Name != "ns-0" || len(ros) != 1 || ros[0].Name != "cm-0" || ros[0].Spec.OverrideSpec.Policy == nil {
		t.Fatalf("restored %v and %v, want ns-0 and test-namespace/cm-0 with its policy", cros, ros)
	}
}
