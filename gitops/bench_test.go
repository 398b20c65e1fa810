package gitops_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"
	"k8s.io/apimachinery/pkg/api/meta"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitops"
	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/hub"
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
func waitFlushed(b *testing.B, d *daemon) {
	b.Helper()
	eventually(b, "status to be pushed", 30*time.Second, func() bool { return !d.Store.Pending() })
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
//	go test ./gitops/ -run '^$' -bench CommitToSnapshot -benchtime 20x
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
				if n := obs.renders.Load(); n > 0 {
					b.ReportMetric(float64(obs.renderNanos.Load())/float64(n)/1e6, "render-ms")
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
	var members bytes.Buffer
	for i := range n {
		fmt.Fprintf(&members, `---
apiVersion: cluster.kubernetes-fleet.io/v1beta1
kind: MemberCluster
metadata:
  name: member-%04d
  labels:
    environment: prod
  annotations:
    gitfleet.io/driver: simulated
    gitfleet.io/sim-available-after: 0s
spec:
  identity:
    kind: ServiceAccount
    name: fleet-member-agent-member-%04d
    namespace: fleet-system
`, i, i)
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
		"strategy.yaml": fmt.Appendf(nil, `apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateStrategy
metadata:
  name: all-at-once
spec:
  stages:
    - name: prod
      maxConcurrency: %s
      labelSelector:
        matchLabels:
          environment: prod
`, maxConcurrency),
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
// time from a signed push webhook announcing a new run file to the run's
// first cluster Started in the hub (its guarding status commit included:
// the engine persists before it delivers).
//
//	go test ./gitops/ -run '^$' -bench WebhookToFirstClusterStarted -benchtime 20x
func BenchmarkWebhookToFirstClusterStarted(b *testing.B) {
	secret := []byte("bench")
	r := newFleetRepo(b, stagedFleet(3, "1"))
	d := startDaemon(b, "file://"+r.remote, b.TempDir(), 0)
	srv := httptest.NewServer(&gitsource.Webhook{Secret: secret, Notify: d.poke})
	defer srv.Close()

	var watching atomic.Value // hub.Key of the run being timed
	started := make(chan struct{}, 1)
	d.Hub.Subscribe(func(hub.Event) {
		key, ok := watching.Load().(hub.Key)
		if !ok || key.Name == "" {
			return
		}
		if run, err := d.Hub.GetUpdateRun(context.Background(), key); err == nil && firstClusterStarted(run) {
			select {
			case started <- struct{}{}:
			default:
			}
		}
	})

	var took []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		name := fmt.Sprintf("run-%d", i)
		r.commit("run "+name, map[string][]byte{name + ".yaml": runFile(name)})
		watching.Store(hub.Key{Name: name})
		select {
		case <-started:
		default:
		}
		b.StartTimer()
		start := time.Now()
		if code := postWebhook(b, srv.URL, pushPayload, map[string]string{gitsource.HeaderGitHubSignature: githubSignature(pushPayload, secret)}); code != http.StatusAccepted {
			b.Fatalf("webhook: %d", code)
		}
		select {
		case <-started:
		case <-time.After(30 * time.Second):
			b.Fatalf("no cluster of %s started within 30s of the webhook", name)
		}
		took = append(took, time.Since(start))
		b.StopTimer()
		watching.Store(hub.Key{})
		eventually(b, name+" to succeed", 30*time.Second, func() bool {
			run, err := d.Hub.GetUpdateRun(context.Background(), hub.Key{Name: name})
			return err == nil && run.Phase() == fleet.PhaseSucceeded
		})
		waitFlushed(b, d)
		b.StartTimer()
	}
	b.StopTimer()
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	median := took[len(took)/2]
	b.ReportMetric(float64(median)/1e6, "median-ms")
	b.ReportMetric(float64(took[len(took)-1])/1e6, "max-ms")
	if median > time.Second {
		b.Errorf("median webhook → first cluster Started is %s, want ≤ 1s", median)
	}
}

// BenchmarkStatusCommitsPerRun rolls one run out to 100 and to 1,000
// simulated clusters in one stage at maxConcurrency 10% and counts what
// gitfleet wrote to the remote for it: commits and bytes of new status
// blobs. Commits follow the passes that start work (10 batches either way),
// not the number of clusters.
//
//	go test ./gitops/ -run '^$' -bench StatusCommitsPerRun -benchtime 1x
func BenchmarkStatusCommitsPerRun(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			var commits, blobBytes int
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				r := newFleetRepo(b, stagedFleet(n, `"10%"`))
				d := startDaemon(b, "file://"+r.remote, b.TempDir(), 50*time.Millisecond)
				eventually(b, "the placement's snapshot and bindings", 60*time.Second, func() bool {
					bs, err := d.Hub.ListBindings(context.Background(), hub.Key{Name: "app"})
					return err == nil && len(bs) == n && !d.Store.Pending()
				})
				waitFlushed(b, d)
				b.StartTimer()
				runCommit := r.commit("run", map[string][]byte{"run.yaml": runFile("run")})
				r.waitPhase("run", fleet.PhaseSucceeded, 5*time.Minute)
				b.StopTimer()
				waitFlushed(b, d)
				d.stop(b)
				own := ownCommits(b, r, runCommit+"..main")
				commits += len(own)
				blobBytes += newBlobBytes(b, r, own)
			}
			b.ReportMetric(float64(commits)/float64(b.N), "commits/run")
			b.ReportMetric(float64(blobBytes)/float64(b.N), "status-bytes/run")
			b.ReportMetric(float64(blobBytes)/float64(b.N)/float64(n), "status-bytes/cluster")
		})
	}
}

// ownCommits lists gitfleet's commits in a revision range of the remote.
func ownCommits(b testing.TB, r *fleetRepo, revs string) []string {
	return strings.Fields(r.git("rev-list", "--grep", "Gitfleet-Commit: true", revs))
}

// newBlobBytes sums the sizes of the blobs the commits wrote.
func newBlobBytes(b testing.TB, r *fleetRepo, commits []string) int {
	b.Helper()
	blobs := map[string]bool{}
	for _, c := range commits {
		for _, line := range strings.Split(r.git("diff-tree", "-r", "--no-commit-id", "--no-abbrev", c), "\n") {
			// :<old mode> <new mode> <old sha> <new sha> <status>\t<path>
			f := strings.Fields(line)
			if len(f) >= 5 && strings.Trim(f[3], "0") != "" {
				blobs[f[3]] = true
			}
		}
	}
	var in bytes.Buffer
	for h := range blobs {
		in.WriteString(h + "\n")
	}
	cmd := exec.Command("git", "--git-dir", r.remote, "cat-file", "--batch-check=%(objectsize)")
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		b.Fatal(err)
	}
	total := 0
	for _, s := range strings.Fields(string(out)) {
		n, _ := strconv.Atoi(s)
		total += n
	}
	return total
}
