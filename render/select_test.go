package render

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
)

// Select plugs into the embedded hub as is.
var _ embedded.Selector = Select

func obj(apiVersion, kind, namespace, name string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	u.SetName(name)
	if namespace != "" {
		u.SetNamespace(namespace)
	}
	if labels != nil {
		u.SetLabels(labels)
	}
	return u
}

// hubResources is a small hub: two namespaces with content, cluster-scoped
// RBAC and a CRD, all deliberately out of order.
func hubResources() []*unstructured.Unstructured {
	return []*unstructured.Unstructured{
		obj("apps/v1", "Deployment", "app", "web", map[string]string{"tier": "front"}),
		obj("v1", "ConfigMap", "app", "settings", nil),
		obj("v1", "ConfigMap", "other", "settings", nil),
		obj("example.com/v1", "Widget", "app", "w1", nil),
		obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "reader", map[string]string{"team": "a"}),
		obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "writer", map[string]string{"team": "b"}),
		obj("v1", "Namespace", "", "other", map[string]string{"team": "b"}),
		obj("v1", "Namespace", "", "app", map[string]string{"team": "a"}),
		obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets.example.com", nil),
		obj("v1", "Service", "app", "web", map[string]string{"tier": "front"}),
	}
}

func selectorPlacement(namespace string, terms ...fleet.ResourceSelectorTerm) *fleet.Placement {
	p := &fleet.Placement{Spec: fleet.PlacementSpec{ResourceSelectors: terms}}
	p.Name, p.Namespace = "p", namespace
	return p
}

func TestSelect(t *testing.T) {
	ns := func(name string) fleet.ResourceSelectorTerm {
		return fleet.ResourceSelectorTerm{Version: "v1", Kind: "Namespace", Name: name}
	}
	for _, tc := range []struct {
		name string
		p    *fleet.Placement
		want []string
	}{
		{"CRP selecting a Namespace by name brings everything in it, in apply order",
			selectorPlacement("", ns("app")),
			[]string{"Namespace /app", "ConfigMap app/settings", "Service app/web", "Deployment app/web", "Widget app/w1"}},
		{"NamespaceOnly selects the Namespace alone",
			selectorPlacement("", fleet.ResourceSelectorTerm{Version: "v1", Kind: "Namespace", Name: "app", SelectionScope: fleet.NamespaceOnly}),
			[]string{"Namespace /app"}},
		{"Namespaces by label",
			selectorPlacement("", fleet.ResourceSelectorTerm{Version: "v1", Kind: "Namespace", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}}),
			[]string{"Namespace /other", "ConfigMap other/settings"}},
		{"cluster-scoped kind with no name or labels selects all of the kind",
			selectorPlacement("", fleet.ResourceSelectorTerm{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}),
			[]string{"ClusterRole /reader", "ClusterRole /writer"}},
		{"CRP cannot select namespaced resources directly",
			selectorPlacement("", fleet.ResourceSelectorTerm{Version: "v1", Kind: "ConfigMap", Name: "settings"}),
			nil},
		{"version must match",
			selectorPlacement("", fleet.ResourceSelectorTerm{Group: "rbac.authorization.k8s.io", Version: "v1beta1", Kind: "ClusterRole"}),
			nil},
		{"missing object selects nothing",
			selectorPlacement("", ns("absent")),
			nil},
		{"overlapping selectors yield each object once",
			selectorPlacement("", ns("app"), fleet.ResourceSelectorTerm{Version: "v1", Kind: "Namespace", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}},
				fleet.ResourceSelectorTerm{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}),
			[]string{"Namespace /app", "ConfigMap app/settings", "CustomResourceDefinition /widgets.example.com", "Service app/web", "Deployment app/web", "Widget app/w1"}},
		{"RP selects namespaced resources of its own namespace only",
			selectorPlacement("app", fleet.ResourceSelectorTerm{Version: "v1", Kind: "ConfigMap"}),
			[]string{"ConfigMap app/settings"}},
		{"RP by label across kinds",
			selectorPlacement("app", fleet.ResourceSelectorTerm{Group: "apps", Version: "v1", Kind: "Deployment", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "front"}}},
				fleet.ResourceSelectorTerm{Version: "v1", Kind: "Service", Name: "web"}),
			[]string{"Service app/web", "Deployment app/web"}},
		{"RP cannot select cluster-scoped resources",
			selectorPlacement("app", fleet.ResourceSelectorTerm{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}),
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Select(tc.p, hubResources())
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			if len(got) > 0 {
				keys = resourceKeys(got)
			}
			if !reflect.DeepEqual(keys, tc.want) {
				t.Errorf("selected %v\nwant     %v", keys, tc.want)
			}
		})
	}
}

func TestSelectReturnsCopies(t *testing.T) {
	res := hubResources()
	got, err := Select(selectorPlacement("", fleet.ResourceSelectorTerm{Version: "v1", Kind: "Namespace", Name: "app"}), res)
	if err != nil {
		t.Fatal(err)
	}
	got[0].SetName("mutated")
	if res[7].GetName() != "app" {
		t.Errorf("Select returned the hub's own object")
	}
}

func TestSelectRejectsInvalidLabelSelector(t *testing.T) {
	p := selectorPlacement("", fleet.ResourceSelectorTerm{Version: "v1", Kind: "Namespace",
		LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Maybe"}}}})
	if _, err := Select(p, hubResources()); err == nil {
		t.Fatal("invalid label selector accepted")
	}
}

func TestSortResourcesUsesKubeFleetOrder(t *testing.T) {
	rs := hubResources()
	SortResources(rs)
	want := []string{
		"Namespace /app", "Namespace /other", // ApplyOrder kinds first, by namespace/name
		"ConfigMap app/settings", "ConfigMap other/settings",
		"CustomResourceDefinition /widgets.example.com",
		"ClusterRole /reader", "ClusterRole /writer",
		"Service app/web", "Deployment app/web",
		"Widget app/w1", // unknown kinds last, by group/version, Kind=kind
	}
	if got := resourceKeys(rs); !reflect.DeepEqual(got, want) {
		t.Errorf("order %v\nwant  %v", got, want)
	}
}
