package gitsource

import (
	"fmt"
	"testing"
)

// Status commits leave a pack each in the cache; Maintain packs them into
// one and the cache keeps working: fetch, read and apply after it.
func TestMaintainPacksTheCacheAndItKeepsWorking(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	s := f.open(t)
	applyN(t, s, 10)
	before, after, err := s.Maintain(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cache before: %+v, after: %+v", before, after)
	if before.Packs < 2 || after.Packs != 1 || after.LooseObjects != 0 || after.DiskBytes >= before.DiskBytes {
		t.Fatalf("Maintain: before %+v, after %+v; want the packs of the commits packed into one and a smaller cache", before, after)
	}

	if err := humanPush(f.work, 1); err != nil {
		t.Fatal(err)
	}
	head, err := s.Fetch(ctx)
	if err != nil || head.Commit != f.remoteTip(t, "main") {
		t.Fatalf("Fetch after Maintain: %v, %v", head, err)
	}
	if data, err := s.ReadFile(ctx, head.Commit, "status/runs/r.yaml"); err != nil || string(data) != "pass: 9\n" {
		t.Fatalf("ReadFile after Maintain: %q, %v", data, err)
	}
	applyN(t, s, 1)
}

func applyN(t testing.TB, s *Source, n int) {
	t.Helper()
	for i := range n {
		res, err := s.Apply(ctxT(t), Change{Message: "status", Writes: map[string][]byte{
			"status/runs/r.yaml":                      fmt.Appendf(nil, "pass: %d\n", i),
			fmt.Sprintf("status/passes/%04d.yaml", i): []byte("done\n"),
		}})
		if err != nil || !res.Created {
			t.Fatalf("Apply %d: %+v, %v", i, res, err)
		}
	}
}

// BenchmarkCacheAfterStatusCommits reports the cache size after 1,000
// status commits, as left by Apply and after Maintain.
func BenchmarkCacheAfterStatusCommits(b *testing.B) {
	for b.Loop() {
		f := newFixture(b)
		s := f.open(b)
		applyN(b, s, 1000)
		before, after, err := s.Maintain(ctxT(b))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(before.DiskBytes)/1024, "disk-KiB-before")
		b.ReportMetric(float64(before.LooseObjects), "loose-before")
		b.ReportMetric(float64(before.Packs), "packs-before")
		b.ReportMetric(float64(after.DiskBytes)/1024, "disk-KiB-after")
		b.ReportMetric(float64(after.LooseObjects), "loose-after")
	}
}
