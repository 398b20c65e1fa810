package gitsource

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkFetchNoChange measures a poll that finds nothing new: one
// round trip to a local bare repository (git-upload-pack over file://).
func BenchmarkFetchNoChange(b *testing.B) {
	f := newFixture(b)
	s := f.open(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Fetch(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyStatus measures one status pass: 100 changed status files
// committed and pushed (git-receive-pack over file://).
func BenchmarkApplyStatus(b *testing.B) {
	f := newFixture(b)
	s := f.open(b)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		ch := Change{Message: "status pass", Writes: make(map[string][]byte, 100)}
		for j := range 100 {
			ch.Writes[fmt.Sprintf("status/bindings/p%d/cluster-%03d.yaml", j%5, j)] = fmt.Appendf(nil, "pass: %d\nphase: Applied\n", i)
		}
		res, err := s.Apply(ctx, ch)
		if err != nil {
			b.Fatal(err)
		}
		if !res.Created {
			b.Fatal("no commit")
		}
		i++
	}
}
