package render

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// Select returns copies of the resources a placement selects, deduplicated
// and in SortResources order. It has the hub's Selector signature
// (embedded.Hub.SetSelector(render.Select)).
//
// Each resourceSelector matches group, version and kind exactly, then the
// name, or the labelSelector (absent: every object of the kind). A
// ClusterResourcePlacement selects cluster-scoped resources (those without a
// namespace in Git); selecting a Namespace also selects everything in it,
// unless selectionScope is NamespaceOnly. A ResourcePlacement selects only
// namespaced resources of its own namespace. Selecting an object twice (two
// overlapping selectors) yields it once; KubeFleet rejects that as a user
// error, gitfleet does not need to.
func Select(p *fleet.Placement, resources []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	seen := map[ObjectRef]bool{}
	var out []*unstructured.Unstructured
	add := func(u *unstructured.Unstructured) {
		ref := refOf(u)
		if !seen[ref] {
			seen[ref] = true
			out = append(out, u.DeepCopy())
		}
	}
	for i, term := range p.Spec.ResourceSelectors {
		match, err := termMatcher(term)
		if err != nil {
			return nil, fmt.Errorf("placement %s: spec.resourceSelectors[%d]: %w", placementRef(p), i, err)
		}
		isNamespace := term.Group == "" && term.Kind == "Namespace"
		var namespaces []string
		for _, u := range resources {
			gvk := u.GroupVersionKind()
			if gvk.Group != term.Group || gvk.Version != term.Version || gvk.Kind != term.Kind {
				continue
			}
			if u.GetNamespace() != p.Namespace || !match(u) {
				continue
			}
			add(u)
			if isNamespace && p.Namespace == "" {
				namespaces = append(namespaces, u.GetName())
			}
		}
		if len(namespaces) == 0 || term.SelectionScope == fleet.NamespaceOnly {
			continue
		}
		inSelected := make(map[string]bool, len(namespaces))
		for _, n := range namespaces {
			inSelected[n] = true
		}
		for _, u := range resources {
			if ns := u.GetNamespace(); ns != "" && inSelected[ns] {
				add(u)
			}
		}
	}
	SortResources(out)
	return out, nil
}

// termMatcher matches the name or label part of a selector term.
func termMatcher(term fleet.ResourceSelectorTerm) (func(*unstructured.Unstructured) bool, error) {
	if term.Name != "" {
		return func(u *unstructured.Unstructured) bool { return u.GetName() == term.Name }, nil
	}
	sel := labels.Everything()
	if term.LabelSelector != nil {
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(term.LabelSelector); err != nil {
			return nil, fmt.Errorf("the labelSelector in resource selector is invalid: %w", err)
		}
	}
	return func(u *unstructured.Unstructured) bool { return sel.Matches(labels.Set(u.GetLabels())) }, nil
}

func refOf(u *unstructured.Unstructured) ObjectRef {
	return ObjectRef{Group: u.GroupVersionKind().Group, Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
}

func placementRef(p *fleet.Placement) string {
	if p.Namespace != "" {
		return p.Namespace + "/" + p.Name
	}
	return p.Name
}
