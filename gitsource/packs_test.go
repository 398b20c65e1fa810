package gitsource

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage/memory"
)

// BenchmarkWritePack writes to the cache the pack a push sent for a
// commit of 3,000 binding files, a status commit of a 10,000-cluster
// fleet's batch:
//
//	go test ./gitsource -run '^$' -bench WritePack
func BenchmarkWritePack(b *testing.B) {
	f := newFixture(b)
	s := f.open(b)
	mem := memory.NewStorage()
	var hashes []plumbing.Hash
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
		hashes, raw = append(hashes, h), raw+int(o.Size())
	}
	var pack bytes.Buffer
	if _, err := packfile.NewEncoder(&pack, mem, false).Encode(hashes, packWindow); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(raw))
	b.ReportMetric(float64(pack.Len()), "pack-bytes")
	for b.Loop() {
		if _, err := s.built.writePack(pack.Bytes()); err != nil {
			b.Fatal(err)
		}
	}
}
