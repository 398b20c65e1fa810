package kube

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/kubetest"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

// configMaps is n resources: 10 namespaces and ConfigMaps spread over them.
func configMaps(prefix string, n int) []string {
	var docs []string
	for ns := range 10 {
		docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s-%d}", prefix, ns))
	}
	for i := range n - 10 {
		docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d, namespace: %s-%d}\ndata: {key: value-%d}",
			i, prefix, i%10, i))
	}
	return docs
}

// BenchmarkDriftCheck1000 is the cost of one periodic drift check of a
// delivery of 1,000 objects on a real API server (one op = one check):
//
//   - unchanged: nothing changed since the apply (whenToApply Always): the
//     record's versions match, so the check is a LIST per kind and
//     namespace;
//
//   - one-edited: one ConfigMap of 1,000 was edited on the member
//     (whenToApply Always): the check restores it, with a full apply
//     (Flux ssa dry-runs every object, writes the one);
//
//   - ifnotdrifted-all-drifted: every ConfigMap was edited on the member
//     (whenToApply IfNotDrifted): a dry-run diff of each, all reported;
//
//   - reportdiff: ReportDiff of the applied workload, nothing differs: a
//     GET and a dry-run diff of each.
//
//     go test ./reconciler/member/kube -run '^$' -bench DriftCheck1000 -benchtime 5x
func BenchmarkDriftCheck1000(b *testing.B) {
	clusters := kubetest.Start(b, "member1")
	kubeconfig := kubetest.Kubeconfig(b, clusters, nil)
	c, err := Load(Options{Kubeconfig: kubeconfig})
	if err != nil {
		b.Fatal(err)
	}
	cl, err := c.cluster("member1")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	check := func(b *testing.B, d member.Delivery) outcome {
		_, _, _, out, err := cl.apply(ctx, d, nil)
		if err != nil {
			b.Fatal(err)
		}
		return out
	}

	b.Run("unchanged", func(b *testing.B) {
		d := benchDelivery(b, "drift-unchanged", workload("drift-unchanged", 1000))
		check(b, d)
		for b.Loop() {
			check(b, d)
		}
	})
	b.Run("one-edited", func(b *testing.B) {
		d := benchDelivery(b, "drift-one", configMaps("drift-one", 1000))
		check(b, d)
		cm := d.Resources[10]
		for b.Loop() {
			b.StopTimer()
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(cm.GroupVersionKind())
			if err := cl.client.Get(ctx, client.ObjectKeyFromObject(cm), u); err != nil {
				b.Fatal(err)
			}
			if err := unstructured.SetNestedField(u.Object, "edited", "data", "key"); err != nil {
				b.Fatal(err)
			}
			if err := cl.client.Update(ctx, u); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			check(b, d)
		}
	})
	b.Run("ifnotdrifted-all-drifted", func(b *testing.B) {
		d := benchDelivery(b, "drift-edited", configMaps("drift-edited", 1000))
		d.Binding.Spec.ApplyStrategy = fleet.DefaultApplyStrategy(&fleet.ApplyStrategy{WhenToApply: fleet.WhenToApplyTypeIfNotDrifted})
		check(b, d)
		for _, r := range d.Resources {
			if r.GetKind() != "ConfigMap" {
				continue
			}
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(r.GroupVersionKind())
			if err := cl.client.Get(ctx, client.ObjectKeyFromObject(r), u); err != nil {
				b.Fatal(err)
			}
			if err := unstructured.SetNestedField(u.Object, "edited", "data", "key"); err != nil {
				b.Fatal(err)
			}
			if err := cl.client.Update(ctx, u); err != nil {
				b.Fatal(err)
			}
		}
		for b.Loop() {
			if out := check(b, d); len(out.Drifted) != 990 {
				b.Fatalf("%d drifted, want 990", len(out.Drifted))
			}
		}
	})
	b.Run("reportdiff", func(b *testing.B) {
		d := benchDelivery(b, "drift-diff", workload("drift-diff", 1000))
		check(b, d)
		d.Binding.Spec.ApplyStrategy = fleet.DefaultApplyStrategy(&fleet.ApplyStrategy{Type: fleet.ApplyStrategyTypeReportDiff})
		for b.Loop() {
			diffed, err := cl.reportDiff(ctx, d, d.Binding.Spec.ApplyStrategy)
			if err != nil {
				b.Fatal(err)
			}
			if len(diffed) != 0 {
				b.Fatalf("diffed = %+v, want none", diffed[0])
			}
		}
	})
}
