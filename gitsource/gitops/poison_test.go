package gitops_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/gitsource/gitops"
	"github.com/gitfleet/gitfleet/render"
	"github.com/gitfleet/gitfleet/render/renderproc"
)

const quickstartKustomization = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n" +
	"  - members.yaml\n  - placement.yaml\n  - run.yaml\n  - strategy.yaml\n  - workload.yaml\n"

// kustomized is the quickstart fleet built with kustomize, with extra lines
// appended to its kustomization.yaml.
func kustomized(extra string) []byte { return []byte(quickstartKustomization + extra) }

// A commit that cannot be rendered is a recorded failure, not a wall, for
// every kind of poison a person can push into a kustomize fleet: each is
// recorded in status/commits/<sha>.yaml with kustomize's message and
// skipped; the approval merged after them is taken and the run finishes; a
// fix yields the next snapshot; and a daemon restarted with an empty cache,
// on a tip that does not render, resumes with the last good fleet objects.
func TestACommitThatDoesNotRenderIsRecordedAndSkipped(t *testing.T) {
	poisons := []struct {
		name  string
		files map[string][]byte
		want  string // in the recorded message
	}{
		{"missing resource", map[string][]byte{"kustomization.yaml": kustomized("  - missing.yaml\n")}, "missing.yaml"},
		{"resource outside the repository", map[string][]byte{"kustomization.yaml": kustomized("  - ../../outside\n")}, "outside"},
		{"remote base", map[string][]byte{"kustomization.yaml": kustomized("  - github.com/kubefleet-dev/kubefleet/examples/stagedupdaterun?ref=main\n")}, "kubefleet-dev"},
		{"generator plugin", map[string][]byte{
			"kustomization.yaml": kustomized("generators:\n  - gen.yaml\n"),
			"gen.yaml":           []byte("apiVersion: someteam.example.com/v1\nkind: SecretsFromVault\nmetadata:\n  name: gen\n"),
		}, "kustomization.yaml"},
		{"KRM exec function", map[string][]byte{
			"kustomization.yaml": kustomized("transformers:\n  - fn.yaml\n"),
			"fn.yaml": []byte("apiVersion: example.com/v1\nkind: Exec\nmetadata:\n  name: fn\n  annotations:\n" +
				"    config.kubernetes.io/function: |\n      exec:\n        path: /bin/sh\n"),
		}, "kustomization.yaml"},
		{"helm chart", map[string][]byte{"kustomization.yaml": kustomized("helmCharts:\n  - name: nginx\n    repo: https://charts.example.com\n")}, "kustomization.yaml"},
		{"configMapGenerator reading /etc/passwd", map[string][]byte{
			"kustomization.yaml": kustomized("configMapGenerator:\n  - name: leak\n    namespace: test-namespace\n    files:\n      - /etc/passwd\n"),
		}, "passwd"},
		{"broken kustomization.yaml", map[string][]byte{"kustomization.yaml": []byte("resources: [members.yaml\n")}, "kustomization.yaml"},
		{"file over the size limit", map[string][]byte{
			"kustomization.yaml": kustomized("  - big.yaml\n"),
			"big.yaml":           append([]byte("# "), bytes.Repeat([]byte("x"), 2<<20)...),
		}, "big.yaml"},
	}

	files := timedFleet(t, "0s", "1s")
	files["kustomization.yaml"] = []byte(quickstartKustomization)
	r := newFleetRepo(t, files)
	url := "file://" + r.remote
	source := func(cache string) gitsource.Config {
		return gitsource.Config{URL: url, Branch: "main", CacheDir: cache, MaxFileSize: 1 << 20}
	}
	d := startDaemonWithSource(t, source(t.TempDir()), 0)
	eventually(t, "the canary approval request", func() bool { return r.approval(approvalName) != nil })

	// Each poison's commit is the good tree with that poison's files, so
	// each fails for its own reason. They come as one push, one commit a
	// poison, and the loop renders each on its own.
	good := maps.Clone(files)
	msgs, changes, tree := make([]string, len(poisons)), make([]map[string][]byte, len(poisons)), good
	for i, p := range poisons {
		next := maps.Clone(good)
		maps.Copy(next, p.files)
		msgs[i], changes[i], tree = "poison: "+p.name, treeChange(tree, next), next
	}
	commits := r.commitEach(msgs, changes)
	d.poke()
	for i, commit := range commits {
		want := poisons[i].want
		path := "status/commits/" + commit + ".yaml"
		eventually(t, path, func() bool { return r.file(path) != nil })
		rec, ok := r.object(path).(*fleet.Commit)
		if !ok {
			t.Fatalf("%s holds %T", path, r.object(path))
		}
		c := meta.FindStatusCondition(rec.Status.Conditions, fleet.CommitConditionRendered)
		if c == nil || c.Status != "False" || c.Reason != fleet.RenderFailedReason || !strings.Contains(c.Message, want) {
			t.Errorf("%s (%s): Rendered condition %+v, want False/%s mentioning %q", path, rec.Spec.Subject, c, fleet.RenderFailedReason, want)
		}
	}
	if p := "status/snapshots/example-placement/1.yaml"; r.file(p) != nil {
		t.Errorf("%s exists: a snapshot was made from a commit that did not render", p)
	}

	// The tip does not render when the approval is merged.
	again := maps.Clone(good)
	again["kustomization.yaml"] = kustomized("  - missing.yaml\n")
	last := r.commit("poison again", treeChange(tree, again))
	r.approve(approvalName)
	d.poke()
	r.waitPhase("example-run", fleet.PhaseSucceeded)
	eventually(t, "the record of the last poison", func() bool { return r.file("status/commits/"+last+".yaml") != nil })
	if err := d.LastError(); err != nil {
		t.Errorf("the daemon reports %v; a commit that does not render must not be an error of the loop", err)
	}

	// Restarted with an empty cache on that tip, gitfleet resumes.
	d.stop(t)
	d = startDaemonWithSource(t, source(t.TempDir()), 0)
	if err := d.LastError(); err != nil {
		t.Fatalf("after a restart on a tip that does not render: %v", err)
	}
	if run := r.run("example-run"); run == nil || run.Phase() != fleet.PhaseSucceeded {
		t.Fatalf("after the restart the run is %v, want it kept Succeeded", run)
	}

	// A fix renders again and makes the next snapshot.
	fix := undo(good, map[string][]byte{"kustomization.yaml": nil})
	fix["workload.yaml"] = []byte(strings.Replace(string(files["workload.yaml"]), "key: value1", "key: value2", 1))
	fixed := r.commit("fix the kustomization", fix)
	d.poke()
	eventually(t, "snapshot 1 from the fix", func() bool { return r.file("status/snapshots/example-placement/1.yaml") != nil })
	snap := r.object("status/snapshots/example-placement/1.yaml").(*fleet.ResourceSnapshot)
	if got := snap.Annotations[fleet.CommitAnnotation]; got != fixed {
		t.Errorf("snapshot 1 records commit %s, want the fix %s", got, fixed)
	}
}

// undo is the change that puts every file of changed back as it is in good
// (deleting the ones good does not have).
func undo(good, changed map[string][]byte) map[string][]byte {
	out := map[string][]byte{}
	for name := range changed {
		out[name] = good[name] // nil deletes
	}
	return out
}

// slowKustomization is a commit whose render would take hours: kustomize
// applies each of 300 patches to each of 300 ConfigMaps (issue 22's
// reproduction was one patch of 10,000 documents).
func slowKustomization() map[string][]byte {
	var res, k strings.Builder
	for i := range 300 {
		fmt.Fprintf(&res, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\n  namespace: default\ndata:\n  k: v\n", i)
	}
	k.WriteString("resources:\n- cms.yaml\npatches:\n")
	for i := range 300 {
		fmt.Fprintf(&k, "- target:\n    kind: ConfigMap\n  patch: |-\n    - op: add\n      path: /data/p%d\n      value: x\n", i)
	}
	return map[string][]byte{"kustomization.yaml": []byte(k.String()), "cms.yaml": []byte(res.String())}
}

// watchRenders renders through renderproc as serve does, with limit
// changing the limits of the commits it picks (by their files), and says
// when the render of a commit with a kustomization.yaml (slowKustomization)
// starts and the process id of every worker killed at a limit.
func watchRenders(t *testing.T, limit func(fsys fs.FS, lim *renderproc.Limits)) (started <-chan struct{}, killed <-chan int) {
	t.Helper()
	st, k := make(chan struct{}, 16), make(chan int, 16)
	restore := gitops.SetRenderFunc(func(ctx context.Context, fsys fs.FS, opts render.Options, lim renderproc.Limits) (*render.Content, error) {
		if lim.Timeout <= 0 {
			t.Errorf("render given no time (%s)", lim.Timeout)
		}
		if limit != nil {
			limit(fsys, &lim)
		}
		if has(fsys, "kustomization.yaml") {
			st <- struct{}{}
		}
		c, err := renderproc.Render(ctx, fsys, opts, lim)
		var stopped *renderproc.LimitError
		if errors.As(err, &stopped) {
			k <- stopped.PID
		}
		return c, err
	})
	t.Cleanup(restore)
	return st, k
}

// logBuffer is a log destination the daemon's goroutines share.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func has(fsys fs.FS, name string) bool {
	_, err := fs.Stat(fsys, name)
	return err == nil
}

// assertGone fails unless the worker pid has ended and been reaped.
func assertGone(t *testing.T, pid int) {
	t.Helper()
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("render worker %d still exists (stat: %v)", pid, err)
	}
}

// A render that runs past --render-timeout is killed (its process is gone
// when the commit is recorded), recorded as timed out and skipped, and the
// rollout goes on: the approval merged after it is taken and the run
// finishes.
func TestARenderPastTheTimeLimitIsKilledAndRecorded(t *testing.T) {
	_, killed := watchRenders(t, func(fsys fs.FS, lim *renderproc.Limits) {
		if has(fsys, "kustomization.yaml") {
			lim.Timeout = 300 * time.Millisecond // the slow commit's limit, not the good ones'
		}
	})
	r := newFleetRepo(t, quickstartFleet(t))
	var logs logBuffer
	startDaemonWith(t, "file://"+r.remote, t.TempDir(), 50*time.Millisecond, func(c *gitops.Config) {
		c.Log = slog.New(slog.NewTextHandler(&logs, nil))
	})
	eventually(t, "the canary approval request", func() bool { return r.approval(approvalName) != nil })
	slow := r.commit("a commit whose render would take hours", slowKustomization())
	path := "status/commits/" + slow + ".yaml"
	eventually(t, path, func() bool { return r.file(path) != nil })
	pid := <-killed
	assertGone(t, pid)
	if want := fmt.Sprintf(`level=WARN msg="render stopped at a limit; its process is gone" commit=%s limit="--render-timeout 300ms"`, slow[:12]); !strings.Contains(logs.String(), want) ||
		!strings.Contains(logs.String(), fmt.Sprintf("pid=%d", pid)) {
		t.Errorf("the log does not say %s (pid=%d):\n%s", want, pid, logs.String())
	}
	c := meta.FindStatusCondition(r.object(path).(*fleet.Commit).Status.Conditions, fleet.CommitConditionRendered)
	if c == nil || c.Reason != fleet.RenderTimedOutReason || !strings.Contains(c.Message, "--render-timeout") {
		t.Errorf("Rendered condition %+v, want %s naming --render-timeout", c, fleet.RenderTimedOutReason)
	}
	r.approve(approvalName)
	r.waitPhase("example-run", fleet.PhaseSucceeded)
}

// A render over --render-memory-limit is killed and recorded as
// RenderMemoryExceeded, naming the flag.
func TestARenderOverTheMemoryLimitIsKilledAndRecorded(t *testing.T) {
	_, killed := watchRenders(t, func(fsys fs.FS, lim *renderproc.Limits) {
		if has(fsys, "hungry.yaml") {
			lim.Memory = 1 // any render needs more
		}
	})
	r := newFleetRepo(t, quickstartFleet(t))
	startDaemonWith(t, "file://"+r.remote, t.TempDir(), 50*time.Millisecond, nil)
	eventually(t, "the canary approval request", func() bool { return r.approval(approvalName) != nil })
	hungry := r.commit("a commit whose render needs too much memory", map[string][]byte{"hungry.yaml": []byte(
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hungry\n  namespace: default\n")})
	path := "status/commits/" + hungry + ".yaml"
	eventually(t, path, func() bool { return r.file(path) != nil })
	assertGone(t, <-killed)
	c := meta.FindStatusCondition(r.object(path).(*fleet.Commit).Status.Conditions, fleet.CommitConditionRendered)
	if c == nil || c.Reason != fleet.RenderMemoryExceededReason || !strings.Contains(c.Message, "--render-memory-limit") {
		t.Errorf("Rendered condition %+v, want %s naming --render-memory-limit", c, fleet.RenderMemoryExceededReason)
	}
}

// A commit whose hub content is that of a commit that did not render (a
// CI workflow change on top of a typo, a revert to the typo) is recorded
// with that commit's error and not rendered again.
func TestACommitWithTheContentOfARefusedOneIsNotRenderedAgain(t *testing.T) {
	var mu sync.Mutex
	rendered := map[string]bool{}
	watchRenders(t, func(fsys fs.FS, _ *renderproc.Limits) {
		mu.Lock()
		defer mu.Unlock()
		for _, f := range []string{".github/workflows/ci.yaml", "fix.yaml"} {
			if has(fsys, f) {
				rendered[f] = true
			}
		}
	})
	r := newFleetRepo(t, quickstartFleet(t))
	startDaemonWith(t, "file://"+r.remote, t.TempDir(), 50*time.Millisecond, nil)
	eventually(t, "the canary approval request", func() bool { return r.approval(approvalName) != nil })
	typo := r.commit("a typo", map[string][]byte{"typo.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: [\n")})
	ci := r.commit("CI: a workflow", map[string][]byte{".github/workflows/ci.yaml": []byte("on: push\n")})
	record := func(commit string) *metav1.Condition {
		path := "status/commits/" + commit + ".yaml"
		eventually(t, path, func() bool { return r.file(path) != nil })
		return meta.FindStatusCondition(r.object(path).(*fleet.Commit).Status.Conditions, fleet.CommitConditionRendered)
	}
	first, again := record(typo), record(ci)
	if first == nil || again == nil || again.Reason != first.Reason || again.Message != first.Message {
		t.Errorf("the CI commit is recorded with %+v, want the typo's %+v", again, first)
	}
	mu.Lock()
	if rendered[".github/workflows/ci.yaml"] {
		t.Error("the CI commit was rendered although its hub content is the typo's")
	}
	mu.Unlock()
	// A different content renders again.
	fix := r.commit("the fix", map[string][]byte{"typo.yaml": nil, "fix.yaml": []byte("# nothing\n")})
	_ = fix
	eventually(t, "the fix rendered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return rendered["fix.yaml"]
	})
}

// Stopping the daemon (SIGTERM in serve) while a render runs does not wait
// for the render: its process is killed and the daemon stops. The log has
// said that the render was still running after a second.
func TestStoppingDuringARenderDoesNotWaitForIt(t *testing.T) {
	started, _ := watchRenders(t, nil)
	r := newFleetRepo(t, quickstartFleet(t))
	var logs logBuffer
	d := startDaemonWith(t, "file://"+r.remote, t.TempDir(), 50*time.Millisecond, func(c *gitops.Config) {
		c.RenderTimeout = time.Hour
		c.Log = slog.New(slog.NewTextHandler(&logs, nil))
	})
	slow := r.commit("a commit whose render would take hours", slowKustomization())
	<-started
	eventually(t, "the log saying the render still runs", func() bool {
		return strings.Contains(logs.String(), `msg="render still running" commit=`+slow[:12])
	})
	d.stop(t) // returns although the render would take hours
}

// holdRender holds the render of every commit that has slow.yaml until
// release is called, and says when one started.
func holdRender(t *testing.T) (started <-chan struct{}, release func()) {
	t.Helper()
	ch := make(chan struct{}, 16)
	held := make(chan struct{})
	var once sync.Once
	restore := gitops.SetRenderFunc(func(ctx context.Context, fsys fs.FS, opts render.Options, lim renderproc.Limits) (*render.Content, error) {
		if _, err := fs.Stat(fsys, "slow.yaml"); err == nil {
			ch <- struct{}{}
			select {
			case <-held:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return renderproc.Render(ctx, fsys, opts, lim)
	})
	release = func() { once.Do(func() { close(held) }) }
	t.Cleanup(func() { release(); restore() })
	return ch, release
}

// Nothing waits for a render: while a commit's render is held, an
// approval merged after it is taken and the run finishes, and the daemon
// says which commit it renders; once the render ends, its snapshot is
// recorded as usual, after the approval.
func TestAnApprovalIsTakenWhileASlowRenderRuns(t *testing.T) {
	started, release := holdRender(t)
	files := quickstartFleet(t)
	r := newFleetRepo(t, files)
	d := startDaemonWith(t, "file://"+r.remote, t.TempDir(), 50*time.Millisecond, func(c *gitops.Config) {
		c.RenderTimeout = time.Hour
	})
	eventually(t, "the canary approval request", func() bool { return r.approval(approvalName) != nil })
	slow := r.commit("value2, slow to render", map[string][]byte{
		// An object no placement selects: the commit renders once released.
		"slow.yaml":     []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: slow\n  namespace: elsewhere\n"),
		"workload.yaml": []byte(strings.Replace(string(files["workload.yaml"]), "key: value1", "key: value2", 1)),
	})
	<-started
	eventually(t, "the daemon to say it renders the slow commit", func() bool {
		c, _, ok := d.Rendering()
		return ok && c.String() == slow
	})
	eventually(t, "the source to say the slow commit renders", func() bool {
		src, ok := r.object("status/sources/main.yaml").(*fleet.GitSource)
		if !ok {
			return false
		}
		c := meta.FindStatusCondition(src.Status.Conditions, fleet.GitSourceConditionReconciling)
		return c != nil && c.Reason == fleet.GitSourceRenderingReason && c.Message == "rendering commit "+slow[:7]
	})
	approved := time.Now()
	r.approve(approvalName)
	r.waitPhase("example-run", fleet.PhaseSucceeded)
	t.Logf("the approval was taken %s after its push, while a render was held", time.Since(approved).Round(time.Millisecond))
	if _, _, ok := d.Rendering(); !ok {
		t.Fatal("the render ended before it was released")
	}
	if p := "status/snapshots/example-placement/1.yaml"; r.file(p) != nil {
		t.Fatalf("%s exists before the render of its commit ended", p)
	}
	release()
	eventually(t, "snapshot 1 from the slow commit", func() bool { return r.file("status/snapshots/example-placement/1.yaml") != nil })
	snap := r.object("status/snapshots/example-placement/1.yaml").(*fleet.ResourceSnapshot)
	if got := snap.Annotations[fleet.CommitAnnotation]; got != slow {
		t.Errorf("snapshot 1 records commit %s, want the slow one %s", got, slow)
	}
	eventually(t, "the render to be over", func() bool { _, _, ok := d.Rendering(); return !ok })
	eventually(t, "the source to say no render runs", func() bool {
		src, ok := r.object("status/sources/main.yaml").(*fleet.GitSource)
		return ok && meta.FindStatusCondition(src.Status.Conditions, fleet.GitSourceConditionReconciling) == nil
	})
}

// The measure with a real render: while a kustomization that
// would take hours renders in its process, an approval pushed after it is
// taken and the run finishes (the log says how long it took), and the
// render still runs.
func TestAnApprovalIsTakenDuringARealSlowRender(t *testing.T) {
	started, _ := watchRenders(t, nil)
	r := newFleetRepo(t, quickstartFleet(t))
	d := startDaemonWith(t, "file://"+r.remote, t.TempDir(), 50*time.Millisecond, func(c *gitops.Config) {
		c.RenderTimeout = time.Hour
	})
	eventually(t, "the canary approval request", func() bool { return r.approval(approvalName) != nil })
	slow := r.commit("a commit whose render would take hours", slowKustomization())
	<-started
	eventually(t, "the daemon to say it renders the slow commit", func() bool {
		c, _, ok := d.Rendering()
		return ok && c.String() == slow
	})
	pushed := time.Now()
	r.approve(approvalName)
	r.waitPhase("example-run", fleet.PhaseSucceeded)
	t.Logf("the approval was taken %s after its push, during a real render", time.Since(pushed).Round(time.Millisecond))
	if c, since, ok := d.Rendering(); !ok || c.String() != slow {
		t.Errorf("the slow render is over (%v, since %s) although it takes hours", ok, since)
	}
}
