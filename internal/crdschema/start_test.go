package crdschema

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// BenchmarkWorkerStart is what a fresh render worker pays before its first
// object: config/crd's schemas built and one kind compiled.
func BenchmarkWorkerStart(b *testing.B) {
	b.ReportAllocs()
	gvk := schema.GroupVersionKind{Group: "cluster.kubernetes-fleet.io", Version: "v1beta1", Kind: "MemberCluster"}
	for b.Loop() {
		if _, ok := loadFleet().For(gvk); !ok {
			b.Fatal("no MemberCluster")
		}
	}
}
