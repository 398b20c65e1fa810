package v1beta1_test

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// TestRegistryMatchesTheCRDs: the names, short names and scope the registry
// gives a kind are those its CRD in config/crd declares, so `gitfleet get`
// takes the words kubectl takes on a hub.
func TestRegistryMatchesTheCRDs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "crd", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in config/crd: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd struct {
			Spec struct {
				Group string `json:"group"`
				Names struct {
					Kind       string   `json:"kind"`
					Plural     string   `json:"plural"`
					Singular   string   `json:"singular"`
					ShortNames []string `json:"shortNames"`
				} `json:"names"`
				Scope string `json:"scope"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(b, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		n := crd.Spec.Names
		k, ok := fleet.LookupKind(n.Kind)
		if !ok {
			t.Errorf("%s: the registry has no kind %s", f, n.Kind)
			continue
		}
		if k.Group != crd.Spec.Group || k.Plural != n.Plural || k.Singular != n.Singular ||
			!slices.Equal(k.ShortNames, n.ShortNames) || k.Namespaced != (crd.Spec.Scope == "Namespaced") {
			t.Errorf("%s: registry has %s %s/%s/%v namespaced=%v; the CRD %s %s/%s/%v %s", f,
				k.Group, k.Plural, k.Singular, k.ShortNames, k.Namespaced,
				crd.Spec.Group, n.Plural, n.Singular, n.ShortNames, crd.Spec.Scope)
		}
	}
}

// TestSchemeReadsTheVersionsManifestsUse: every kind is read at v1beta1
// and v1 into one Go type; the override kinds also at v1alpha1, their
// snapshots and the other kinds not.
func TestSchemeReadsTheVersionsManifestsUse(t *testing.T) {
	for _, tc := range []struct {
		apiVersion, kind string
		want             runtime.Object
	}{
		{"placement.kubernetes-fleet.io/v1beta1", "ClusterStagedUpdateRun", &fleet.UpdateRun{}},
		{"placement.kubernetes-fleet.io/v1", "StagedUpdateRun", &fleet.UpdateRun{}},
		{"cluster.kubernetes-fleet.io/v1", "MemberCluster", &fleet.MemberCluster{}},
		{"placement.kubernetes-fleet.io/v1alpha1", "ClusterResourceOverride", &fleet.ClusterResourceOverride{}},
		{"placement.kubernetes-fleet.io/v1alpha1", "ResourceOverride", &fleet.ResourceOverride{}},
		{"placement.kubernetes-fleet.io/v1alpha1", "ClusterResourceOverrideSnapshot", nil},
		{"placement.kubernetes-fleet.io/v1alpha1", "ClusterStagedUpdateRun", nil},
		{"placement.kubernetes-fleet.io/v1beta1", "MemberCluster", nil},
		{"gitfleet.io/v1alpha1", "GitSource", &fleet.GitSource{}},
	} {
		gv, err := schema.ParseGroupVersion(tc.apiVersion)
		if err != nil {
			t.Fatal(err)
		}
		got, err := fleet.Scheme.New(gv.WithKind(tc.kind))
		switch {
		case tc.want == nil && err == nil:
			t.Errorf("%s %s: the scheme makes a %T; want it unknown", tc.apiVersion, tc.kind, got)
		case tc.want != nil && err != nil:
			t.Errorf("%s %s: %v", tc.apiVersion, tc.kind, err)
		case tc.want != nil && reflect.TypeOf(got) != reflect.TypeOf(tc.want):
			t.Errorf("%s %s: %T; want %T", tc.apiVersion, tc.kind, got, tc.want)
		}
	}
}

// TestKindForPicksTheKindByScope: a family's Go type is its cluster-scoped
// kind without a namespace and its namespaced kind with one; a kind with
// no namespaced twin has no kind in a namespace.
func TestKindForPicksTheKindByScope(t *testing.T) {
	for _, tc := range []struct {
		obj  runtime.Object
		want string
	}{
		{&fleet.UpdateRun{}, fleet.KindClusterStagedUpdateRun},
		{&fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Namespace: "app"}}, fleet.KindStagedUpdateRun},
		{&fleet.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: "app"}}, fleet.KindResourceBinding},
		{&fleet.PolicySnapshot{}, fleet.KindClusterSchedulingPolicySnapshot},
		{&fleet.MemberCluster{}, fleet.KindMemberCluster},
		{&fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "app"}}, ""},
		{&fleet.Commit{}, fleet.KindCommit},
		{&fleet.ResourceOverride{ObjectMeta: metav1.ObjectMeta{Namespace: "app"}}, fleet.KindResourceOverride},
		{&fleet.ClusterResourceOverride{ObjectMeta: metav1.ObjectMeta{Namespace: "app"}}, ""},
		{&metav1.Status{}, ""},
	} {
		k, ok := fleet.KindFor(tc.obj)
		if k.Kind != tc.want || ok != (tc.want != "") {
			t.Errorf("KindFor(%T in %q) = %q, %v; want %q", tc.obj, namespaceOf(tc.obj), k.Kind, ok, tc.want)
		}
	}
}

func namespaceOf(o runtime.Object) string {
	if m, ok := o.(metav1.Object); ok {
		return m.GetNamespace()
	}
	return ""
}

// TestRESTMapperResolvesKubectlWords: plural, singular and short names
// resolve to the kind, with its scope, as on a hub with KubeFleet's CRDs.
func TestRESTMapperResolvesKubectlWords(t *testing.T) {
	m := fleet.RESTMapper()
	for _, tc := range []struct {
		word, kind string
		namespaced bool
	}{
		{"csur", fleet.KindClusterStagedUpdateRun, false},
		{"clusterstagedupdaterun", fleet.KindClusterStagedUpdateRun, false},
		{"stagedupdateruns", fleet.KindStagedUpdateRun, true},
		{"careq", fleet.KindClusterApprovalRequest, false},
		{"rs", fleet.KindResourceSnapshot, true},
		{"crp", fleet.KindClusterResourcePlacement, false},
		{"cluster", fleet.KindMemberCluster, false},
		{"memberclusters", fleet.KindMemberCluster, false},
		{"gitsources", fleet.KindGitSource, false},
	} {
		gvk, err := m.KindFor(schema.GroupVersionResource{Resource: tc.word})
		if err != nil {
			t.Errorf("%s: %v", tc.word, err)
			continue
		}
		mapping, err := m.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Errorf("%s: %v", tc.word, err)
			continue
		}
		if gvk.Kind != tc.kind || (mapping.Scope.Name() == "namespace") != tc.namespaced {
			t.Errorf("%s: %s, scope %s; want %s, namespaced %v", tc.word, gvk, mapping.Scope.Name(), tc.kind, tc.namespaced)
		}
	}
	if _, err := m.KindFor(schema.GroupVersionResource{Resource: "deployments"}); err == nil {
		t.Error("deployments resolved; want no match outside the fleet kinds")
	}
}

// TestEveryKindRoundTripsThroughItsGoType: an empty object of every kind,
// in the kind's scope, is that kind again for KindFor.
func TestEveryKindRoundTripsThroughItsGoType(t *testing.T) {
	for _, k := range fleet.Kinds() {
		obj := k.New()
		if obj == nil {
			t.Errorf("%s: New returned nil", k.Kind)
			continue
		}
		if k.Namespaced {
			obj.(metav1.Object).SetNamespace("app")
		}
		if got, ok := fleet.KindFor(obj); !ok || got.GroupVersionKind != k.GroupVersionKind {
			t.Errorf("%s: KindFor(%T) = %s, %v", k.Kind, obj, got.GroupVersionKind, ok)
		}
	}
}
