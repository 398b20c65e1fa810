package kube

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// A cached object is converted once per resourceVersion; every read gets
// its own copy, so a caller changing what it read changes no later read.
func TestReadsOfACachedObjectAreCopiesOfOneConversion(t *testing.T) {
	in := &informer{handled: map[string]handledState{"b": {resourceVersion: "1"}}, converted: map[string]conversion{}, changed: make(chan struct{})}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": fleet.KindClusterResourceBinding,
		"metadata": map[string]any{"name": "b", "resourceVersion": "1"},
		"spec":     map[string]any{"targetCluster": "member-1", "state": "Bound"},
	}}
	first := &fleet.Binding{}
	if err := in.convert(u, first); err != nil {
		t.Fatal(err)
	}
	first.Spec.TargetCluster = "changed by the caller"
	second := &fleet.Binding{}
	if err := in.convert(u, second); err != nil {
		t.Fatal(err)
	}
	if second.Spec.TargetCluster != "member-1" || second.Spec.State != fleet.BindingStateBound {
		t.Errorf("second read: %+v, want the cached object's spec", second.Spec)
	}
	fresh := &fleet.Binding{}
	if err := fromUnstructured(u, fresh); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(second, fresh) {
		t.Errorf("a cached conversion differs from a fresh one:\n%+v\n%+v", second, fresh)
	}

	u.Object["spec"].(map[string]any)["targetCluster"] = "member-2"
	u.SetResourceVersion("2")
	third := &fleet.Binding{}
	if err := in.convert(u, third); err != nil {
		t.Fatal(err)
	}
	if third.Spec.TargetCluster != "member-2" {
		t.Errorf("after a new resourceVersion: target %q, want member-2", third.Spec.TargetCluster)
	}

	in.observed(u, true)
	if _, ok := in.converted["b"]; ok {
		t.Error("a deleted object's conversion is still held")
	}
}
