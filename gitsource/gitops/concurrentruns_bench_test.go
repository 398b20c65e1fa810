package gitops_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource/gitops"
	"github.com/gitfleet/gitfleet/gitsource/simulate"
	"github.com/gitfleet/gitfleet/internal/testing/fleettest"
	"github.com/gitfleet/gitfleet/internal/testing/runtimes"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/status"
)

var (
	concurrentRunsShape   = fleettest.ScaleFlags("concurrent", "BenchmarkConcurrentRuns", 1000)
	concurrentGroupCommit = flag.Duration("concurrent-group-commit", gitops.DefaultGroupCommit, "the daemon's GroupCommit in BenchmarkConcurrentRuns (0: one commit and push per pass)")
	concurrentPushLatency = flag.Duration("concurrent-push-latency", 0, "how long the remote's post-receive hook of BenchmarkConcurrentRuns sleeps: a forge's round trip, which a local remote does not have")
)

// BenchmarkConcurrentRuns is KubeFleet's published scale test through Git
// on the embedded hub: members simulated, a bare file:// remote with a
// post-receive hook (as a forge has), serve's status batching, and the
// runs of every placement pushed in one commit. It reports push→Succeeded
// of the runs (p50, p90, max: when the push that made each run Succeeded
// returned), the status commits the runs took, the bytes they added to the
// remote, serve's CPU (this process, which runs the daemon) beside git's
// (its children) and beside `gitfleet simulate` of the same repository
// from scratch, and serve's peak RSS and heap (-bench-serve-cpuprofile
// profiles the daemon while the runs go on).
//
//	go test ./gitsource/gitops -run '^$' -bench ConcurrentRuns -benchtime 1x -timeout 45m \
//	    -args -concurrent-runs 100 -concurrent-clusters 100 -concurrent-members 1000 -concurrent-stages 3
func BenchmarkConcurrentRuns(b *testing.B) {
	shape := *concurrentRunsShape
	shape.Driver = fleet.DriverSimulated
	if err := shape.Check(); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		benchmarkConcurrentRuns(b, shape)
	}
}

func benchmarkConcurrentRuns(b *testing.B, shape fleettest.Scale) {
	b.StopTimer()
	clusters := shape.Runs * shape.ClustersPerRun
	r := newFleetRepo(b, shape.Fleet("v0"))
	hook := filepath.Join(r.remote, "hooks", "post-receive")
	script := "#!/bin/sh\ncat >/dev/null\n"
	if *concurrentPushLatency > 0 {
		script += fmt.Sprintf("sleep %.3f\n", concurrentPushLatency.Seconds())
	}
	if err := os.WriteFile(hook, []byte(script), 0o755); err != nil {
		b.Fatal(err)
	}
	w := newRunsWatcher()
	d := startDaemonWith(b, "file://"+r.remote, b.TempDir(), 100*time.Millisecond, func(c *gitops.Config) {
		c.StatusInterval = status.DefaultInterval // serve's
		c.GroupCommit = *concurrentGroupCommit
		c.Observer = w
	})
	within(b, "every placement's snapshot and bindings", pullBudget(shape.Members*20+clusters*10), 200*time.Millisecond, func() bool {
		n := 0
		for i := range shape.Runs {
			bs, err := d.Hub.ListBindings(context.Background(), hub.Key{Name: shape.PlacementName(i)})
			if err != nil {
				return false
			}
			n += len(bs)
		}
		return n == clusters && d.Controller.Idle() && d.Hub.Pending() == 0 && !d.Store.Pending()
	})
	waitFlushed(b, d)
	// The work tree takes the setup's status commits now, not in the
	// commit of the runs below: checking out 10,000 binding files took
	// 2.3 s of CPU, charged to git's children beside serve's pushes.
	if _, err := gitRun(r.work, "pull", "-q", "--rebase", "origin", "main"); err != nil {
		b.Fatal(err)
	}
	before := remoteSize(b, r)
	runtime.GC()
	mem := sampleMemory()
	stopProfile := sync.OnceFunc(startCPUProfile(b, fmt.Sprintf("%s.concurrent%dx%d", *benchCPUProfile, shape.Runs, shape.ClustersPerRun)))
	defer stopProfile() // also when a wait fails: the profile shows where it stood
	self, children := cpuTimes()

	b.StartTimer()
	const round = "r0"
	pushed := r.commit(fmt.Sprintf("%d runs at once", shape.Runs), map[string][]byte{"runs.yaml": shape.RunsFile(round)})
	start := time.Now()
	d.poke()
	names := make([]string, shape.Runs)
	for i := range names {
		names[i] = shape.RunName(round, i)
	}
	within(b, fmt.Sprintf("%d runs to succeed in Git", len(names)), pullBudget(clusters*50), 100*time.Millisecond,
		w.AllSucceeded(b, names, start, "the push", nil))
	b.StopTimer()
	self2, children2 := cpuTimes()
	stopProfile()
	peaks := mem.stop()
	waitFlushed(b, d)
	d.stop(b)

	commits := len(ownCommits(b, r, pushed+"..main"))
	added := remoteSize(b, r) - before

	runtime.GC()
	simSelf, _ := cpuTimes()
	if _, err := simulate.Run(context.Background(), simulate.Options{Repo: r.work, FromStatus: simulate.FromScratch,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}); err != nil {
		b.Fatal(err)
	}
	simSelf2, _ := cpuTimes()

	w.Report(b, names, start)
	b.ReportMetric(float64(commits), "status-commits")
	b.ReportMetric(float64(commits)*100/float64(shape.Runs), "commits/100runs")
	b.ReportMetric(float64(added)/float64(shape.Runs), "remote-bytes/run")
	b.ReportMetric((self2 - self).Seconds(), "serve-cpu-s")
	b.ReportMetric((children2 - children).Seconds(), "git-cpu-s")
	b.ReportMetric((simSelf2 - simSelf).Seconds(), "simulate-cpu-s")
	b.ReportMetric(mib(peaks.self), "serve-peak-MiB")
	b.ReportMetric(mib(peaks.heap), "serve-heap-peak-MiB")
}

// runsWatcher learns when each run was first pushed Succeeded from the
// status commits the daemon pushes (the runs' own files), without reading
// the hub.
type runsWatcher struct {
	fetchCounter
	*runtimes.Runs
}

func newRunsWatcher() *runsWatcher { return &runsWatcher{Runs: runtimes.New()} }

func (w *runsWatcher) Pushed(ch status.Changeset, _ time.Duration, _ int, err error) {
	if err != nil {
		return
	}
	now := time.Now()
	for p, data := range ch.Writes {
		if !strings.HasPrefix(p, "status/runs/") || !endsRun(data) {
			continue
		}
		obj, derr := status.Decode(data)
		run, ok := obj.(*fleet.UpdateRun)
		if derr != nil || !ok {
			continue
		}
		switch run.Phase() {
		case fleet.PhaseSucceeded:
			w.Succeed(run.Name, now)
		case fleet.PhaseFailed:
			w.Fail(run.Name, fmt.Sprintf("run %s failed", run.Name))
		}
	}
}

// endReasons are the reasons of a run's Succeeded condition, one of which
// the file of a run that ended holds.
var endReasons = [][]byte{[]byte(fleet.UpdateRunSucceededReason), []byte(fleet.UpdateRunFailedReason),
	[]byte(fleet.UpdateRunPartiallySucceededReason)}

// endsRun is a cheap look at a run's file for the end of the run: the
// watcher runs in serve's process, and decoding every run file serve
// pushed was a twelfth of the CPU the benchmark charged to serve.
func endsRun(data []byte) bool {
	return slices.ContainsFunc(endReasons, func(r []byte) bool { return bytes.Contains(data, r) })
}
