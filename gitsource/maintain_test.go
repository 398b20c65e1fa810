package gitsource

import (
	"fmt"
	"testing"
)

// Status commits and fetches leave a pack each in the cache. Maintain
// repacks the cache fully the first time, then merges the packs into one
// until they have grown to twice what the repack left, then repacks again;
// the cache stays whole (git fsck) and keeps working: fetch, read and
// apply after each.
func TestMaintainMergesThePacksAndRepacksWhenTheCacheDoubled(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	s := f.open(t)
	cache := s.GitDir()
	pass, human := 0, 0
	status := func(n int) {
		t.Helper()
		for range n {
			pass++
			if _, err := s.Apply(ctx, Change{Message: "status", Writes: map[string][]byte{
				"status/runs/r.yaml": fmt.Appendf(nil, "pass: %d\n", pass),
			}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	maintain := func(step string, wantRepacked bool) MaintainReport {
		t.Helper()
		r, err := s.Maintain(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %+v", step, r)
		if r.Repacked != wantRepacked || r.Before.Packs < 2 || r.After.Packs != 1 || r.After.LooseObjects != 0 {
			t.Fatalf("%s: %+v; want repacked %v and the packs made one", step, r, wantRepacked)
		}
		fsck(t, cache)
		human++
		if err := humanPush(f.work, human); err != nil {
			t.Fatal(err)
		}
		head, err := s.Fetch(ctx)
		if err != nil || head.Commit != f.remoteTip(t, "main") {
			t.Fatalf("%s: Fetch after Maintain: %v, %v", step, head, err)
		}
		if data, err := s.ReadFile(ctx, head.Commit, "status/runs/r.yaml"); err != nil || string(data) != fmt.Sprintf("pass: %d\n", pass) {
			t.Fatalf("%s: ReadFile after Maintain: %q, %v", step, data, err)
		}
		return r
	}

	status(10)
	first := maintain("first", true)
	if first.After.DiskBytes >= first.Before.DiskBytes {
		t.Fatalf("the first repack left %d bytes on disk of %d", first.After.DiskBytes, first.Before.DiskBytes)
	}
	status(1)
	merged := maintain("a little later", false)
	if merged.After.PackBytes > 2*first.After.PackBytes {
		t.Fatalf("the merge left %d bytes of packs; the repack left %d", merged.After.PackBytes, first.After.PackBytes)
	}
	status(40)
	maintain("the cache doubled", true)
	status(1)
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
		r, err := s.Maintain(ctxT(b))
		if err != nil {
			b.Fatal(err)
		}
		before, after := r.Before, r.After
		b.ReportMetric(float64(before.DiskBytes)/1024, "disk-KiB-before")
		b.ReportMetric(float64(before.LooseObjects), "loose-before")
		b.ReportMetric(float64(before.Packs), "packs-before")
		b.ReportMetric(float64(after.DiskBytes)/1024, "disk-KiB-after")
		b.ReportMetric(float64(after.LooseObjects), "loose-after")
	}
}
