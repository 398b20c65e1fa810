package simulate

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
)

// fleetOf returns a repository of n simulated members in ten stages
// (label stage=<i>), maxConcurrency 10%, one config map, and a run.
func fleetOf(n int) map[string][]byte {
	var members strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&members, `---
apiVersion: cluster.kubernetes-fleet.io/v1beta1
kind: MemberCluster
metadata:
  name: member-%05d
  labels: {stage: "%d"}
  annotations: {gitfleet.io/driver: simulated}
spec: {}
`, i, i%10)
	}
	var stages strings.Builder
	for s := 0; s < 10; s++ {
		fmt.Fprintf(&stages, "    - name: stage%d\n      labelSelector: {matchLabels: {stage: \"%d\"}}\n      maxConcurrency: \"10%%\"\n", s, s)
	}
	return map[string][]byte{
		"members.yaml": []byte(members.String()),
		"fleet.yaml": []byte(`apiVersion: v1
kind: Namespace
metadata: {name: app}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: app-config, namespace: app}
data: {key: value}
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourcePlacement
metadata: {name: app}
spec:
  resourceSelectors: [{group: "", version: v1, kind: Namespace, name: app}]
  policy: {placementType: PickAll}
  strategy: {type: External}
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateStrategy
metadata: {name: ten-stages}
spec:
  stages:
` + stages.String() + `---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateRun
metadata: {name: rollout}
spec: {placementName: app, stagedRolloutStrategyName: ten-stages, state: Run}
`),
	}
}

var (
	writeFleet    = flag.String("write-fleet", "", "TestWriteFleetRepo writes a fleet repository (fleetOf) into this new folder")
	fleetClusters = flag.Int("fleet-clusters", 10000, "members of the repository -write-fleet writes")
)

// TestWriteFleetRepo is a helper, not a check: it writes the benchmarks'
// fleet repository to disk so the CLI can be measured on it, e.g.
//
//	go test ./gitsource/simulate -run TestWriteFleetRepo -args -write-fleet=/tmp/fleet10k -fleet-clusters=10000
//	/usr/bin/time -v bin/gitfleet simulate --repo /tmp/fleet10k -o yaml >/dev/null
func TestWriteFleetRepo(t *testing.T) {
	if *writeFleet == "" {
		t.Skip("pass -write-fleet=DIR to write a fleet repository")
	}
	if err := os.Mkdir(*writeFleet, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range fleetOf(*fleetClusters) {
		if err := os.WriteFile(filepath.Join(*writeFleet, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"commit", "-q", "-m", "fleet"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = *writeFleet
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=dev", "GIT_AUTHOR_EMAIL=dev@example.com",
			"GIT_COMMITTER_NAME=dev", "GIT_COMMITTER_EMAIL=dev@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// peakHeap samples the heap every millisecond while a benchmark runs, so it
// can report the peak (live objects and garbage not yet collected, what the
// process's memory follows), not what it allocated in total.
type peakHeap struct {
	stop, done chan struct{}
	peak       uint64
}

func watchPeakHeap() *peakHeap {
	runtime.GC()
	p := &peakHeap{stop: make(chan struct{}), done: make(chan struct{})}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			p.peak = max(p.peak, sample[0].Value.Uint64())
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

// MiB stops sampling and returns the peak in MiB.
func (p *peakHeap) MiB() float64 {
	close(p.stop)
	<-p.done
	return float64(p.peak) / (1 << 20)
}

// BenchmarkSimulateFleet is the whole of `gitfleet simulate` on a fleet:
// render, scheduler, engine, simulated delivery and placement status, in
// virtual time, from the commit to a Succeeded run.
func BenchmarkSimulateFleet(b *testing.B) {
	benchmarkFleets(b, func(b *testing.B, repo string) {
		res, err := Run(context.Background(), Options{Repo: repo})
		if err != nil {
			b.Fatal(err)
		}
		run, err := res.Hub.GetUpdateRun(context.Background(), keyOf("rollout"))
		if err != nil || run.Phase() != "Succeeded" {
			b.Fatalf("run did not succeed: %v %v", err, run.Status.Conditions)
		}
	})
}

// BenchmarkSimulateFleetYAML is `gitfleet simulate -o yaml` on a fleet:
// the simulation and the YAML stream of the final objects, written to
// io.Discard.
//
//	go test ./gitsource/simulate -run '^$' -bench SimulateFleetYAML -benchtime 1x
func BenchmarkSimulateFleetYAML(b *testing.B) {
	benchmarkFleets(b, func(b *testing.B, repo string) {
		res, err := Run(context.Background(), Options{Repo: repo, NoTimeline: true})
		if err != nil {
			b.Fatal(err)
		}
		if err := WriteObjects(context.Background(), io.Discard, res.Hub); err != nil {
			b.Fatal(err)
		}
	})
}

// benchmarkFleets runs op on fleets of 1,000 and 10,000 clusters and
// reports the peak heap (peak-heap-MiB) besides time and allocations.
func benchmarkFleets(b *testing.B, op func(b *testing.B, repo string)) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			repo := newRepo(b, fleetOf(n))
			b.ReportAllocs()
			b.ResetTimer()
			peak := watchPeakHeap()
			for i := 0; i < b.N; i++ {
				op(b, repo)
			}
			b.StopTimer()
			b.ReportMetric(peak.MiB(), "peak-heap-MiB")
		})
	}
}
