package gitops_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"
	"k8s.io/apimachinery/pkg/api/meta"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/gitsource/gitops"
	"github.com/gitfleet/gitfleet/gitsource/simulate"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/status"
)

// syncObserver tells a benchmark when the daemon processed a commit.
type syncObserver struct {
	fetchCounter
	processed   chan processedCommit
	renders     atomic.Int64
	renderNanos atomic.Int64
}

type processedCommit struct {
	hash      string
	snapshots int
}

func newSyncObserver() *syncObserver {
	return &syncObserver{processed: make(chan processedCommit, 4096)}
}

func (o *syncObserver) RenderFailed(*object.Commit, string) {}

func (o *syncObserver) Rendered(d time.Duration) {
	o.renders.Add(1)
	o.renderNanos.Add(int64(d))
}

func (o *syncObserver) Processed(c *object.Commit, snapshots int) {
	select {
	case o.processed <- processedCommit{c.Hash.String(), snapshots}:
	default:
	}
}

var _ gitops.Observer = (*syncObserver)(nil)

// waitProcessed returns the first report about commit.
func (o *syncObserver) waitProcessed(b *testing.B, commit string) processedCommit {
	b.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case p := <-o.processed:
			if p.hash == commit {
				return p
			}
		case <-timeout:
			b.Fatalf("commit %s was not processed in 60s", commit)
		}
	}
}

// drain forgets earlier reports.
func (o *syncObserver) drain() {
	for {
		select {
		case <-o.processed:
		default:
			return
		}
	}
}

// waitFlushed waits until the daemon has no status left to push.
func waitFlushed(b testing.TB, d *daemon) {
	b.Helper()
	eventually(b, "status to be pushed", func() bool { return !d.Store.Pending() })
}

// configMapFleet is a namespace of n ConfigMaps, one file each, selected
// by one placement; with kustomize, a kustomization.yaml lists them all.
func configMapFleet(n int, kustomize bool) map[string][]byte {
	files := map[string][]byte{
		"namespace.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: bench\n"),
		"placement.yaml": []byte(`apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourcePlacement
metadata:
  name: bench
spec:
  resourceSelectors:
    - group: ""
      kind: Namespace
      name: bench
      version: v1
  policy:
    placementType: PickAll
  strategy:
    type: External
`),
		"README.md": []byte("# bench\n"),
	}
	resources := []string{"namespace.yaml", "placement.yaml"}
	for i := range n {
		name := fmt.Sprintf("cms/cm-%04d.yaml", i)
		files[name] = configMap(i, "v0")
		resources = append(resources, name)
	}
	if kustomize {
		files["kustomization.yaml"] = []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - " +
			strings.Join(resources, "\n  - ") + "\n")
	}
	return files
}

func configMap(i int, value string) []byte {
	return fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%04d\n  namespace: bench\ndata:\n  key: %q\n  index: \"%d\"\n", i, value, i)
}

// BenchmarkCommitToSnapshot measures the daemon's sync of one pushed commit
// in a repository of 1,000 selected ConfigMaps: from the "fetch now" signal
// (webhook or poll) to the commit processed — fetched, rendered, and its
// resource snapshot recorded in the hub. A commit that changes no rendered
// file (README.md) records no snapshot.
//
//	go test ./gitsource/gitops/ -run '^$' -bench CommitToSnapshot -benchtime 20x
func BenchmarkCommitToSnapshot(b *testing.B) {
	for _, kustomize := range []bool{false, true} {
		variant := "plain"
		if kustomize {
			variant = "kustomize"
		}
		for _, change := range []string{"one-configmap", "readme"} {
			b.Run(variant+"/"+change, func(b *testing.B) {
				r := newFleetRepo(b, configMapFleet(1000, kustomize))
				obs := newSyncObserver()
				d := startDaemonWith(b, "file://"+r.remote, b.TempDir(), 0, func(c *gitops.Config) { c.Observer = obs })
				snapshots := 0
				rendersBefore, renderNanosBefore := obs.renders.Load(), obs.renderNanos.Load()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					waitFlushed(b, d)
					var files map[string][]byte
					if change == "readme" {
						files = map[string][]byte{"README.md": fmt.Appendf(nil, "# bench %d\n", i)}
					} else {
						files = map[string][]byte{fmt.Sprintf("cms/cm-%04d.yaml", i%1000): configMap(i%1000, fmt.Sprintf("v%d", i+1))}
					}
					h := r.commit(fmt.Sprintf("change %d", i), files)
					obs.drain()
					b.StartTimer()
					d.poke()
					p := obs.waitProcessed(b, h)
					snapshots += p.snapshots
				}
				b.StopTimer()
				b.ReportMetric(float64(snapshots)/float64(b.N), "snapshots/op")
				renders := obs.renders.Load() - rendersBefore
				b.ReportMetric(float64(renders)/float64(b.N), "renders/op")
				if renders > 0 {
					b.ReportMetric(float64(obs.renderNanos.Load()-renderNanosBefore)/float64(renders)/1e6, "render-ms")
				}
				want := 1
				if change == "readme" {
					want = 0
				}
				if snapshots != want*b.N {
					b.Errorf("%d snapshots for %d commits, want %d each", snapshots, b.N, want)
				}
			})
		}
	}
}

// stagedFleet is n simulated members, available at once, rolled out in one
// stage at maxConcurrency; no run yet.
func stagedFleet(n int, maxConcurrency string) map[string][]byte {
	return stagedFleetStages(n, 1, maxConcurrency)
}

// stagedFleetStages is stagedFleet in the given number of stages (prod0,
// prod1, ...): member i goes to stage i%stages, by its label "stage".
func stagedFleetStages(n, stages int, maxConcurrency string) map[string][]byte {
	var members bytes.Buffer
	for i := range n {
		fmt.Fprintf(&members, `---
apiVersion: cluster.kubernetes-fleet.io/v1beta1
kind: MemberCluster
metadata:
  name: member-%04d
  labels:
    environment: prod
    stage: s%d
  annotations:
    gitfleet.io/driver: simulated
    gitfleet.io/sim-available-after: 0s
spec:
  identity:
    kind: ServiceAccount
    name: fleet-member-agent-member-%04d
    namespace: fleet-system
`, i, i%stages, i)
	}
	var strategy bytes.Buffer
	strategy.WriteString(`apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateStrategy
metadata:
  name: all-at-once
spec:
  stages:
`)
	for s := range stages {
		selector := "environment: prod"
		if stages > 1 {
			selector = fmt.Sprintf("stage: s%d", s)
		}
		fmt.Fprintf(&strategy, `    - name: prod%s
      maxConcurrency: %s
      labelSelector:
        matchLabels:
          %s
`, strings.Repeat(strconv.Itoa(s), min(stages-1, 1)), maxConcurrency, selector)
	}
	return map[string][]byte{
		"members.yaml": members.Bytes(),
		"workload.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: app\n---\napiVersion: v1\nkind: ConfigMap\n" +
			"metadata:\n  name: app\n  namespace: app\ndata:\n  key: value1\n"),
		"placement.yaml": []byte(`apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourcePlacement
metadata:
  name: app
spec:
  resourceSelectors:
    - group: ""
      kind: Namespace
      name: app
      version: v1
  policy:
    placementType: PickAll
  strategy:
    type: External
`),
		"strategy.yaml": strategy.Bytes(),
	}
}

func runFile(name string) []byte {
	return fmt.Appendf(nil, `apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateRun
metadata:
  name: %s
spec:
  placementName: app
  stagedRolloutStrategyName: all-at-once
  state: Run
`, name)
}

// firstClusterStarted reports whether a run in the hub has a cluster with
// Started=True.
func firstClusterStarted(run *fleet.UpdateRun) bool {
	for _, st := range run.Status.StagesStatus {
		for _, c := range st.Clusters {
			if meta.IsStatusConditionTrue(c.Conditions, fleet.ClusterUpdatingConditionStarted) {
				return true
			}
		}
	}
	return false
}

// BenchmarkWebhookToFirstClusterStarted measures, with polling off, the
// time from a signed push webhook announcing a commit — a workload change
// and a new run file rolling it out — to the run's first cluster Started in
// the hub (its guarding status commit included: the engine persists before
// it delivers).
//
//	go test ./gitsource/gitops/ -run '^$' -bench WebhookToFirstClusterStarted -benchtime 20x
func BenchmarkWebhookToFirstClusterStarted(b *testing.B) {
	secret := []byte("bench")
	files := stagedFleet(3, "1")
	r := newFleetRepo(b, files)
	d := startDaemon(b, "file://"+r.remote, b.TempDir(), 0)
	srv := httptest.NewServer(&gitsource.Webhook{Secret: secret, Notify: d.poke, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer srv.Close()
	runOf := func(name string) *fleet.UpdateRun {
		run, err := d.Hub.GetUpdateRun(context.Background(), hub.Key{Name: name})
		if err != nil {
			return nil
		}
		return run
	}

	var took, inGit []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		name := fmt.Sprintf("run-%d", i)
		workload := strings.Replace(string(files["workload.yaml"]), "key: value1", fmt.Sprintf("key: value-%d", i), 1)
		r.commit("roll out value "+name, map[string][]byte{"workload.yaml": []byte(workload), name + ".yaml": runFile(name)})
		b.StartTimer()
		start := time.Now()
		if code := postWebhook(b, srv.URL, pushPayload, map[string]string{gitsource.HeaderGitHubSignature: githubSignature(pushPayload, secret)}); code != http.StatusAccepted {
			b.Fatalf("webhook: %d", code)
		}
		for run := runOf(name); run == nil || !firstClusterStarted(run); run = runOf(name) {
			if time.Since(start) > 30*time.Second {
				b.Fatalf("no cluster of %s started within 30s of the webhook:\n%s", name, encode(b, run))
			}
			time.Sleep(time.Millisecond)
		}
		took = append(took, time.Since(start))
		b.StopTimer()
		for run := r.run(name); run == nil || !firstClusterStarted(run); run = r.run(name) {
			if time.Since(start) > 30*time.Second {
				b.Fatalf("no cluster of %s started in Git within 30s of the webhook", name)
			}
			time.Sleep(time.Millisecond)
		}
		inGit = append(inGit, time.Since(start))
		eventually(b, name+" to succeed", func() bool {
			run := runOf(name)
			return run != nil && run.Phase() == fleet.PhaseSucceeded
		})
		waitFlushed(b, d)
		b.StartTimer()
	}
	b.StopTimer()
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	median := took[len(took)/2]
	b.ReportMetric(float64(median)/1e6, "median-ms")
	b.ReportMetric(float64(took[len(took)-1])/1e6, "max-ms")
	sort.Slice(inGit, func(i, j int) bool { return inGit[i] < inGit[j] })
	b.ReportMetric(float64(inGit[len(inGit)/2])/1e6, "in-git-median-ms")
	if median > time.Second {
		b.Errorf("median webhook → first cluster Started is %s, want ≤ 1s", median)
	}
}

// benchClusters are the fleet sizes of the Git-scale benchmarks. 10,000
// takes minutes, so it runs only when asked for:
//
//	go test ./gitsource/gitops/ -run '^$' -bench StatusCommitsPerRun -benchtime 1x -args -bench-clusters 1000,10000
var benchClusters = flag.String("bench-clusters", "100,1000", "comma-separated fleet sizes of BenchmarkStatusCommitsPerRun")

// benchStages are the numbers of stages of BenchmarkStatusCommitsPerRun.
var benchStages = flag.String("bench-stages", "1,10", "comma-separated numbers of stages of BenchmarkStatusCommitsPerRun")

// benchStatusInterval is the daemon's StatusInterval in
// BenchmarkStatusCommitsPerRun: serve's default, as `gitfleet serve` runs.
var benchStatusInterval = flag.Duration("bench-status-interval", status.DefaultInterval, "StatusInterval of the daemon in BenchmarkStatusCommitsPerRun")

// benchCPUProfile, if set, is where BenchmarkStatusCommitsPerRun writes a
// CPU profile of the serve loop of its run (from the run's push to its
// status pushed), one file per case: <path>.<clusters>x<stages>.
var benchCPUProfile = flag.String("bench-serve-cpuprofile", "", "write a CPU profile of each serve run to this path prefix")

// commaInts parses a comma-separated flag of numbers.
func commaInts(b *testing.B, name, value string) []int {
	var out []int
	for _, f := range strings.Split(value, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			b.Fatalf("-%s: %v", name, err)
		}
		out = append(out, n)
	}
	return out
}

// BenchmarkStatusCommitsPerRun rolls one run out to simulated clusters in
// 1 and in 10 stages at maxConcurrency 10% and measures what it cost:
// commits and bytes that gitfleet added to the remote (new status blobs, by
// folder, uncompressed; and the remote's object files, compressed), the CPU of the
// serve loop against that of `simulate` of the same repository, and the
// peak heap. Commits follow the passes that start work, not the number of
// clusters; bytes follow what changed.
//
//	go test ./gitsource/gitops/ -run '^$' -bench StatusCommitsPerRun -benchtime 1x
func BenchmarkStatusCommitsPerRun(b *testing.B) {
	for _, n := range commaInts(b, "bench-clusters", *benchClusters) {
		for _, stages := range commaInts(b, "bench-stages", *benchStages) {
			b.Run(fmt.Sprintf("clusters=%d/stages=%d", n, stages), func(b *testing.B) {
				var commits, remoteBytes int
				var serveCPU, gitCPU time.Duration
				simCPU := map[string]time.Duration{}
				var peak uint64
				written := map[string]int{}
				onDisk := map[string]int{}
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					r := newFleetRepo(b, stagedFleetStages(n, stages, `"10%"`))
					w := &runWatcher{}
					// serve's own batching of status commits (StatusInterval), not the tests' 50 ms
					d := startDaemonWith(b, "file://"+r.remote, b.TempDir(), 50*time.Millisecond, func(c *gitops.Config) {
						c.StatusInterval = *benchStatusInterval
						w.watchRun(c)
					})
					eventually(b, "the placement's snapshot and bindings", func() bool {
						bs, err := d.Hub.ListBindings(context.Background(), hub.Key{Name: "app"})
						return err == nil && len(bs) == n && !d.Store.Pending()
					})
					waitFlushed(b, d)
					before := remoteSize(b, r)
					runtime.GC()
					heap := watchHeap()
					stopProfile := startCPUProfile(b, fmt.Sprintf("%s.%dx%d", *benchCPUProfile, n, stages))
					self, children := cpuTimes()
					b.StartTimer()
					runCommit := pushRunUntilSucceeded(b, r, d, w)
					b.StopTimer()
					self2, children2 := cpuTimes()
					stopProfile()
					writeHeapProfile(b, fmt.Sprintf("heap-run-%dx%d.pprof", n, stages))
					serveCPU += self2 - self
					gitCPU += children2 - children
					peak = max(peak, heap())
					d.stop(b)
					remoteBytes += remoteSize(b, r) - before
					if run := r.waitPhase("run", fleet.PhaseSucceeded); run == nil {
						b.Fatal("the run did not succeed in Git")
					}
					own := ownCommits(b, r, runCommit+"..main")
					commits += len(own)
					for k, v := range newBlobBytes(b, r, own) {
						written[k] += v
					}
					for k, v := range newObjectDiskBytes(b, r, runCommit+"..main") {
						onDisk[k] += v
					}
					// simulate of the repository serve wrote to starts from
					// the status it recorded (the default); from scratch it
					// replays the branch into an empty hub, the engine's
					// own cost of the run.
					for _, from := range []string{simulate.FromTip, simulate.FromScratch} {
						runtime.GC()
						self, _ = cpuTimes()
						if _, err := simulate.Run(context.Background(), simulate.Options{Repo: r.work, FromStatus: from,
							Log: slog.New(slog.NewTextHandler(io.Discard, nil))}); err != nil {
							b.Fatal(err)
						}
						self2, _ = cpuTimes()
						simCPU[from] += self2 - self
					}
				}
				per := func(v int) float64 { return float64(v) / float64(b.N) }
				b.ReportMetric(per(commits), "commits/run")
				b.ReportMetric(per(written[""])/float64(n), "status-bytes/cluster")
				b.ReportMetric(per(remoteBytes)/float64(n), "remote-bytes/cluster")
				b.ReportMetric(per(written["status/runs"]), "run-file-bytes/run")
				b.ReportMetric(per(written["status/bindings"]), "binding-bytes/run")
				b.ReportMetric(per(written["status/placements"]), "placement-bytes/run")
				for _, kind := range []string{"commit", "tree", "blob"} {
					b.ReportMetric(per(onDisk[kind])/float64(n), kind+"-disk-bytes/cluster")
				}
				folders := make([]string, 0, len(onDisk))
				for k := range onDisk {
					folders = append(folders, k)
				}
				sort.Strings(folders)
				for _, k := range folders {
					b.Logf("on disk, %s: %.0f bytes/cluster", k, per(onDisk[k])/float64(n))
				}
				b.ReportMetric(serveCPU.Seconds()/float64(b.N), "serve-cpu-s")
				b.ReportMetric(gitCPU.Seconds()/float64(b.N), "git-cpu-s")
				b.ReportMetric(simCPU[simulate.FromTip].Seconds()/float64(b.N), "simulate-cpu-s")
				b.ReportMetric(simCPU[simulate.FromScratch].Seconds()/float64(b.N), "simulate-scratch-cpu-s")
				b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			})
		}
	}
}

// BenchmarkSerialStage measures a stage of 100 instantly available
// clusters at maxConcurrency 1 through Git, from the run's push to
// Succeeded pushed (push-to-succeeded-s, the moment the daemon's push of
// it returned): one guarded commit and push per cluster, with serve's
// default status batching and group commit (at maxConcurrency 1 no other
// pass is under way when a cluster's pass ends, so its group commits at
// once rather than after the window). push-to-flushed-s goes on until
// every status change is pushed, the placement's last update included.
//
// The floor is one guarded push per cluster: push-ms replays the changes
// of the daemon's own commits of the run, one after the other, through a
// gitsource.Source of its own on the same remote, right after the run and
// at the same load (the same files and sizes: the run's status and the
// bindings of the cluster that finished and the one that started).
// beyond-push-ms/cluster is what a cluster's step costs besides that push:
// the engine's pass, the member's report, the status encoding and the
// group's bookkeeping.
//
//	go test ./gitsource/gitops/ -run '^$' -bench SerialStage -benchtime 1x [-args -serial-group-commit=0]
var serialGroupCommit = flag.Duration("serial-group-commit", gitops.DefaultGroupCommit, "the daemon's GroupCommit in BenchmarkSerialStage (0: one commit and push per pass)")

func BenchmarkSerialStage(b *testing.B) {
	const n = 100
	var took, flushed, push time.Duration
	var commits int
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		r := newFleetRepo(b, stagedFleet(n, "1"))
		w := &runWatcher{}
		// No polling: serve polls every 30 s, and a fetch holds the
		// source while it runs, so the harness's usual poll (every 50 ms)
		// put one fetch before every other push. The run's push pokes the
		// daemon.
		d := startDaemonWith(b, "file://"+r.remote, b.TempDir(), 0, func(c *gitops.Config) {
			c.StatusInterval = status.DefaultInterval
			c.GroupCommit = *serialGroupCommit
			w.watchRun(c)
		})
		eventually(b, "the placement's snapshot and bindings", func() bool {
			bs, err := d.Hub.ListBindings(context.Background(), hub.Key{Name: "app"})
			return err == nil && len(bs) == n && !d.Store.Pending()
		})
		waitFlushed(b, d)
		b.StartTimer()
		start := time.Now()
		runCommit := pushRunUntilSucceeded(b, r, d, w)
		flushed += time.Since(start)
		took += w.succeededAt().Sub(start)
		b.StopTimer()
		d.stop(b)
		own := ownCommits(b, r, runCommit+"..main")
		commits += len(own)
		push += replayPushes(b, r, own)
	}
	perCluster := float64(took.Milliseconds()) / float64(b.N) / n
	pushMS := float64(push.Microseconds()) / 1000 / float64(b.N)
	b.ReportMetric(took.Seconds()/float64(b.N), "push-to-succeeded-s")
	b.ReportMetric(flushed.Seconds()/float64(b.N), "push-to-flushed-s")
	b.ReportMetric(perCluster, "ms/cluster")
	b.ReportMetric(pushMS, "push-ms")
	b.ReportMetric(perCluster-pushMS, "beyond-push-ms/cluster")
	b.ReportMetric(float64(commits)/float64(b.N), "commits/run")
}

// replayPushes pushes again, through a gitsource.Source of its own on r's
// remote, the files that own's commits changed (own as git rev-list lists
// them, newest first), with their content at each commit, oldest first:
// the changes a run's steps pushed, without the daemon around them. It
// returns the mean time of one guarded commit and push (Source.Apply).
func replayPushes(b testing.TB, r *fleetRepo, own []string) time.Duration {
	b.Helper()
	ctx := context.Background()
	src, err := gitsource.Open(ctx, gitsource.Config{URL: "file://" + r.remote, Branch: "main", CacheDir: b.TempDir(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	var took time.Duration
	pushes := 0
	// The steps of the stage: not the run's first commit nor its last
	// ones (the placement's status).
	for i := len(own) - 2; i >= 2; i-- {
		writes := map[string][]byte{}
		for _, p := range strings.Fields(r.git("diff-tree", "-r", "--name-only", "--no-commit-id", "--diff-filter=AM", own[i])) {
			data, err := exec.Command("git", "--git-dir", r.remote, "cat-file", "blob", own[i]+":"+p).Output()
			if err != nil {
				b.Fatal(err)
			}
			writes[p] = data
		}
		start := time.Now()
		if _, err := src.Apply(ctx, gitsource.Change{Message: "replay " + own[i], Writes: writes}); err != nil {
			b.Fatal(err)
		}
		if i < len(own)-2 { // the first one fetched the branch
			took += time.Since(start)
			pushes++
		}
	}
	if pushes == 0 {
		b.Fatal("no step to replay")
	}
	return took / time.Duration(pushes)
}

// runWatcher learns the phase of the run "run" from the status commits the
// daemon pushes (the run's own file), so a benchmark waits for the end of
// a run without copying a run of 10,000 clusters out of the hub every
// 200 ms: that copying would count as the daemon's CPU.
type runWatcher struct {
	fetchCounter
	phase     atomic.Value // string
	succeeded atomic.Int64 // when Succeeded was first pushed, in Unix nanoseconds
}

func (w *runWatcher) Pushed(ch status.Changeset, _ time.Duration, _ int, err error) {
	data, ok := ch.Writes["status/runs/run.yaml"]
	if err != nil || !ok {
		return
	}
	if run, derr := status.Decode(data); derr == nil {
		if run, ok := run.(*fleet.UpdateRun); ok {
			if run.Phase() == fleet.PhaseSucceeded {
				w.succeeded.CompareAndSwap(0, time.Now().UnixNano())
			}
			w.phase.Store(run.Phase())
		}
	}
}

// succeededAt is when the push that made the run Succeeded returned.
func (w *runWatcher) succeededAt() time.Time { return time.Unix(0, w.succeeded.Load()) }

// watchRun makes the daemon report its status commits to w.
func (w *runWatcher) watchRun(c *gitops.Config) { c.Observer = w }

// pushRunUntilSucceeded pushes a run file and waits until the run has
// succeeded and its status is pushed; it returns the run's commit. The
// daemon must report to w (watchRun).
func pushRunUntilSucceeded(b testing.TB, r *fleetRepo, d *daemon, w *runWatcher) string {
	b.Helper()
	runCommit := r.commit("run", map[string][]byte{"run.yaml": runFile("run")})
	d.poke()
	eventually(b, "the run to succeed", func() bool {
		phase, _ := w.phase.Load().(string)
		if phase == fleet.PhaseFailed {
			run, _ := d.Hub.GetUpdateRun(context.Background(), hub.Key{Name: "run"})
			b.Fatalf("the run failed:\n%s", encode(b, run))
		}
		return phase == fleet.PhaseSucceeded
	})
	waitFlushed(b, d)
	return runCommit
}

// remoteSize is the size of the remote's object files, loose and packed:
// what git count-objects -v reports, but in bytes rather than disk blocks
// (it rounds every loose object up to 4 KiB, which would count a small
// status commit as 50 KiB).
func remoteSize(b testing.TB, r *fleetRepo) int {
	b.Helper()
	total := 0
	err := filepath.WalkDir(filepath.Join(r.remote, "objects"), func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || strings.HasSuffix(p, ".idx") || strings.Contains(p, "/info/") {
			return err
		}
		fi, err := e.Info()
		if err == nil {
			total += int(fi.Size())
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return total
}

// cpuTimes is the CPU time (user and system) of this process and of its
// waited-for children (git receive-pack and upload-pack).
func cpuTimes() (self, children time.Duration) {
	var ru syscall.Rusage
	cpu := func(who int) time.Duration {
		if err := syscall.Getrusage(who, &ru); err != nil {
			return 0
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return cpu(syscall.RUSAGE_SELF), cpu(syscall.RUSAGE_CHILDREN)
}

// watchHeap samples the heap in use until the returned function is called,
// which stops and returns the peak.
func watchHeap() func() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(stop)
		<-done
		return peak.Load()
	}
}

// ownCommits lists gitfleet's commits in a revision range of the remote.
func ownCommits(b testing.TB, r *fleetRepo, revs string) []string {
	return strings.Fields(r.git("rev-list", "--grep", "Gitfleet-Commit: true", revs))
}

// startCPUProfile profiles the process into path until the returned
// function is called; it does nothing when the profile flag is not set.
func startCPUProfile(b testing.TB, path string) func() {
	if *benchCPUProfile == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// newObjectDiskBytes sums the size on disk (compressed, or as stored in a
// pack) of the objects that revs added to the remote: by type ("commit",
// "tree", "blob") and by type and status folder ("tree status/bindings").
func newObjectDiskBytes(b testing.TB, r *fleetRepo, revs string) map[string]int {
	b.Helper()
	listed := exec.Command("git", "--git-dir", r.remote, "rev-list", "--objects", revs)
	out, err := listed.Output()
	if err != nil {
		b.Fatal(err)
	}
	where := map[string]string{} // object -> its path's folder
	var in bytes.Buffer
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		h, p, _ := strings.Cut(line, " ")
		folder := strings.Split(p, "/")
		where[h] = strings.Join(folder[:min(3, len(folder))], "/")
		in.WriteString(h + "\n")
	}
	cmd := exec.Command("git", "--git-dir", r.remote, "cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize:disk)")
	cmd.Stdin = &in
	out, err = cmd.Output()
	if err != nil {
		b.Fatal(err)
	}
	total := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		n, _ := strconv.Atoi(f[2])
		total[f[1]] += n
		total[f[1]+" "+where[f[0]]] += n
	}
	return total
}

// newBlobBytes sums the sizes of the blobs the commits wrote, by status
// folder (runs, bindings, placements, ...).
func newBlobBytes(b testing.TB, r *fleetRepo, commits []string) map[string]int {
	b.Helper()
	blobs := map[string]string{} // blob -> folder
	for _, c := range commits {
		for _, line := range strings.Split(r.git("diff-tree", "-r", "--no-commit-id", "--no-abbrev", c), "\n") {
			// :<old mode> <new mode> <old sha> <new sha> <status>\t<path>
			f := strings.Fields(line)
			if len(f) >= 6 && strings.Trim(f[3], "0") != "" {
				folder := strings.Split(f[5], "/")
				blobs[f[3]] = strings.Join(folder[:min(2, len(folder)-1)], "/")
			}
		}
	}
	var in bytes.Buffer
	for h := range blobs {
		in.WriteString(h + "\n")
	}
	cmd := exec.Command("git", "--git-dir", r.remote, "cat-file", "--batch-check=%(objectname) %(objectsize)")
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		b.Fatal(err)
	}
	total := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		n, _ := strconv.Atoi(f[1])
		total[blobs[f[0]]] += n
		total[""] += n
	}
	return total
}
