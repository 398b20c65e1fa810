package admission_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/admission"
	"github.com/gitfleet/gitfleet/internal/crdschema"
	"github.com/gitfleet/gitfleet/internal/testing/fleettest"
)

// BenchmarkValidate10000 validates 10,000 MemberClusters or placements on
// create: "schema" as both hubs now do it (config/crd's schema by the API
// server's code: prune, default, OpenAPI, list types, CEL), "go" with
// gitfleet's hand-written checks on the typed object (all there was
// before, and what still runs after the schema).
func BenchmarkValidate10000(b *testing.B) {
	for _, kind := range []struct {
		name    string
		object  func(int) string
		gvk     schema.GroupVersionKind
		goCheck func(runtime.Object) int
	}{
		{"memberclusters", fleettest.Member, schema.GroupVersionKind{Group: fleet.ClusterGroup, Version: fleet.Version, Kind: fleet.KindMemberCluster},
			func(o runtime.Object) int { return len(fleet.ValidateMemberCluster(o.(*fleet.MemberCluster))) }},
		{"placements", fleettest.Placement, schema.GroupVersionKind{Group: fleet.PlacementGroup, Version: fleet.Version, Kind: fleet.KindClusterResourcePlacement},
			func(o runtime.Object) int { return len(fleet.ValidatePlacement(o.(*fleet.Placement))) }},
	} {
		objs := make([]map[string]any, 10000)
		typed := make([]runtime.Object, 10000)
		for i := range objs {
			objs[i] = content(b, kind.object(i))
			o, err := fleet.Scheme.New(kind.gvk)
			if err != nil {
				b.Fatal(err)
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[i], o); err != nil {
				b.Fatal(err)
			}
			fleet.Scheme.Default(o)
			typed[i] = o
		}
		v, _ := crdschema.Fleet().For(kind.gvk)
		b.Run("schema/10000-"+kind.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, o := range objs {
					obj := runtime.DeepCopyJSON(o)
					if unknown := v.Prune(obj); len(unknown) > 0 {
						b.Fatal(unknown)
					}
					v.Default(obj)
					if errs := v.ValidateCreate(obj); len(errs) > 0 {
						b.Fatal(errs)
					}
				}
			}
		})
		b.Run("go/10000-"+kind.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, o := range typed {
					if n := kind.goCheck(o); n > 0 {
						b.Fatal(n)
					}
				}
			}
		})
	}
}

// BenchmarkUpdateUnchanged10000 is what serve's Git loop pays on a sync
// that re-applies 10,000 placements nobody changed: admission.Update of
// each against the stored one.
func BenchmarkUpdateUnchanged10000(b *testing.B) {
	gvk := schema.GroupVersionKind{Group: fleet.PlacementGroup, Version: fleet.Version, Kind: fleet.KindClusterResourcePlacement}
	stored := make([]runtime.Object, 10000)
	cur := make([]runtime.Object, 10000)
	for i := range stored {
		m := content(b, fleettest.Placement(i))
		o, err := fleet.Scheme.New(gvk)
		if err != nil {
			b.Fatal(err)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, o); err != nil {
			b.Fatal(err)
		}
		fleet.Scheme.Default(o)
		stored[i], cur[i] = o, o.DeepCopyObject()
	}
	b.ReportAllocs()
	for b.Loop() {
		for i := range cur {
			if errs := admission.Update(stored[i], cur[i]); len(errs) > 0 {
				b.Fatal(errs)
			}
		}
	}
}

// content is a manifest as the API server and render read it: whole
// numbers are int64, as the schemas' CEL rules expect of an integer field
// (a plain JSON decode would make them float64).
func content(b *testing.B, manifest string) map[string]any {
	b.Helper()
	data, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		b.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		b.Fatal(err)
	}
	return u.Object
}
