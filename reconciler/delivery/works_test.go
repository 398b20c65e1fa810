package delivery

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

// snapshot is a resource snapshot of placement "app" at index 3 holding
// the YAML documents; sub > 0 makes it that sub-snapshot.
func snapshot(t *testing.T, namespace string, sub int, docs ...string) *fleet.ResourceSnapshot {
	t.Helper()
	s := &fleet.ResourceSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "app-3-snapshot", Namespace: namespace,
		Labels: map[string]string{fleet.PlacementTrackingLabel: "app", fleet.ResourceIndexLabel: "3"}, Annotations: map[string]string{}}}
	if sub > 0 {
		s.Name = "app-3-" + string(rune('0'+sub))
		s.Annotations[fleet.SubindexOfResourceSnapshotAnnotation] = string(rune('0' + sub))
	}
	for _, d := range docs {
		data, err := yaml.YAMLToJSON([]byte(d))
		if err != nil {
			t.Fatal(err)
		}
		s.Spec.SelectedResources = append(s.Spec.SelectedResources, runtime.RawExtension{Raw: data})
	}
	return s
}

func binding(namespace string) *fleet.Binding {
	return &fleet.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: "app-member1-x1", Namespace: namespace, Generation: 4,
			Labels: map[string]string{fleet.PlacementTrackingLabel: "app"}},
		Spec: fleet.ResourceBindingSpec{State: fleet.BindingStateBound, TargetCluster: "member1", ResourceSnapshotName: "app-3-snapshot"},
	}
}

var member1 = &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "member1", Labels: map[string]string{"environment": "staging"}}}

const (
	nsApp     = "{apiVersion: v1, kind: Namespace, metadata: {name: app}}"
	cmConfig  = "{apiVersion: v1, kind: ConfigMap, metadata: {name: config, namespace: app}, data: {a: '1'}}"
	cmDropped = "{apiVersion: v1, kind: ConfigMap, metadata: {name: dropped, namespace: app}}"
	envelope  = `{apiVersion: placement.kubernetes-fleet.io/v1beta1, kind: ResourceEnvelope, metadata: {name: env, namespace: app},
  data: {"a.yaml": {apiVersion: v1, kind: ConfigMap, metadata: {name: wrapped-a, namespace: app}},
         "b.yaml": {apiVersion: v1, kind: ConfigMap, metadata: {name: wrapped-b, namespace: app}}}}`
)

func names(works []*fleet.Work) []string {
	var out []string
	for _, w := range works {
		out = append(out, w.Name)
	}
	return out
}

func manifestNames(t *testing.T, w *fleet.Work) []string {
	t.Helper()
	objs, err := WorkManifests(w)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	return out
}

func TestWorksAreNamedAndSplitAsKubeFleetsWorkGenerator(t *testing.T) {
	b := binding("")
	src := Sources{Snapshots: []*fleet.ResourceSnapshot{
		snapshot(t, "", 0, nsApp, envelope, cmConfig),
		snapshot(t, "", 1, cmDropped),
	}}
	works, failed := Works(b, member1, src)
	if failed != nil {
		t.Fatalf("failed: %+v", failed)
	}
	want := []string{"app-1", "app-work", "app-work-envelope-" + envelopeDigest(mustObject(t, envelope))}
	if got := names(works); !slices.Equal(got, want) {
		t.Fatalf("works %v, want %v", got, want)
	}
	byName := map[string]*fleet.Work{}
	for _, w := range works {
		byName[w.Name] = w
		if w.Namespace != "fleet-member-member1" {
			t.Errorf("%s in namespace %s, want fleet-member-member1", w.Name, w.Namespace)
		}
		if w.Labels[fleet.ParentBindingLabel] != b.Name || w.Labels[fleet.PlacementTrackingLabel] != "app" ||
			w.Labels[fleet.ParentResourceSnapshotIndexLabel] != "3" || w.Annotations[fleet.ParentResourceSnapshotNameAnnotation] != "app-3-snapshot" {
			t.Errorf("%s: labels %v annotations %v", w.Name, w.Labels, w.Annotations)
		}
		if _, ok := w.Labels[fleet.ParentNamespaceLabel]; ok {
			t.Errorf("%s of a cluster-scoped binding has %s", w.Name, fleet.ParentNamespaceLabel)
		}
	}
	if got := manifestNames(t, byName["app-work"]); !slices.Equal(got, []string{"app", "config"}) {
		t.Errorf("app-work holds %v, want the master's resources but the envelope", got)
	}
	if got := manifestNames(t, byName["app-1"]); !slices.Equal(got, []string{"dropped"}) {
		t.Errorf("app-1 holds %v, want the sub-snapshot's", got)
	}
	env := byName[want[2]]
	if got := manifestNames(t, env); !slices.Equal(got, []string{"wrapped-b", "wrapped-a"}) {
		t.Errorf("envelope work holds %v, want its manifests by JSON, descending", got)
	}
	if env.Labels[fleet.EnvelopeTypeLabel] != fleet.ResourceEnvelopeType || env.Labels[fleet.EnvelopeNameLabel] != "env" ||
		env.Labels[fleet.EnvelopeNamespaceLabel] != "app" {
		t.Errorf("envelope work labels %v", env.Labels)
	}
}

func TestWorksOfAResourceBindingAreNamedWithTheNamespace(t *testing.T) {
	works, failed := Works(binding("team"), member1, Sources{Snapshots: []*fleet.ResourceSnapshot{snapshot(t, "team", 0, cmConfig)}})
	if failed != nil {
		t.Fatal(failed)
	}
	if got := names(works); !slices.Equal(got, []string{"team.app-work"}) {
		t.Fatalf("works %v, want team.app-work", got)
	}
	if works[0].Labels[fleet.ParentNamespaceLabel] != "team" {
		t.Errorf("labels %v, want %s: team", works[0].Labels, fleet.ParentNamespaceLabel)
	}
}

func TestWorksCarryTheFrozenOverrides(t *testing.T) {
	ro := &fleet.ResourceOverrideSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "ro-0", Namespace: "app"}}
	if err := yaml.UnmarshalStrict([]byte(`
resourceSelectors: [{group: "", version: v1, kind: ConfigMap, name: dropped}, {group: "", version: v1, kind: ConfigMap, name: config}]
policy: {overrideRules: [
  {clusterSelector: {clusterSelectorTerms: [{labelSelector: {matchLabels: {environment: staging}}}]}, jsonPatchOverrides: [{op: replace, path: /data/a, value: "2"}]}]}`),
		&ro.Spec.OverrideSpec); err != nil {
		t.Fatal(err)
	}
	b := binding("")
	b.Spec.ResourceOverrideSnapshots = []fleet.NamespacedName{{Namespace: "app", Name: "ro-0"}}
	works, failed := Works(b, member1, Sources{Snapshots: []*fleet.ResourceSnapshot{snapshot(t, "", 0, cmConfig)},
		ResourceOverrides: []*fleet.ResourceOverrideSnapshot{ro}})
	if failed != nil {
		t.Fatal(failed)
	}
	objs, _ := WorkManifests(works[0])
	if v, _, _ := unstructured.NestedString(objs[0].Object, "data", "a"); v != "2" {
		t.Errorf("data.a = %q, want the override's 2", v)
	}
	if works[0].Annotations[fleet.ParentResourceOverrideSnapshotHashAnnotation] == hashOf([]fleet.NamespacedName(nil)) {
		t.Error("the resource override snapshot hash is the hash of no snapshots")
	}
}

func TestWorksThatCannotBeMadeFailAsDeliveryDoes(t *testing.T) {
	b := binding("")
	_, failed := Works(b, member1, Sources{})
	if failed == nil || failed.Type != fleet.ResourceBindingWorkSynchronized || failed.Status != metav1.ConditionFalse ||
		!strings.Contains(failed.Message, `resource snapshot "app-3-snapshot" is not found`) {
		t.Errorf("without a snapshot: %+v, want WorkSynchronized=False naming the snapshot", failed)
	}
	_, failed = Works(b, member1, Sources{Snapshots: []*fleet.ResourceSnapshot{snapshot(t, "", 0, cmConfig)},
		Missing: []string{"clusterResourceOverrideSnapshot cro-0 is not found"}})
	if failed == nil || failed.Type != fleet.ResourceBindingOverridden || failed.Reason != member.OverriddenFailedReason ||
		failed.Message != member.OverriddenFailedMessagePrefix+"clusterResourceOverrideSnapshot cro-0 is not found" {
		t.Errorf("with an override snapshot gone: %+v, want KubeFleet's Overridden=False", failed)
	}
}

func mustObject(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	data, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// PushWorks are Works with the same names, labels, order and manifests,
// kept decoded, at the binding's generation.
func TestPushWorksAreWorksKeptDecoded(t *testing.T) {
	b := binding("")
	src := Sources{Snapshots: []*fleet.ResourceSnapshot{
		snapshot(t, "", 0, nsApp, envelope, cmConfig),
		snapshot(t, "", 1, cmDropped),
	}}
	works, failed := Works(b, member1, src)
	if failed != nil {
		t.Fatalf("failed: %+v", failed)
	}
	pushed, failed := PushWorks(b, member1, src)
	if failed != nil {
		t.Fatalf("failed: %+v", failed)
	}
	if !slices.Equal(names(pushed), names(works)) {
		t.Fatalf("push works %v, want %v", names(pushed), names(works))
	}
	for i, w := range pushed {
		if w.Generation != b.Generation || !maps.Equal(w.Labels, works[i].Labels) || !maps.Equal(w.Annotations, works[i].Annotations) {
			t.Errorf("%s: generation %d labels %v annotations %v; want %d, %v, %v", w.Name, w.Generation, w.Labels, w.Annotations,
				b.Generation, works[i].Labels, works[i].Annotations)
		}
		if len(w.Spec.Workload.Manifests) != len(works[i].Spec.Workload.Manifests) {
			t.Fatalf("%s: %d manifests, want %d", w.Name, len(w.Spec.Workload.Manifests), len(works[i].Spec.Workload.Manifests))
		}
		for j, m := range w.Spec.Workload.Manifests {
			u, ok := m.Object.(*unstructured.Unstructured)
			if !ok || m.Raw != nil {
				t.Fatalf("%s: manifest %d is not kept decoded: %+v", w.Name, j, m)
			}
			data, err := json.Marshal(u.Object)
			if err != nil {
				t.Fatal(err)
			}
			if want := works[i].Spec.Workload.Manifests[j].Raw; string(data) != string(want) {
				t.Errorf("%s: manifest %d = %s, want %s", w.Name, j, data, want)
			}
		}
	}
}
