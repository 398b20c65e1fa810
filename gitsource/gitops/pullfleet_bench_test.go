package gitops_test

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource/gitops"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/internal/testing/fleettest"
	"github.com/gitfleet/gitfleet/internal/testing/kubetest"
	"github.com/gitfleet/gitfleet/internal/testing/runtimes"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	kubehub "github.com/gitfleet/gitfleet/reconciler/hub/kube"
	"github.com/gitfleet/gitfleet/reconciler/member"
	"github.com/gitfleet/gitfleet/render"
	"github.com/gitfleet/gitfleet/status"
)

var (
	pullShape      = fleettest.ScaleFlags("pull", "BenchmarkPullFleet", 100)
	pullHubProfile = flag.String("pull-hub-cpuprofile", os.Getenv(kubetest.ProfileEnv), "write a CPU profile of BenchmarkPullFleet's kube-apiserver, from the push until the runs succeeded, to this path (default $"+kubetest.ProfileEnv+")")
	pullDriver     = flag.String("pull-driver", fleet.DriverWork, "how BenchmarkPullFleet's members get their Works: work (an agent each, in this process) or simulated (delivered by the hub in process)")
)

// BenchmarkPullFleet is KubeFleet's published scale test on a Kubernetes
// hub: `serve --hub kube` (in this process) on one real etcd and
// kube-apiserver, a bare file:// remote, -pull-members members and
// -pull-runs placements picking -pull-clusters members each, and one
// commit that starts a staged update run per placement (3 stages at 50% by
// default). KubeFleet: 1,000 members, 100 runs of 100 clusters, p90
// push→Succeeded 135 s with its hub API server on 13 cores.
//
// Members pull (-pull-driver work, the default): the hub writes a Work per
// binding in fleet-member-<cluster>, and -pull-members `gitfleet agent`s
// in this process (pullfleet_agents_test.go), each applying to a
// simulated member, join through their InternalMemberClusters, apply
// their Works and report on them; the hub side of those members
// (reconciler/membercluster) runs in serve, as `serve --hub kube` runs it.
// With -pull-driver simulated the hub delivers to simulated members in
// process instead: the hub side without the Works.
//
// push→Succeeded is timed per run, from the moment `git push` of the runs'
// commit returned to the moment the run's Succeeded condition turned True
// on the hub, seen by a watch of this process. While it waits it logs how
// far it got and serve's and the agents' API requests by resource; at the
// end it reports serve's and the agents' writes per cluster and the CPU of
// this process (serve and the agents), git and the hub.
//
// Memory: the API server's and etcd's peak resident memory (VmHWM), this
// process's (serve, the hub's informers, the members), its peak Go heap,
// and the peak of the sum of all of them, sampled every 200 ms together
// with the render and git processes serve starts. The setup (members
// joined, placements scheduled) is not timed but is in the peaks.
//
// Every wait is bounded by a budget that grows with the fleet: a hang
// fails the benchmark naming what it waited for. Plain `go test` does not
// run it (-run '^$' and -bench are needed); the kube-apiserver binaries
// come from GITFLEET_TESTBIN (hack/testbin.sh).
//
//	go test ./gitsource/gitops -run '^$' -bench PullFleet -benchtime 1x -timeout 90m [-args -pull-members=1000 -bench-serve-cpuprofile=/tmp/cpu]
func BenchmarkPullFleet(b *testing.B) {
	shape := *pullShape
	shape.Driver = *pullDriver
	if err := shape.Check(); err != nil {
		b.Fatal(err)
	}
	if shape.Driver != fleet.DriverWork && shape.Driver != fleet.DriverSimulated {
		b.Fatalf("-pull-driver %q: want %s or %s", shape.Driver, fleet.DriverWork, fleet.DriverSimulated)
	}
	b.Run(fmt.Sprintf("driver=%s/members=%d/runs=%dx%d", shape.Driver, shape.Members, shape.Runs, shape.ClustersPerRun), func(b *testing.B) {
		if b.N > 1 {
			b.Fatal("one round of runs per fleet: run with -benchtime 1x")
		}
		benchmarkPullFleet(b, shape)
	})
}

func benchmarkPullFleet(b *testing.B, shape fleettest.Scale) {
	b.StopTimer()
	clusters := shape.Runs * shape.ClustersPerRun
	hubCluster := startClusters(b, "hub")[0]
	hubCluster.InstallCRDs(filepath.Join("..", "..", "config", "crd"))
	rc := &rest.Config{Host: hubCluster.Server, BearerToken: hubCluster.AdminToken, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	mem := sampleMemory()
	defer func() {
		// The peaks of a fleet that did not finish in its budget are
		// figures too.
		if p := mem.stop(); b.Failed() {
			b.Logf("peaks: hub (etcd + kube-apiserver) %.0f MiB, serve %.0f MiB (Go heap %.0f MiB), all processes %.0f MiB",
				mib(p.hub), mib(p.self), mib(p.heap), mib(p.total))
		}
	}()

	r := newFleetRepo(b, shape.Fleet("v0"))
	requests, agentRequests := &requestCounter{counts: map[string]int{}}, &requestCounter{counts: map[string]int{}}
	serveRC := rest.CopyConfig(rc)
	serveRC.WrapTransport = requests.wrap
	var members *pullAgents
	if shape.Driver == fleet.DriverWork {
		agentRC := rest.CopyConfig(rc)
		agentRC.WrapTransport = agentRequests.wrap
		members = startPullAgents(b, serveRC, agentRC, shape)
	}
	d := startDaemonWith(b, "file://"+r.remote, b.TempDir(), 100*time.Millisecond, func(c *gitops.Config) {
		c.StatusInterval = status.DefaultInterval // serve's
		log := c.Log
		c.NewHub = func(ctx context.Context, store hub.Store, clk clock.Clock, cl member.Clusters) (hub.Loop, error) {
			return kubehub.New(ctx, kubehub.Config{Rest: serveRC, Select: render.Select, Store: store, Deliver: true,
				Clusters: cl, Clock: clk, Log: log.With("component", "hub")})
		}
	})

	// The fleet is in place: every placement has its snapshot and its
	// clusters scheduled, and serve has nothing left to do.
	setup := time.Now()
	meta := metadata.NewForConfigOrDie(rc)
	count := func(resource string) int {
		// From the API server's watch cache: a list from etcd of 10,000
		// bindings costs the hub more than serve's own work.
		l, err := meta.Resource(placementResource(resource)).List(context.Background(), metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return -1
		}
		return len(l.Items)
	}
	nextLog := time.Now().Add(30 * time.Second)
	within(b, "every placement's snapshot and bindings on the hub", pullBudget(shape.Members*100+clusters*50), 2*time.Second, func() bool {
		snapshots, bindings := count("clusterresourcesnapshots"), count("clusterresourcebindings")
		if time.Now().After(nextLog) {
			b.Logf("%s after the start: %d resource snapshots, %d of %d bindings", time.Since(setup).Round(time.Second), snapshots, bindings, clusters)
			nextLog = nextLog.Add(30 * time.Second)
		}
		return snapshots >= shape.Runs && bindings == clusters
	})
	if members != nil {
		// An agent that starts before the hub made its
		// InternalMemberCluster looks again 15 s later (a quarter of the
		// default heartbeat period); the hub side is four creates a member.
		nextLog = time.Now().Add(30 * time.Second)
		within(b, "every member's agent to join", pullBudget(shape.Members*200), 500*time.Millisecond, func() bool {
			n, err := members.joined()
			if err != nil {
				b.Fatal(err)
			}
			if time.Now().After(nextLog) {
				b.Logf("%s after the start: %d of %d agents joined", time.Since(setup).Round(time.Second), n, shape.Members)
				nextLog = nextLog.Add(30 * time.Second)
			}
			return n == shape.Members
		})
	}
	within(b, "serve to settle", pullBudget(shape.Members*10+clusters), 200*time.Millisecond, func() bool {
		return d.Controller.Idle() && d.Hub.Pending() == 0 && !d.Store.Pending()
	})
	b.ReportMetric(time.Since(setup).Seconds(), "setup-s")

	runs := watchRuns(b, rc)
	stopProfile := sync.OnceFunc(startCPUProfile(b, fmt.Sprintf("%s.pull%d", *benchCPUProfile, shape.Members)))
	defer stopProfile() // also when a wait fails: the profile shows where it stood
	requests.reset()
	agentRequests.reset()
	self, children := cpuTimes()
	hubCPU, etcdCPU := mem.hubCPU()
	b.StartTimer()
	const round = "r0"
	pushed := r.commit("100 runs at once", map[string][]byte{"runs.yaml": shape.RunsFile(round)})
	start := time.Now()
	stopHubProfile := kubetest.ProfileCPU(b, rc, *pullHubProfile)
	defer stopHubProfile()
	d.poke()
	names := make([]string, shape.Runs)
	for i := range names {
		names[i] = shape.RunName(round, i)
	}
	within(b, fmt.Sprintf("%d runs to succeed on the hub", len(names)), pullBudget(clusters*50), 200*time.Millisecond,
		runs.AllSucceeded(b, names, start, "the push", func() string {
			return fmt.Sprintf("serve's API requests so far: %s; the agents': %s", requests, agentRequests)
		}))
	b.StopTimer()
	self2, children2 := cpuTimes()
	hubCPU2, etcdCPU2 := mem.hubCPU()
	stopProfile()
	stopHubProfile()
	writes, agentWrites := requests.writes(), agentRequests.writes()
	requestsSeen, agentRequestsSeen := requests.String(), agentRequests.String()
	within(b, "the runs' status to be pushed", pullBudget(clusters*5), 200*time.Millisecond, func() bool { return !d.Store.Pending() })

	runs.Report(b, names, start)
	b.ReportMetric((self2 - self).Seconds(), "serve-cpu-s")
	b.ReportMetric((children2 - children).Seconds(), "git-cpu-s")
	b.ReportMetric((hubCPU2 - hubCPU).Seconds(), "hub-cpu-s")
	b.ReportMetric((etcdCPU2 - etcdCPU).Seconds(), "etcd-cpu-s") // of hub-cpu-s
	b.ReportMetric(float64(len(ownCommits(b, r, pushed+"..main"))), "status-commits")
	b.ReportMetric(float64(writes)/float64(clusters), "writes/cluster")
	b.ReportMetric(float64(agentWrites)/float64(clusters), "agent-writes/cluster")
	b.Logf("serve's API requests during the runs: %s", requestsSeen)
	b.Logf("the agents' API requests during the runs: %s", agentRequestsSeen)
	peaks := mem.stop()
	b.ReportMetric(mib(peaks.hub), "hub-peak-MiB")
	b.ReportMetric(mib(peaks.self), "serve-peak-MiB")
	b.ReportMetric(mib(peaks.heap), "serve-heap-peak-MiB")
	b.ReportMetric(mib(peaks.total), "total-peak-MiB")
}

// pullBudget is how long a wait of BenchmarkPullFleet may take: two
// minutes plus ms milliseconds, the part that grows with the fleet.
func pullBudget(ms int) time.Duration { return 2*time.Minute + time.Duration(ms)*time.Millisecond }

// within is eventually with a budget of its own, checking cond at most
// every poll (the checks cost the hub too): a wait longer than budget
// fails the benchmark, naming what it waited for.
func within(b testing.TB, what string, budget, poll time.Duration, cond func() bool) {
	b.Helper()
	start := time.Now()
	var last time.Time
	late := false
	eventually(b, what, func() bool {
		if time.Since(last) < poll {
			return false
		}
		last = time.Now()
		if cond() {
			return true
		}
		late = time.Since(start) > budget
		return late
	})
	if late {
		b.Fatalf("%s: not within %s", what, budget)
	}
}

func mib(bytes uint64) float64 { return float64(bytes) / (1 << 20) }

func placementResource(resource string) schema.GroupVersionResource {
	return fleet.SchemeGroupVersion.WithResource(resource)
}

// watchRuns records when each run's Succeeded condition was first seen
// True (or False) on the hub, through a watch of its own (not serve's
// informers).
func watchRuns(b testing.TB, rc *rest.Config) *runtimes.Runs {
	w := runtimes.New()
	inf := dynamicinformer.NewFilteredDynamicInformer(dynamic.NewForConfigOrDie(rc), placementResource("clusterstagedupdateruns"),
		"", 0, cache.Indexers{}, nil).Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.Seen,
		UpdateFunc: func(_, obj any) { w.Seen(obj) },
	}); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	go inf.Run(ctx.Done())
	within(b, "the watch of runs to start", pullBudget(0), 10*time.Millisecond, inf.HasSynced)
	return w
}

// requestCounter counts serve's requests to the hub's API server by
// method, resource and subresource ("PUT clusterstagedupdateruns/status").
type requestCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *requestCounter) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		key := r.Method + " " + apiResource(r.URL.Path)
		if r.URL.Query().Get("watch") == "true" {
			key = "WATCH " + apiResource(r.URL.Path)
		}
		c.mu.Lock()
		c.counts[key]++
		c.mu.Unlock()
		return next.RoundTrip(r)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// apiResource is the resource (and subresource) of an API path:
// /apis/<group>/<version>/[namespaces/<ns>/]<resource>[/<name>[/<sub>]].
func apiResource(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) > 0 && parts[0] == "api":
		parts = parts[min(2, len(parts)):]
	case len(parts) > 0 && parts[0] == "apis":
		parts = parts[min(3, len(parts)):]
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	switch len(parts) {
	case 0:
		return path
	case 1, 2:
		return parts[0]
	}
	return parts[0] + "/" + parts[2]
}

func (c *requestCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.counts)
}

// writes counts the requests that are not GETs or watches.
func (c *requestCounter) writes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, v := range c.counts {
		if !strings.HasPrefix(k, "GET ") && !strings.HasPrefix(k, "WATCH ") {
			n += v
		}
	}
	return n
}

// String lists the counts, largest first.
func (c *requestCounter) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.counts))
	for k := range c.counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return c.counts[b] - c.counts[a] })
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s %d", k, c.counts[k]))
	}
	return strings.Join(out, ", ")
}

// memoryPeaks are the peaks a memorySampler saw, in bytes.
type memoryPeaks struct {
	hub   uint64 // etcd and kube-apiserver, each at its own peak (VmHWM)
	self  uint64 // this process's resident memory (VmHWM)
	heap  uint64 // this process's Go heap (live and unswept objects)
	total uint64 // the largest sum of this process and all its children in one sample
}

// memorySampler samples the resident memory of this process and of its
// children (the hub's etcd and kube-apiserver, serve's render and git
// processes, looked for every 5 s) and the Go heap every 200 ms, from
// /proc, until stop.
type memorySampler struct {
	stopOnce sync.Once
	quit     chan struct{}
	done     chan struct{}
	mu       sync.Mutex
	peaks    memoryPeaks
	hubPIDs  map[int]bool // etcd and kube-apiserver ever seen
}

func sampleMemory() *memorySampler {
	s := &memorySampler{quit: make(chan struct{}), done: make(chan struct{}), hubPIDs: map[int]bool{}}
	go func() {
		defer close(s.done)
		heap := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		var kids map[int]string
		for i := 0; ; i++ {
			// Finding the children reads every process's stat: on a
			// shared machine that cost a fifth of this process's CPU
			// when done every sample.
			if i%25 == 0 {
				kids = children(os.Getpid())
			}
			metrics.Read(heap)
			total := procStatusBytes(os.Getpid(), "VmRSS:")
			hubPIDs := map[int]bool{}
			for pid, comm := range kids {
				total += procStatusBytes(pid, "VmRSS:")
				if comm == "etcd" || comm == "kube-apiserver" {
					hubPIDs[pid] = true
				}
			}
			s.mu.Lock()
			s.peaks.heap = max(s.peaks.heap, heap[0].Value.Uint64())
			s.peaks.total = max(s.peaks.total, total)
			for pid := range hubPIDs {
				s.hubPIDs[pid] = true
			}
			s.mu.Unlock()
			select {
			case <-s.quit:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// hubCPU is the CPU time the hub's processes have used so far: all of
// them, and etcd's alone.
func (s *memorySampler) hubCPU() (all, etcd time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for pid := range s.hubPIDs {
		comm, _, cpu, _ := procStat(pid)
		all += cpu
		if comm == "etcd" {
			etcd += cpu
		}
	}
	return all, etcd
}

// stop ends the sampling and returns the peaks; the hub's processes must
// still run (their VmHWM is read now).
func (s *memorySampler) stop() memoryPeaks {
	s.stopOnce.Do(func() {
		close(s.quit)
		<-s.done
		s.mu.Lock()
		defer s.mu.Unlock()
		for pid := range s.hubPIDs {
			s.peaks.hub += procStatusBytes(pid, "VmHWM:")
		}
		s.peaks.self = procStatusBytes(os.Getpid(), "VmHWM:")
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peaks
}

// children are the processes whose parent is pid, with their command
// names.
func children(pid int) map[int]string {
	out := map[int]string{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, ppid, _, ok := procStat(child)
		if ok && ppid == pid {
			out[child] = comm
		}
	}
	return out
}

// procStat reads a process's command name, parent and CPU time (user and
// system) from /proc/<pid>/stat.
func procStat(pid int) (comm string, ppid int, cpu time.Duration, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, 0, false
	}
	// pid (comm) state ppid ... utime stime: the name may hold spaces.
	open, end := strings.IndexByte(string(data), '('), strings.LastIndexByte(string(data), ')')
	if open < 0 || end < open {
		return "", 0, 0, false
	}
	f := strings.Fields(string(data[end+1:]))
	if len(f) < 13 {
		return "", 0, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	utime, _ := strconv.Atoi(f[11])
	stime, _ := strconv.Atoi(f[12])
	const ticks = 100 // USER_HZ
	return string(data[open+1 : end]), ppid, time.Duration(utime+stime) * time.Second / ticks, true
}

func procCPU(pid int) time.Duration {
	_, _, cpu, _ := procStat(pid)
	return cpu
}

// procStatusBytes reads a kB field (VmRSS:, VmHWM:) of /proc/<pid>/status.
func procStatusBytes(pid int, field string) uint64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
