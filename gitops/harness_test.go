package gitops_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitops"
	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/status"
)

// fleetRepo is a bare "remote" repository and a person's working clone of
// it, both driven with the real git CLI.
type fleetRepo struct {
	t      testing.TB
	remote string // bare repository
	work   string // a person's clone
}

func gitCmd(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=dev", "GIT_AUTHOR_EMAIL=dev@example.com",
		"GIT_COMMITTER_NAME=dev", "GIT_COMMITTER_EMAIL=dev@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// newFleetRepo pushes files as the first commit of main.
func newFleetRepo(t testing.TB, files map[string][]byte) *fleetRepo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	root := t.TempDir()
	r := &fleetRepo{t: t, remote: filepath.Join(root, "fleet.git"), work: filepath.Join(root, "work")}
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
	if out := gitCmd(r.t, r.work, "ls-remote", "--heads", "origin", "main"); out != "" {
		gitCmd(r.t, r.work, "pull", "-q", "--rebase", "origin", "main")
	}
	for name, data := range files {
		p := filepath.Join(r.work, name)
		if data == nil {
			gitCmd(r.t, r.work, "rm", "-q", name)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			r.t.Fatal(err)
		}
		gitCmd(r.t, r.work, "add", name)
	}
	gitCmd(r.t, r.work, "commit", "-q", "-m", msg)
	for i := 0; ; i++ {
		cmd := exec.Command("git", "push", "-q", "origin", "HEAD:main")
		cmd.Dir = r.work
		if out, err := cmd.CombinedOutput(); err == nil {
			break
		} else if i == 20 {
			r.t.Fatalf("git push: %v\n%s", err, out)
		}
		gitCmd(r.t, r.work, "pull", "-q", "--rebase", "origin", "main")
	}
	return gitCmd(r.t, r.work, "rev-parse", "HEAD")
}

// file returns a file of the remote's main branch, or nil.
func (r *fleetRepo) file(path string) []byte {
	cmd := exec.Command("git", "--git-dir", r.remote, "show", "main:"+path)
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

// run returns a run's status file from the remote, or nil.
func (r *fleetRepo) run(name string) *fleet.UpdateRun {
	o := r.object("status/runs/" + name + ".yaml")
	if o == nil {
		return nil
	}
	return o.(*fleet.UpdateRun)
}

func (r *fleetRepo) approval(name string) *fleet.ApprovalRequest {
	o := r.object("approvals/" + name + ".yaml")
	if o == nil {
		return nil
	}
	return o.(*fleet.ApprovalRequest)
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runPhase waits for a run to reach a phase in the remote's status tree.
func (r *fleetRepo) waitPhase(name, phase string, timeout time.Duration) *fleet.UpdateRun {
	r.t.Helper()
	var last *fleet.UpdateRun
	eventually(r.t, fmt.Sprintf("run %s to be %s", name, phase), timeout, func() bool {
		last = r.run(name)
		return last != nil && last.Phase() == phase
	})
	return last
}

// daemon is a gitfleet serve loop running in the test process.
type daemon struct {
	*gitops.Daemon
	trigger chan struct{}
	cancel  context.CancelFunc
	done    chan error
	once    sync.Once
}

// startDaemon opens the repository into cacheDir and runs the loop; a
// ticker stands in for the poller.
func startDaemon(t testing.TB, url, cacheDir string, poll time.Duration) *daemon {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	src, err := gitsource.Open(ctx, gitsource.Config{URL: url, Branch: "main", CacheDir: cacheDir, Logger: log})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	d, err := gitops.Open(ctx, gitops.Config{Source: src, StatusInterval: 50 * time.Millisecond,
		PushApprovalBranches: true, Log: log})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	dm := &daemon{Daemon: d, trigger: make(chan struct{}, 1), cancel: cancel, done: make(chan error, 1)}
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
	files := map[string][]byte{}
	entries, err := os.ReadDir("../examples/quickstart")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("../examples/quickstart", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		s := strings.ReplaceAll(string(data), "gitfleet.io/sim-available-after: 10s", "gitfleet.io/sim-available-after: 0s")
		s = strings.ReplaceAll(s, "waitTime: 1m", "waitTime: 1s")
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
