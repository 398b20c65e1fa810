package gitsource

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"
)

// BenchmarkWritePack encodes the pack a push sends for a commit of 3,000
// binding files (a status commit of a 10,000-cluster fleet's batch) and
// writes it to the cache:
//
//	go test ./gitsource -run '^$' -bench WritePack
func BenchmarkWritePack(b *testing.B) {
	f := newFixture(b)
	s := f.open(b)
	mem := memory.NewStorage()
	var objects []pushObject
	dir := plumbing.NewHash("5e0ffa0f0bd2e6e1e6b3a7b5e1f8e2d7c3a1b0c9") // one placement's bindings
	raw := 0
	for i := range 3000 {
		o := blob(fmt.Appendf(nil, `apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourceBinding
metadata:
  name: app-member-%04d
spec:
  state: Bound
  targetCluster: member-%04d
  resourceSnapshotName: app-0-snapshot
status:
  conditions:
  - type: RolloutStarted
    status: "True"
    reason: RolloutStarted
    message: Detected the new changes on the resources and started the rollout process
    lastTransitionTime: "2026-11-25T03:00:00Z"
    observedGeneration: 2
`, i, i))
		h, err := mem.SetEncodedObject(o)
		if err != nil {
			b.Fatal(err)
		}
		objects, raw = append(objects, pushObject{hash: h, dir: dir}), raw+int(o.Size())
	}
	var pack bytes.Buffer
	b.SetBytes(int64(raw))
	for b.Loop() {
		pack.Reset()
		index, checksum, err := encodePack(&pack, mem, objects, false)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := s.built.writePack(pack.Bytes(), index, checksum); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(pack.Len()), "pack-bytes")
}
