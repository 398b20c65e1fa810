package testproc_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitfleet/gitfleet/internal/testing/testproc"
)

// start starts sh -c script as a test server named name.
func start(t *testing.T, name, script string) *testproc.Server {
	t.Helper()
	s, err := testproc.Start(name, exec.Command("sh", "-c", script), filepath.Join(t.TempDir(), "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Kill)
	return s
}

const diesOfATakenPort = "echo starting; echo 'listen tcp 127.0.0.1:2379: bind: address already in use' >&2; exit 3"

func TestAWaitEndsWhenAServerDies(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ready func(context.Context) bool
	}{
		{"while nothing answers", func(context.Context) bool { return false }},
		// As a request to a port someone else holds and never answers.
		{"while a request hangs", func(ctx context.Context) bool { <-ctx.Done(); return false }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			running := start(t, "sleeper", "exec sleep 600")
			dying := start(t, "etcd of member1", diesOfATakenPort)
			err := testproc.Wait(t, "the servers to serve", tc.ready, running, dying)
			if err == nil {
				t.Fatal("the wait ended without an error")
			}
			for _, want := range []string{"etcd of member1 exited", "exit status 3", "starting\n", "address already in use", dying.Log} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error does not say %q:\n%v", want, err)
				}
			}
			if !running.Running() {
				t.Error("the server that did not die stopped running")
			}
		})
	}
}

func TestAReadyAnswerDoesNotCountOnceAServerDied(t *testing.T) {
	dying := start(t, "kube-apiserver of member1", diesOfATakenPort)
	// The answer comes after the server died: another process on its port
	// gave it.
	err := testproc.Wait(t, "the API server to serve", func(context.Context) bool {
		<-dying.Exited()
		return true
	}, dying)
	if err == nil || !strings.Contains(err.Error(), "kube-apiserver of member1 exited") {
		t.Fatalf("want the server's exit, got %v", err)
	}
}

func TestAWaitEndsWhenTheServersServe(t *testing.T) {
	s := start(t, "sleeper", "exec sleep 600")
	answers := 0
	err := testproc.Wait(t, "the server to serve", func(context.Context) bool {
		answers++
		return answers == 3
	}, s)
	if err != nil {
		t.Fatal(err)
	}
	if s.ExitError() != nil {
		t.Fatalf("a running server has an exit error: %v", s.ExitError())
	}
	s.Kill()
	if s.Running() {
		t.Fatal("a killed server still runs")
	}
	if err := s.ExitError(); err == nil || !strings.Contains(err.Error(), "signal: killed") {
		t.Fatalf("want killed, got %v", err)
	}
}

func TestTheTailIsTheEndOfTheLog(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		check        func(t *testing.T, tail string)
	}{
		{"its last 15 lines", "seq 1 100", func(t *testing.T, tail string) {
			if want := "86\n87\n88\n89\n90\n91\n92\n93\n94\n95\n96\n97\n98\n99\n100"; tail != want {
				t.Errorf("tail %q, want %q", tail, want)
			}
		}},
		{"at most 4 KB of long lines", "seq 1 3; for i in $(seq 1 10); do printf '%0999d\\n' $i; done", func(t *testing.T, tail string) {
			if len(tail) > 4000+len("…") || !strings.HasPrefix(tail, "…") {
				t.Errorf("the tail has %d bytes, want it cut to 4000", len(tail))
			}
			if want := fmt.Sprintf("%0999d", 10); !strings.HasSuffix(tail, want) {
				t.Errorf("the tail does not end with the last line:\n%s", tail)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := start(t, "counter", tc.script)
			<-s.Exited()
			tc.check(t, s.Tail())
		})
	}
}

func TestAServerKilledForAReasonExitsWithIt(t *testing.T) {
	s := start(t, "gitea", "echo 'Failed to start server'; exec sleep 600")
	err := testproc.Wait(t, "gitea to serve", func(context.Context) bool {
		s.KillFor("it logged that it failed to start its server")
		return false
	}, s)
	if err == nil || !strings.Contains(err.Error(), "gitea exited (killed: it logged that it failed to start its server)") {
		t.Fatalf("want the reason it was killed, got %v", err)
	}
}
