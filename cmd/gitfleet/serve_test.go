package main

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/status"
)

// quickstartRemote is a bare repository holding examples/quickstart with
// the members' availability delay and the staging soak replaced, as a
// person would have pushed it.
func quickstartRemote(t *testing.T, availableAfter, soak string) string {
	t.Helper()
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	copyTree(t, "../../examples/quickstart", work)
	for _, name := range []string{"members.yaml", "strategy.yaml"} {
		p := filepath.Join(work, name)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		s := strings.ReplaceAll(string(data), "gitfleet.io/sim-available-after: 10s", "gitfleet.io/sim-available-after: "+availableAfter)
		s = strings.ReplaceAll(s, "waitTime: 1m", "waitTime: "+soak)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitCmd(t, work, "init", "-q", "-b", "main")
	gitCmd(t, work, "add", ".")
	gitCmd(t, work, "commit", "-q", "-m", "quickstart")
	remote := filepath.Join(dir, "fleet.git")
	gitCmd(t, dir, "clone", "-q", "--bare", work, remote)
	return remote
}

// show returns a file of a bare repository's revision, or nil.
func show(remote, rev, path string) []byte {
	out, err := exec.Command("git", "--git-dir", remote, "show", rev+":"+path).Output()
	if err != nil {
		return nil
	}
	return out
}

func decodeFrom(t *testing.T, remote, rev, path string) any {
	t.Helper()
	data := show(remote, rev, path)
	if data == nil {
		t.Fatalf("%s:%s is not in the repository", rev, path)
	}
	obj, err := status.DecodeFile(path, data)
	if err != nil {
		t.Fatalf("decoding %s:%s: %v", rev, path, err)
	}
	return obj
}

func serveArgs(remote string, t *testing.T, extra ...string) []string {
	return append([]string{"serve", "--repo", "file://" + remote, "--cache-dir", t.TempDir(),
		"--interval", "100ms", "--status-interval", "50ms", "--metrics-addr", "", "--log-level", "warn"}, extra...)
}

// CI's use of serve: --until-idle returns 0 once the rollout waits on a
// person — here the canary approval — with the run status, the approval
// request and the branch that approves it pushed.
func TestServeUntilIdleExitsZeroOnceTheRunWaitsForApproval(t *testing.T) {
	remote := quickstartRemote(t, "0s", "1s")
	start := time.Now()
	out, errOut, code := gitfleet(t, serveArgs(remote, t, "--until-idle", "--timeout", "20m")...)
	if code != 0 {
		t.Fatalf("exit %d after %s\nstdout: %s\nstderr: %s", code, time.Since(start), out, errOut)
	}
	t.Logf("idle after %s", time.Since(start).Round(time.Millisecond))

	run := decodeFrom(t, remote, "main", "status/runs/example-run.yaml").(*fleet.UpdateRun)
	progressing := meta.FindStatusCondition(run.Status.Conditions, fleet.StagedUpdateRunConditionProgressing)
	if run.Phase() != fleet.PhaseWaiting || progressing == nil || !strings.Contains(progressing.Message, "stage canary") {
		t.Errorf("run is %s (%+v), want Waiting in stage canary", run.Phase(), progressing)
	}
	ar := decodeFrom(t, remote, "main", "approvals/example-run-after-canary.yaml").(*fleet.ApprovalRequest)
	if meta.FindStatusCondition(ar.Status.Conditions, fleet.ApprovalRequestConditionApproved) != nil {
		t.Errorf("the approval request on main is already approved: %+v", ar.Status.Conditions)
	}
	branch := "gitfleet/approve/example-run-after-canary"
	approved := decodeFrom(t, remote, branch, "approvals/example-run-after-canary.yaml").(*fleet.ApprovalRequest)
	c := meta.FindStatusCondition(approved.Status.Conditions, fleet.ApprovalRequestConditionApproved)
	if c == nil || c.Status != "True" || c.ObservedGeneration != 1 {
		t.Errorf("branch %s approves with %+v, want Approved=True at generation 1", branch, c)
	}
	// Everything the rollout did so far is in Git, the placement's status
	// included: all three clusters on snapshot 0.
	p := decodeFrom(t, remote, "main", "status/placements/example-placement.yaml").(*fleet.Placement)
	if p.Status.ObservedResourceIndex != "0" {
		t.Errorf("placement status observedResourceIndex %q, want 0 (every cluster rolled out):\n%s", p.Status.ObservedResourceIndex,
			show(remote, "main", "status/placements/example-placement.yaml"))
	}
}

// A rollout that cannot reach a person's step in time — the staging soak is
// an hour — makes --until-idle give up at --timeout with exit 1 and say why
// (had it waited for the soak, the test binary's -timeout would end it).
func TestServeUntilIdleTimesOutWithExitOneWhileARunIsProgressing(t *testing.T) {
	remote := quickstartRemote(t, "0s", "1h")
	out, errOut, code := gitfleet(t, serveArgs(remote, t, "--until-idle", "--timeout", "1s")...)
	if code != 1 || !strings.Contains(errOut, "not idle after --timeout 1s") {
		t.Fatalf("exit %d, want 1 saying it was not idle\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	// The status reached so far is pushed on the way out.
	if show(remote, "main", "status/runs/example-run.yaml") == nil {
		t.Error("no run status was pushed before giving up")
	}
}

// A remote that is not there yet when serve starts (down, not created, a
// TLS or DNS failure) is retried with backoff, /readyz answering 503 until
// the first clone succeeds, instead of ending serve with exit 1.
func TestServeRetriesTheFirstCloneUntilTheRemoteAppears(t *testing.T) {
	later := quickstartRemote(t, "0s", "1s")
	remote := filepath.Join(t.TempDir(), "fleet.git") // not there yet
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	type result struct {
		out, errOut string
		code        int
	}
	done := make(chan result, 1)
	go func() {
		args := serveArgs(remote, t, "--until-idle", "--timeout", "20m", "--metrics-addr", addr)
		out, errOut, code := gitfleet(t, args...)
		done <- result{out, errOut, code}
	}()
	ready := func() int {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	await.Until(t, "/readyz to answer", func() bool { return ready() != 0 })
	if code := ready(); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz while the remote is missing: %d, want 503", code)
	}
	if err := os.Rename(later, remote); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.code != 0 {
		t.Fatalf("serve exited %d once the remote appeared\nstdout: %s\nstderr: %s", r.code, r.out, r.errOut)
	}
	if show(remote, "main", "status/runs/example-run.yaml") == nil {
		t.Error("no run status was pushed after the remote appeared")
	}
}

// A repository that is not there at start: each retry says which one
// (credentials redacted) and what to check, once per attempt.
func TestServeStartErrorsSayWhatToDo(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "fleet.git")
	url := "https://gitfleet:s3cr3t@127.0.0.1:1/acme/fleet.git"
	for _, tc := range []struct{ repo, names, step string }{
		{"file://" + missing, missing, "check that the repository and the branch exist"},
		{url, "https://gitfleet:***@127.0.0.1:1/acme/fleet.git", "check that the remote is reachable"},
	} {
		var logs bytes.Buffer
		log := slog.New(slog.NewTextHandler(&logs, nil))
		ctx, cancel := context.WithCancel(context.Background())
		attempts := 0
		err := retryStart(ctx, log, tc.repo, func() error {
			if attempts++; attempts == 2 {
				cancel()
			}
			_, err := gitsource.Open(ctx, gitsource.Config{URL: tc.repo, Branch: "main", CacheDir: t.TempDir(), AllowInsecureHTTP: true})
			return err
		})
		cancel()
		if err == nil {
			t.Fatalf("%s: started", tc.repo)
		}
		out := logs.String()
		if n := strings.Count(out, "cannot start"); n != 1 {
			t.Errorf("%s: %d retry lines for 1 retry:\n%s", tc.repo, n, out)
		}
		if !strings.Contains(out, tc.names) || !strings.Contains(out, tc.step) || strings.Contains(out, "s3cr3t") {
			t.Errorf("%s: the log does not name %s and say %q (or shows the password):\n%s", tc.repo, tc.names, tc.step, out)
		}
	}
}

// The metrics endpoint listens on loopback unless told otherwise (the
// deploy manifests pass :8080): a quickstart on a laptop exposes nothing.
func TestServeListensOnLoopbackByDefault(t *testing.T) {
	if got := newServeCommand().Flags().Lookup("metrics-addr").DefValue; got != "127.0.0.1:8080" {
		t.Errorf("--metrics-addr defaults to %q, want 127.0.0.1:8080", got)
	}
}

// asGitfleet set in its environment makes the test binary run the command
// itself (TestMain), for the tests of what only a process shows: signals
// and exit codes.
const asGitfleet = "GITFLEET_TEST_AS_GITFLEET"

// SIGTERM ends serve cleanly: exit 0 and a last line saying it shut down;
// the start line names the hub in use.
func TestServeOnSIGTERMLogsItsShutdownAndExitsZero(t *testing.T) {
	remote := quickstartRemote(t, "0s", "1h")
	cmd := exec.Command(os.Args[0], "serve", "--repo", "file://"+remote, "--cache-dir", t.TempDir(),
		"--interval", "100ms", "--metrics-addr", "", "--log-level", "info", "--log-format", "text")
	cmd.Env = append(os.Environ(), asGitfleet+"=1")
	var log syncBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	await.Until(t, "serve to serve", func() bool { return strings.Contains(log.String(), "msg=serving") })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	out := log.String()
	if err != nil {
		t.Fatalf("serve ended with %v on SIGTERM, want exit 0; log:\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, `msg="shut down on SIGTERM or Ctrl-C, after the final status push"`) {
		t.Errorf("last line %q, want the shutdown; log:\n%s", last, out)
	}
	if !strings.Contains(out, `msg="hub started: embedded, its state restored from the status tree" hub=embedded`) {
		t.Errorf("the start line does not name the embedded hub; log:\n%s", out)
	}
}

// syncBuffer is a bytes.Buffer a process writes to while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
