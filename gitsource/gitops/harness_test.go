package gitops_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/gitsource/gitops"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/internal/testing/gittest"
	"github.com/gitfleet/gitfleet/internal/testing/kubetest"
	"github.com/gitfleet/gitfleet/internal/testing/testproc"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/render/renderproc"
	"github.com/gitfleet/gitfleet/status"
)

// fleetRepo is a bare "remote" repository and a person's working clone of
// it, both driven with the real git CLI.
type fleetRepo struct {
	t      testing.TB
	remote string // bare repository
	work   string // a person's clone
	// made is when the test made the repository: waitPhase gives a run
	// as long without news as the test took before the wait.
	made time.Time
}

func gitCmd(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := gitRun(dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// gitRun runs git in dir as the test person and returns its trimmed output.
func gitRun(dir string, args ...string) (string, error) { return gittest.Run(dir, args...) }

// newFleetRepo pushes files as the first commit of main.
func newFleetRepo(t testing.TB, files map[string][]byte) *fleetRepo {
	t.Helper()
	began(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	root := t.TempDir()
	r := &fleetRepo{t: t, remote: filepath.Join(root, "fleet.git"), work: filepath.Join(root, "work"), made: time.Now()}
	gittest.AwaitGC(t, r.remote, r.work)
	gitCmd(t, root, "init", "-q", "--bare", "-b", "main", r.remote)
	gitCmd(t, root, "clone", "-q", r.remote, r.work)
	gitCmd(t, r.work, "checkout", "-q", "-b", "main")
	r.commit("fleet", files)
	return r
}

// commit writes files (nil deletes) in the clone, commits and pushes,
// rebasing on whatever gitfleet pushed meanwhile. It returns the commit.
func (r *fleetRepo) commit(msg string, files map[string][]byte) string {
	r.t.Helper()
	h, err := r.tryCommit(msg, files)
	if err != nil {
		r.t.Fatal(err)
	}
	return h
}

// tryCommit is commit for goroutines other than the test's: it returns
// the error instead of failing the test.
func (r *fleetRepo) tryCommit(msg string, files map[string][]byte) (string, error) {
	if err := r.pull(); err != nil {
		return "", err
	}
	added := []string{"add", "--"}
	for name, data := range files {
		p := filepath.Join(r.work, name)
		if data == nil {
			if _, err := gitRun(r.work, "rm", "-q", name); err != nil {
				return "", err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return "", err
		}
		added = append(added, name)
	}
	if len(added) > 2 {
		if _, err := gitRun(r.work, added...); err != nil {
			return "", err
		}
	}
	if _, err := gitRun(r.work, "commit", "-q", "-m", msg); err != nil {
		return "", err
	}
	if err := r.push(); err != nil {
		return "", err
	}
	return gitRun(r.work, "rev-parse", "HEAD")
}

// commitEach commits each change (files as commit's, nil deletes) on
// the clone's main, in order, and pushes them all in one push: the daemon
// fetches them together and walks them one by one. One git fast-import
// writes every commit, not a git add and a git commit each. It returns the
// commits, oldest first, as the remote has them (rebased on whatever
// gitfleet pushed meanwhile).
func (r *fleetRepo) commitEach(msgs []string, changes []map[string][]byte) []string {
	r.t.Helper()
	if err := r.pull(); err != nil {
		r.t.Fatal(err)
	}
	var stream bytes.Buffer
	data := func(b []byte) { fmt.Fprintf(&stream, "data %d\n%s\n", len(b), b) }
	for i, files := range changes {
		stream.WriteString("commit refs/heads/main\ncommitter dev <dev@example.com> now\n")
		data([]byte(msgs[i]))
		if i == 0 {
			stream.WriteString("from refs/heads/main^0\n")
		}
		for _, name := range slices.Sorted(maps.Keys(files)) {
			if files[name] == nil {
				fmt.Fprintf(&stream, "D %s\n", name)
				continue
			}
			fmt.Fprintf(&stream, "M 100644 inline %s\n", name)
			data(files[name])
		}
	}
	cmd := exec.Command("git", "fast-import", "--quiet", "--date-format=now")
	cmd.Dir, cmd.Env, cmd.Stdin = r.work, gittest.Env(r.work), &stream
	if out, err := cmd.CombinedOutput(); err != nil {
		r.t.Fatalf("git fast-import: %v: %s", err, out)
	}
	gitCmd(r.t, r.work, "reset", "-q", "--hard")
	if err := r.push(); err != nil {
		r.t.Fatal(err)
	}
	commits := strings.Fields(gitCmd(r.t, r.work, "rev-list", "--first-parent", "--reverse", "-n", strconv.Itoa(len(changes)), "HEAD"))
	if len(commits) != len(changes) {
		r.t.Fatalf("%d commits pushed, want %d", len(commits), len(changes))
	}
	return commits
}

// treeChange is the change from tree from to tree to: to's files that
// differ, nil for from's files that to lacks.
func treeChange(from, to map[string][]byte) map[string][]byte {
	change := map[string][]byte{}
	for name, data := range to {
		if old, ok := from[name]; !ok || !bytes.Equal(old, data) {
			change[name] = data
		}
	}
	for name := range from {
		if _, ok := to[name]; !ok {
			change[name] = nil
		}
	}
	return change
}

// pull brings the clone up to the remote's main, if it has one yet.
func (r *fleetRepo) pull() error {
	if out, err := gitRun(r.work, "ls-remote", "--heads", "origin", "main"); err != nil {
		return err
	} else if out != "" {
		if _, err := gitRun(r.work, "pull", "-q", "--rebase", "origin", "main"); err != nil {
			return err
		}
	}
	return nil
}

// push pushes the clone's main, rebasing on whatever gitfleet pushed
// meanwhile.
func (r *fleetRepo) push() error {
	for i := 0; ; i++ {
		_, err := gitRun(r.work, "push", "-q", "origin", "HEAD:main")
		if err == nil {
			return nil
		} else if i == 20 {
			return err
		}
		if _, err := gitRun(r.work, "pull", "-q", "--rebase", "origin", "main"); err != nil {
			return err
		}
	}
}

// merge does what a forge does when a person merges a pull request: a
// merge commit of branch onto main. The daemon pushes status commits
// all the while, so a rejected push is met the way a forge meets it:
// merge again onto the new tip.
func (r *fleetRepo) merge(branch, msg string) {
	r.t.Helper()
	for i := 0; ; i++ {
		gitCmd(r.t, r.work, "fetch", "-q", "origin")
		gitCmd(r.t, r.work, "checkout", "-q", "-B", "main", "origin/main")
		gitCmd(r.t, r.work, "merge", "-q", "--no-ff", "-m", msg, "origin/"+branch)
		_, err := gitRun(r.work, "push", "-q", "origin", "HEAD:main")
		if err == nil {
			return
		} else if i == 20 {
			r.t.Fatal(err)
		}
	}
}

// file returns a file of the remote's main branch, or nil.
func (r *fleetRepo) file(path string) []byte {
	return r.fileAt("main", path)
}

// fileAt is a file of the remote at rev, or nil.
func (r *fleetRepo) fileAt(rev, path string) []byte {
	cmd := exec.Command("git", "--git-dir", r.remote, "show", rev+":"+path)
	out, err := cmd.Output()
	if err != nil {
		return nil
	}
	return out
}

// object decodes a file of the remote's main branch, or returns nil.
func (r *fleetRepo) object(path string) runtime.Object {
	data := r.file(path)
	if data == nil {
		return nil
	}
	obj, err := status.DecodeFile(path, data)
	if err != nil {
		r.t.Fatalf("decoding %s: %v", path, err)
	}
	return obj
}

// run returns a run from the remote's status tree, or nil; a run too
// large for one file is assembled from its parts, as gitfleet reads it.
// Every file comes from one commit: the daemon pushes while tests poll, and
// a file and its parts read from two commits need not agree.
func (r *fleetRepo) run(name string) *fleet.UpdateRun {
	rev, err := gitRun(r.remote, "rev-parse", "--verify", "-q", "main")
	if err != nil {
		return nil
	}
	files := remoteFiles{r: r, rev: strings.TrimSpace(rev)}
	p := "status/runs/" + name + ".yaml"
	data := r.fileAt(files.rev, p)
	if data == nil {
		return nil
	}
	if !strings.HasPrefix(string(data), "# This file lists no clusters") {
		obj, err := status.DecodeFile(p, data)
		if err != nil {
			r.t.Fatalf("decoding %s: %v", p, err)
		}
		return obj.(*fleet.UpdateRun)
	}
	objs, errs := status.ReadObjects(files, "status/runs")
	if len(errs) > 0 {
		r.t.Fatalf("reading the runs at %s: %v", files.rev, errs)
	}
	for _, o := range objs {
		if o.Path == p {
			return o.Object.(*fleet.UpdateRun)
		}
	}
	return nil
}

// remoteFiles reads the remote at one commit (rev; main when empty) as
// status.Files.
type remoteFiles struct {
	r   *fleetRepo
	rev string
}

func (f remoteFiles) at() string {
	if f.rev == "" {
		return "main"
	}
	return f.rev
}

func (f remoteFiles) Read(p string) ([]byte, error) {
	if data := f.r.fileAt(f.at(), p); data != nil {
		return data, nil
	}
	return nil, os.ErrNotExist
}

func (f remoteFiles) List(prefix string) ([]string, error) {
	out, err := gitRun(f.r.remote, "ls-tree", "-r", "--name-only", f.at(), "--", prefix)
	return strings.Fields(out), err
}

func (r *fleetRepo) approval(name string) *fleet.ApprovalRequest {
	o := r.object("approvals/" + name + ".yaml")
	if o == nil {
		return nil
	}
	return o.(*fleet.ApprovalRequest)
}

// eventually polls cond until it holds. It gives up after the wait's
// bound (waitBound: a few minutes, more for a test that was slow to get
// there), failing the test with what it waited for, so a broken test
// fails in minutes, not shortly before the binary's -timeout. It fails
// the test at once, with the process's exit status and the end of its
// log, when a process the test started and still expects to run (serve,
// Prometheus, a cluster's: see watchLists) exits.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if err := waitFor(t, what, cond); err != nil {
		t.Fatal(err)
	}
}

// waitFor is eventually returning the exit of a watched process as an
// error instead of failing the test.
func waitFor(t testing.TB, what string, cond func() bool) error {
	t.Helper()
	by, bound := waitBound(t)
	return waitUntil(t, what+" ("+bound+")", by, cond)
}

// waitUntil is waitFor giving up at by.
func waitUntil(t testing.TB, what string, by time.Time, cond func() bool) error {
	t.Helper()
	err := testproc.WaitBy(t, what, by, func(context.Context) bool { return cond() }, watched(t)...)
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// A wait of a test gives up after waitFloor, or waitScale times as long
// as the test ran before it began if that is longer: a loaded machine
// that made the test slow to get there gives its waits as much more time
// (the work before a wait stands for the speed of the machine), and a
// wait for what never comes fails in minutes. Benchmarks, whose waits
// their sizes scale, keep waiting until shortly before the -timeout.
const (
	waitFloor = 5 * time.Minute
	waitScale = 3
)

// testStarts are, per test, when it first used the harness (began).
var testStarts sync.Map // testing.TB → time.Time

// began notes that t began now, unless it did earlier, and returns when.
func began(t testing.TB) time.Time {
	now := time.Now()
	v, loaded := testStarts.LoadOrStore(t, now)
	if !loaded {
		t.Cleanup(func() { testStarts.Delete(t) })
	}
	return v.(time.Time)
}

// waitBound is when a wait of t that begins now gives up, and why then.
func waitBound(t testing.TB) (time.Time, string) {
	now := time.Now()
	if _, bench := t.(*testing.B); bench {
		return await.Deadline(t), "until shortly before the -timeout"
	}
	ran := now.Sub(began(t))
	bound := max(waitFloor, waitScale*ran).Round(time.Second)
	return now.Add(bound), fmt.Sprintf("at most %s: %d times the %s the test ran before, at least %s",
		bound, waitScale, ran.Round(time.Second), waitFloor)
}

// watchLists are, per test, the processes it started and expects to keep
// running (serve, Prometheus, its clusters'): every wait of the test
// (eventually) watches them.
var watchLists sync.Map // testing.TB → *watchList

type watchList struct {
	mu       sync.Mutex
	servers  []*testproc.Server
	clusters []*kubetest.Cluster // watched through Servers: what runs now
	started  int                 // how many servers the test started, to number them
}

func watchListOf(t testing.TB) *watchList {
	l, loaded := watchLists.LoadOrStore(t, &watchList{})
	if !loaded {
		t.Cleanup(func() { watchLists.Delete(t) })
	}
	return l.(*watchList)
}

// startWatched starts cmd as a test server that the waits of t watch
// (see eventually) until unwatch, and that is killed when t ends, its log
// shown if t failed. Its name is what, numbered when t starts several:
// "gitfleet serve #2".
func startWatched(t testing.TB, what string, cmd *exec.Cmd) *testproc.Server {
	t.Helper()
	l := watchListOf(t)
	l.mu.Lock()
	l.started++
	n := l.started
	l.mu.Unlock()
	name := what
	if n > 1 {
		name = fmt.Sprintf("%s #%d", what, n)
	}
	s, err := testproc.Start(name, cmd, filepath.Join(t.TempDir(), strings.ReplaceAll(what, " ", "-")+".log"))
	if err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	l.servers = append(l.servers, s)
	l.mu.Unlock()
	t.Cleanup(func() {
		unwatch(t, s)
		s.Kill()
		if t.Failed() {
			data, _ := os.ReadFile(s.Log)
			t.Logf("%s log (%s):\n%s", s.Name, strings.Join(cmd.Args, " "), data)
		}
	})
	return s
}

// unwatch tells the waits of t that s may exit from now on: the test
// kills it, or waits for it to exit.
func unwatch(t testing.TB, s *testproc.Server) {
	l := watchListOf(t)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.servers = slices.DeleteFunc(l.servers, func(w *testproc.Server) bool { return w == s })
}

// watched are the processes t expects to keep running.
func watched(t testing.TB) []*testproc.Server {
	l := watchListOf(t)
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Clone(l.servers)
	for _, c := range l.clusters {
		out = append(out, c.Servers()...)
	}
	return out
}

// startClusters is kubetest.Start with the clusters' processes watched
// by the waits of t: a member's etcd or API server that dies fails the
// wait at once (one the test stops with StopAPIServer is not watched).
func startClusters(t testing.TB, names ...string) []*kubetest.Cluster {
	t.Helper()
	began(t)
	return watchClusters(t, kubetest.Start(t, names...))
}

// startClustersWithWorkloads is kubetest.StartWithWorkloads with the
// clusters' processes, kwok and the controllers too, watched by the waits
// of t.
func startClustersWithWorkloads(t testing.TB, names ...string) []*kubetest.Cluster {
	t.Helper()
	began(t)
	return watchClusters(t, kubetest.StartWithWorkloads(t, names...))
}

func watchClusters(t testing.TB, clusters []*kubetest.Cluster) []*kubetest.Cluster {
	l := watchListOf(t)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clusters = append(l.clusters, clusters...)
	return clusters
}

// waitPhase waits for a run to reach a phase in the remote's status tree.
// It fails at once, naming the status the tree holds, when the run ended
// in another phase (it never will be in phase), and when the run's status
// has not changed for twice as long as the test took before the wait (at
// least two minutes: a slower machine slows both alike, and a pause of
// the whole machine must not read as a stopped run): a run that moves
// keeps its time however slow the machine, one that stopped moving no
// longer waits until shortly before the binary's -timeout, leaving the
// package's other tests no time.
func (r *fleetRepo) waitPhase(name, phase string) *fleet.UpdateRun {
	r.t.Helper()
	return r.awaitPhase(name, phase, 0, nil)
}

// waitPhaseWithin is waitPhase within a budget as well: a run not in
// phase once budget passed fails the test at once, naming the status the
// tree holds and, from onHub when given, what the hub holds. budget
// scales with the work: callers derive it from what the test did before.
func (r *fleetRepo) waitPhaseWithin(name, phase string, budget time.Duration, onHub func() string) *fleet.UpdateRun {
	r.t.Helper()
	return r.awaitPhase(name, phase, budget, onHub)
}

// endedPhases are the phases a run never leaves.
var endedPhases = []string{fleet.PhaseSucceeded, fleet.PhaseFailed, fleet.PhaseInitFailed}

// awaitPhase is waitPhase, within budget unless it is 0.
func (r *fleetRepo) awaitPhase(name, phase string, budget time.Duration, onHub func() string) *fleet.UpdateRun {
	r.t.Helper()
	start := time.Now()
	still := max(2*time.Minute, 2*start.Sub(r.made)).Round(time.Second)
	var (
		last      *fleet.UpdateRun
		moved     = start
		why, what string
	)
	what = fmt.Sprintf("run %s to be %s (failing once its status stays the same for %s)", name, phase, still)
	if budget > 0 {
		what = fmt.Sprintf("run %s to be %s within %s", name, phase, budget.Round(time.Second))
	}
	// Bounded by the run's stillness (or budget), not by waitBound: a run
	// that moves keeps its time.
	if err := waitUntil(r.t, what, await.Deadline(r.t), func() bool {
		run, now := r.run(name), time.Now()
		if (run == nil) != (last == nil) || run != nil && !equality.Semantic.DeepEqual(run.Status, last.Status) {
			moved = now
		}
		last = run
		switch {
		case last != nil && last.Phase() == phase:
			return true
		case last != nil && slices.Contains(endedPhases, last.Phase()):
			why = "it ended " + last.Phase()
		case budget > 0 && now.Sub(start) > budget:
			why = fmt.Sprintf("not %s after %s", phase, budget.Round(time.Second))
		case now.Sub(moved) > still:
			why = fmt.Sprintf("not %s, and its status has not changed for %s", phase, still)
		}
		return why != ""
	}); err != nil {
		r.t.Fatal(err)
	}
	if why == "" {
		return last
	}
	msg := fmt.Sprintf("run %s: %s (waited %s); at %s %s", name, why, time.Since(start).Round(time.Second),
		strings.TrimSpace(r.git("rev-parse", "--short=12", "main")), describeRun(name, last))
	if onHub != nil {
		msg += "; on the hub: " + onHub()
	}
	r.t.Fatal(msg)
	return nil
}

// describeRun says what a run's status shows: its phase and the
// conditions of the run, its stages and their tasks (not each cluster's).
func describeRun(name string, run *fleet.UpdateRun) string {
	if run == nil {
		return "status/runs/" + name + ".yaml is absent"
	}
	var conds []string
	for _, c := range conditionOutline(run) {
		if !strings.Contains(c, " cluster ") {
			conds = append(conds, c)
		}
	}
	return fmt.Sprintf("status/runs/%s.yaml shows it %s: %s", name, run.Phase(), strings.Join(conds, "; "))
}

// daemon is a gitfleet serve loop running in the test process.
type daemon struct {
	*gitops.Daemon
	remote  string // the remote's path, for file:// remotes
	trigger chan struct{}
	cancel  context.CancelFunc
	done    chan error
	once    sync.Once
}

// startDaemon opens the repository into cacheDir and runs the loop; a
// ticker stands in for the poller (poll 0: no polling).
func startDaemon(t testing.TB, url, cacheDir string, poll time.Duration) *daemon {
	t.Helper()
	return startDaemonWith(t, url, cacheDir, poll, nil)
}

// startDaemonWith is startDaemon with a hook that adjusts the daemon's
// configuration (metrics, observers) before it opens.
func startDaemonWith(t testing.TB, url, cacheDir string, poll time.Duration, configure func(*gitops.Config)) *daemon {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return startDaemonSource(t, ctx, cancel, log, gitsource.Config{URL: url, Branch: "main", CacheDir: cacheDir, Logger: log}, poll, configure)
}

// startDaemonWithSource is startDaemon over a source opened from srcCfg
// (limits, a status branch).
func startDaemonWithSource(t testing.TB, srcCfg gitsource.Config, poll time.Duration) *daemon {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	srcCfg.Logger = log
	return startDaemonSource(t, ctx, cancel, log, srcCfg, poll, nil)
}

// startDaemonSource runs the loop over a source opened from srcCfg (for
// source settings such as a status branch).
func startDaemonSource(t testing.TB, ctx context.Context, cancel context.CancelFunc, log *slog.Logger, srcCfg gitsource.Config,
	poll time.Duration, configure func(*gitops.Config)) *daemon {
	t.Helper()
	cfg := gitops.Config{StatusInterval: 50 * time.Millisecond, PushApprovalBranches: true, Log: log}
	if configure != nil {
		configure(&cfg)
	}
	src, err := gitsource.Open(ctx, srcCfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	cfg.Source = src
	d, err := gitops.Open(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	dm := &daemon{Daemon: d, trigger: make(chan struct{}, 1), cancel: cancel, done: make(chan error, 1),
		remote: strings.TrimPrefix(srcCfg.URL, "file://")}
	go func() { dm.done <- d.Run(ctx, dm.trigger) }()
	if poll > 0 {
		go func() {
			tick := time.NewTicker(poll)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					dm.poke()
				}
			}
		}()
	}
	t.Cleanup(func() { dm.stop(t) })
	return dm
}

func (d *daemon) poke() {
	select {
	case d.trigger <- struct{}{}:
	default:
	}
}

// stop shuts the loop down gracefully (it pushes pending status).
func (d *daemon) stop(t testing.TB) {
	d.once.Do(func() {
		d.cancel()
		if err := <-d.done; err != nil {
			t.Errorf("daemon stopped with %v", err)
		}
	})
}

// quickstartFleet is examples/quickstart with members available at once
// and a 1s soak instead of a minute, so real-time tests stay short.
func quickstartFleet(t testing.TB) map[string][]byte {
	t.Helper()
	return timedFleet(t, "0s", "1s")
}

// timedFleet is examples/quickstart with every member available after
// availableAfter and the staging soak set to soak.
func timedFleet(t testing.TB, availableAfter, soak string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	entries, err := os.ReadDir("../../examples/quickstart")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("../../examples/quickstart", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		s := strings.ReplaceAll(string(data), "gitfleet.io/sim-available-after: 10s", "gitfleet.io/sim-available-after: "+availableAfter)
		s = strings.ReplaceAll(s, "waitTime: 1m", "waitTime: "+soak)
		files[e.Name()] = []byte(s)
	}
	return files
}

func encode(t testing.TB, obj runtime.Object) []byte {
	t.Helper()
	data, err := status.Encode(obj)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// clone is a second person's working clone of the same remote.
func (r *fleetRepo) clone(name string) *fleetRepo {
	r.t.Helper()
	c := &fleetRepo{t: r.t, remote: r.remote, work: filepath.Join(r.t.TempDir(), name), made: r.made}
	gitCmd(r.t, filepath.Dir(c.work), "clone", "-q", "-b", "main", r.remote, c.work)
	return c
}

// takeAway makes the remote disappear (renamed, as a deleted or moved
// repository looks to a fetch); the function returned brings it back.
func (r *fleetRepo) takeAway() (bringBack func()) {
	r.t.Helper()
	away := r.remote + ".away"
	if err := os.Rename(r.remote, away); err != nil {
		r.t.Fatal(err)
	}
	return func() {
		r.t.Helper()
		if err := os.Rename(away, r.remote); err != nil {
			r.t.Fatal(err)
		}
	}
}

// git runs git on the bare remote.
func (r *fleetRepo) git(args ...string) string {
	r.t.Helper()
	return gitCmd(r.t, r.remote, args...)
}

// refUpdates makes the remote refuse non-fast-forward pushes and log every
// ref update it accepts ("<ref> <old> <new>" per line, through the update
// hook); it returns a function reading the log.
func (r *fleetRepo) refUpdates() func() [][3]string {
	r.t.Helper()
	r.git("config", "receive.denyNonFastForwards", "true")
	r.git("config", "receive.denyDeletes", "true")
	logFile := filepath.Join(r.t.TempDir(), "ref-updates.log")
	hook := "#!/bin/sh\necho \"$1 $2 $3\" >> '" + logFile + "'\n"
	if err := os.WriteFile(filepath.Join(r.remote, "hooks", "update"), []byte(hook), 0o755); err != nil {
		r.t.Fatal(err)
	}
	return func() [][3]string {
		data, err := os.ReadFile(logFile)
		if err != nil && !os.IsNotExist(err) {
			r.t.Fatal(err)
		}
		var out [][3]string
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if f := strings.Fields(line); len(f) == 3 {
				out = append(out, [3]string{f[0], f[1], f[2]})
			}
		}
		return out
	}
}

// history returns every version of a file on main, oldest first, as
// (commit, content) pairs.
func (r *fleetRepo) history(path string) (commits []string, versions [][]byte) {
	r.t.Helper()
	out := r.git("log", "--reverse", "--format=%H", "main", "--", path)
	for _, c := range strings.Fields(out) {
		data, err := exec.Command("git", "--git-dir", r.remote, "show", c+":"+path).Output()
		if err != nil {
			continue // deleted in this commit
		}
		commits, versions = append(commits, c), append(versions, data)
	}
	return commits, versions
}

// checkRunHistory decodes every version of a run's status file in Git and
// fails the test if any of them shows a stage with clusters started before
// the previous stage succeeded, or more clusters updating at once than the
// stage's maxConcurrency allows. It returns how many versions it checked.
func checkRunHistory(t testing.TB, r *fleetRepo, name string) int {
	t.Helper()
	path := "status/runs/" + name + ".yaml"
	commits, versions := r.history(path)
	for i, data := range versions {
		obj, err := status.DecodeFile(path, data)
		if err != nil {
			t.Fatalf("version %s of %s: %v", commits[i], path, err)
		}
		run := obj.(*fleet.UpdateRun)
		for _, problem := range runInvariantViolations(run) {
			t.Errorf("%s at commit %s: %s", path, commits[i][:12], problem)
		}
	}
	if len(versions) == 0 {
		t.Errorf("no version of %s in Git", path)
	}
	return len(versions)
}

// runInvariantViolations lists what no persisted run status may ever show.
func runInvariantViolations(run *fleet.UpdateRun) []string {
	var out []string
	if run.Status.StagedUpdateStrategySnapshot == nil {
		return nil
	}
	stages := run.Status.StagedUpdateStrategySnapshot.Stages
	for i, st := range run.Status.StagesStatus {
		started, updating := 0, 0
		for _, c := range st.Clusters {
			if meta.IsStatusConditionTrue(c.Conditions, fleet.ClusterUpdatingConditionStarted) {
				started++
				if meta.FindStatusCondition(c.Conditions, fleet.ClusterUpdatingConditionSucceeded) == nil {
					updating++
				}
			}
		}
		if i < len(stages) {
			limit := 1
			if mc := stages[i].MaxConcurrency; mc != nil {
				if v, err := intstr.GetScaledValueFromIntOrPercent(mc, len(st.Clusters), false); err == nil && v > limit {
					limit = v
				}
			}
			if updating > limit {
				out = append(out, fmt.Sprintf("stage %s has %d clusters updating at once, maxConcurrency allows %d", st.StageName, updating, limit))
			}
		}
		if i > 0 && (started > 0 || st.StartTime != nil) &&
			!meta.IsStatusConditionTrue(run.Status.StagesStatus[i-1].Conditions, fleet.StageUpdatingConditionSucceeded) {
			out = append(out, fmt.Sprintf("stage %s started before stage %s succeeded", st.StageName, run.Status.StagesStatus[i-1].StageName))
		}
	}
	if meta.IsStatusConditionTrue(run.Status.Conditions, fleet.StagedUpdateRunConditionSucceeded) {
		for _, st := range run.Status.StagesStatus {
			if !meta.IsStatusConditionTrue(st.Conditions, fleet.StageUpdatingConditionSucceeded) {
				out = append(out, fmt.Sprintf("run succeeded but stage %s did not", st.StageName))
			}
		}
	}
	return out
}

// withoutTimes is a run with every timestamp cleared, for comparing runs
// that happened at different times.
func withoutTimes(run *fleet.UpdateRun) *fleet.UpdateRun {
	run = run.DeepCopy()
	run.CreationTimestamp = metav1.Time{}
	run.ResourceVersion = ""
	clearConds := func(conds []metav1.Condition) {
		for i := range conds {
			conds[i].LastTransitionTime = metav1.Time{}
		}
	}
	clearStage := func(st *fleet.StageUpdatingStatus) {
		st.StartTime, st.EndTime = nil, nil
		clearConds(st.Conditions)
		for i := range st.Clusters {
			clearConds(st.Clusters[i].Conditions)
		}
		for i := range st.AfterStageTaskStatus {
			clearConds(st.AfterStageTaskStatus[i].Conditions)
		}
		for i := range st.BeforeStageTaskStatus {
			clearConds(st.BeforeStageTaskStatus[i].Conditions)
		}
	}
	clearConds(run.Status.Conditions)
	for i := range run.Status.StagesStatus {
		clearStage(&run.Status.StagesStatus[i])
	}
	if run.Status.DeletionStageStatus != nil {
		clearStage(run.Status.DeletionStageStatus)
	}
	return run
}

// conditionOutline is every condition of a run as type/status/reason,
// stage by stage and cluster by cluster: what must not depend on when (or
// how often) gitfleet was restarted.
func conditionOutline(run *fleet.UpdateRun) []string {
	var out []string
	add := func(where string, conds []metav1.Condition) {
		for _, c := range conds {
			out = append(out, fmt.Sprintf("%s %s=%s (%s)", where, c.Type, c.Status, c.Reason))
		}
	}
	add("run", run.Status.Conditions)
	stages := append([]fleet.StageUpdatingStatus{}, run.Status.StagesStatus...)
	if run.Status.DeletionStageStatus != nil {
		stages = append(stages, *run.Status.DeletionStageStatus)
	}
	for _, st := range stages {
		add("stage "+st.StageName, st.Conditions)
		for _, c := range st.Clusters {
			add("stage "+st.StageName+" cluster "+c.ClusterName, c.Conditions)
		}
		for _, task := range st.AfterStageTaskStatus {
			add("stage "+st.StageName+" after-stage "+string(task.Type), task.Conditions)
		}
		for _, task := range st.BeforeStageTaskStatus {
			add("stage "+st.StageName+" before-stage "+string(task.Type), task.Conditions)
		}
	}
	return out
}

// approve commits the Approved condition into an approval request, as
// `gitfleet approve` does, once gitfleet has created the request.
func (r *fleetRepo) approve(name string) {
	r.t.Helper()
	eventually(r.t, "approval request "+name, func() bool { return r.approval(name) != nil })
	r.commit("approve "+name, map[string][]byte{"approvals/" + name + ".yaml": encode(r.t, status.ApprovedCopy(r.approval(name), time.Now()))})
}

var (
	binaryOnce sync.Once
	binaryDir  string
	binaryPath string
	binaryErr  error
)

// TestMain removes the gitfleet binary built for the tests that run it.
func TestMain(m *testing.M) {
	renderproc.Main() // serve renders in a child process of this binary
	code := m.Run()
	if binaryDir != "" {
		_ = os.RemoveAll(binaryDir)
	}
	os.Exit(code)
}

// gitfleetBinary builds cmd/gitfleet once per test binary and returns its
// path.
func gitfleetBinary(t testing.TB) string {
	t.Helper()
	binaryOnce.Do(func() {
		binaryDir, binaryErr = os.MkdirTemp("", "gitfleet-bin-")
		if binaryErr != nil {
			return
		}
		binaryPath = filepath.Join(binaryDir, "gitfleet")
		cmd := exec.Command("go", "build", "-o", binaryPath, "./cmd/gitfleet")
		cmd.Dir = "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			binaryErr = fmt.Errorf("go build ./cmd/gitfleet: %v\n%s", err, out)
		}
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath
}

// serveProcess is `gitfleet serve` running as a real process, in a
// process group of its own (git and kubectl it runs die with it).
type serveProcess struct {
	*testproc.Server
	t   testing.TB
	cmd *exec.Cmd // its ProcessState once it exited
}

// startServe runs the built binary's serve command with args (the log
// goes to a file, shown when the test fails). Every wait of the test fails
// at once when serve exits, until the test kills it (kill) or expects it
// to exit (expectExit).
func startServe(t testing.TB, args ...string) *serveProcess {
	t.Helper()
	bin := gitfleetBinary(t)
	cmd := exec.Command(bin, append([]string{"serve"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null")
	return &serveProcess{Server: startWatched(t, "gitfleet serve", cmd), t: t, cmd: cmd}
}

// kill SIGKILLs the process (no shutdown, no final status push) and waits
// until it is gone; the test's waits no longer watch it.
//
// Only serve is killed, not its process group: its git-receive-pack runs
// the remote's side of a push (on a forge, on the server), and killed
// while updating the local remote's ref it leaves a lock that fails every
// later push (seen in CI: TestKilledServeProcessFinishesTheRunAfterRestart).
// The group goes at cleanup.
func (p *serveProcess) kill() {
	p.expectExit()
	_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.Exited()
}

// expectExit tells the test's waits that serve exiting from now on is
// what the test wants, not a failure.
func (p *serveProcess) expectExit() { unwatch(p.t, p.Server) }

// onFakeClock runs the daemon on clk and commits status at once, so that
// no status commit waits for virtual time: time moves only when the test
// steps it (advanceUntil), and a timed step of a rollout (a soak, a member
// becoming available) holds until then, however slow the machine is.
//
// The retry of a failed fetch stays on the wall clock: a fetch that fails
// by chance (the remote mid-push) is retried without a step, which
// advanceUntil would not make while that failure's status waits to be
// pushed.
func onFakeClock(clk *clock.Fake) func(*gitops.Config) {
	return func(c *gitops.Config) {
		c.Clock = clk
		c.StatusInterval = -1
		c.RetryClock = clock.Real{}
	}
}

// remoteRefs lists the remote's refs and what they point at ("" when the
// remote is not a local path).
func (d *daemon) remoteRefs() string {
	if !filepath.IsAbs(d.remote) {
		return ""
	}
	out, _ := gitRun(d.remote, "--git-dir", d.remote, "for-each-ref")
	return out
}

// quiet reports whether the daemon has nothing to do until a timer fires
// or a commit arrives: no reconcile queued or running, no delivery pending,
// no status unpushed.
func (d *daemon) quiet() bool {
	return d.Controller.Idle() && d.Hub.(*embedded.Hub).PendingDeliveries() == 0 && !d.Store.Pending()
}

// advanceUntil waits for cond, stepping clk to its next timer whenever the
// daemon is quiet and cond does not hold: one timer at a time, and never
// while the daemon is still working on the last one, so no state the test
// waits for is stepped over.
func (d *daemon) advanceUntil(t testing.TB, clk *clock.Fake, what string, cond func() bool) {
	t.Helper()
	eventually(t, what, func() bool {
		quiet, refs := d.quiet(), d.remoteRefs()
		if cond() {
			return true
		}
		// Quiet before and after cond, and nothing pushed meanwhile: cond
		// saw the state the daemon rests in. (Quiet twice alone is not
		// enough: a reconcile and its status push can fit between.)
		if quiet && d.quiet() && d.remoteRefs() == refs {
			clk.Step()
		}
		return false
	})
}

// settle waits until the daemon reports itself idle and no requeue timer
// of its controller is due soon (the debounced placement status update,
// which Idle does not wait for, is due within a second; a waiting run's
// next poll is a minute away).
func (d *daemon) settle(t testing.TB, r *fleetRepo) {
	t.Helper()
	eventually(t, "the daemon to settle", d.settled)
}

// settleOn is settle for a daemon on a fake clock: a timer due within the
// debounce (say the placement status update the last pass armed) fires
// only when the test steps the clock, so waiting without stepping can wait
// forever when the pass that arms it lands after the test's last step.
func (d *daemon) settleOn(t testing.TB, clk *clock.Fake) {
	t.Helper()
	d.advanceUntil(t, clk, "the daemon to settle", d.settled)
}

func (d *daemon) settled() bool {
	idle, err := d.Idle(context.Background())
	return err == nil && idle && d.Controller.TimersDueWithin(5*time.Second) == 0
}
