package admission_test

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/admission"
	"github.com/gitfleet/gitfleet/internal/crdschema"
)

const benchMember = `apiVersion: cluster.kubernetes-fleet.io/v1beta1
kind: MemberCluster
metadata:
  name: member%d
  labels: {env: prod, region: r%d}
spec:
  identity: {kind: ServiceAccount, name: fleet-member-agent, namespace: fleet-system, apiGroup: ""}
  taints: [{key: maintenance, value: "true", effect: NoSchedule}]
`

const benchPlacement = `apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourcePlacement
metadata: {name: app%d}
spec:
  resourceSelectors: [{group: "", version: v1, kind: Namespace, name: app%d}]
  policy:
    placementType: PickN
    numberOfClusters: 3
    affinity:
      clusterAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          clusterSelectorTerms: [{labelSelector: {matchLabels: {env: prod}}}]
    tolerations: [{key: gpu, operator: Equal, value: "true", effect: NoSchedule}]
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxUnavailable: 25%%, maxSurge: 1, unavailablePeriodSeconds: 30}
`

// BenchmarkValidate10000 validates 10,000 MemberClusters or placements on
// create: "schema" as both hubs now do it (config/crd's schema by the API
// server's code: prune, default, OpenAPI, list types, CEL), "go" with
// gitfleet's hand-written checks on the typed object (all there was
// before, and what still runs after the schema).
func BenchmarkValidate10000(b *testing.B) {
	for _, kind := range []struct {
		name, text string
		gvk        schema.GroupVersionKind
		goCheck    func(runtime.Object) int
	}{
		{"memberclusters", benchMember, schema.GroupVersionKind{Group: fleet.ClusterGroup, Version: fleet.Version, Kind: fleet.KindMemberCluster},
			func(o runtime.Object) int { return len(fleet.ValidateMemberCluster(o.(*fleet.MemberCluster))) }},
		{"placements", benchPlacement, schema.GroupVersionKind{Group: fleet.PlacementGroup, Version: fleet.Version, Kind: fleet.KindClusterResourcePlacement},
			func(o runtime.Object) int { return len(fleet.ValidatePlacement(o.(*fleet.Placement))) }},
	} {
		objs := make([]map[string]any, 10000)
		typed := make([]runtime.Object, 10000)
		for i := range objs {
			if err := yaml.Unmarshal(fmt.Appendf(nil, kind.text, i, i%10), &objs[i]); err != nil {
				b.Fatal(err)
			}
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
		var m map[string]any
		if err := yaml.Unmarshal(fmt.Appendf(nil, benchPlacement, i, i), &m); err != nil {
			b.Fatal(err)
		}
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
