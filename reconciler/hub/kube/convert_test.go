package kube

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

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

// A read-only list hands out the conversion the cache keeps, itself, until
// the object changes; the conversion it handed out stays as it was.
func TestSharedReadsAreTheCachedConversionItself(t *testing.T) {
	in := &informer{handled: map[string]handledState{"member-1": {resourceVersion: "1"}}, converted: map[string]conversion{}, changed: make(chan struct{})}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.kubernetes-fleet.io/v1beta1", "kind": fleet.KindMemberCluster,
		"metadata": map[string]any{"name": "member-1", "resourceVersion": "1", "labels": map[string]any{"env": "prod"}},
	}}
	read := func() *fleet.MemberCluster {
		t.Helper()
		ms, err := typedShared(in, []runtime.Object{u}, newMemberCluster)
		if err != nil || len(ms) != 1 {
			t.Fatalf("typedShared = %v, %v", ms, err)
		}
		return ms[0]
	}
	read() // the first read converts
	second, third := read(), read()
	if second != third {
		t.Error("two reads of an unchanged object are two copies; want the cached conversion itself")
	}
	u.SetLabels(map[string]string{"env": "staging"})
	u.SetResourceVersion("2")
	if m := read(); m == second || m.Labels["env"] != "staging" {
		t.Errorf("after a new resourceVersion: %v (the old conversion: %t); want the new labels", m.Labels, m == second)
	}
	if second.Labels["env"] != "prod" {
		t.Errorf("the conversion handed out before changed to %v", second.Labels)
	}
}
