package testproc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gitfleet/gitfleet/internal/testing/await"
)

// Server is a running test server whose exit is noticed the moment it
// happens: a test waiting for it to serve learns at once that it died,
// with its exit status and the end of its log, instead of polling until
// the test's deadline (a port another process took, "address already in
// use", used to look like a slow start for ten minutes).
type Server struct {
	// Name says which server it is in errors: "etcd of member1".
	Name string
	// Log is the file its standard output and error go to.
	Log string

	cmd    *exec.Cmd
	exited chan struct{}
	killed atomic.Pointer[string] // why KillFor killed it
}

// Start starts cmd as a test server (see Attr) with its output in the file
// log, and watches for its exit.
func Start(name string, cmd *exec.Cmd, log string) (*Server, error) {
	f, err := os.Create(log)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = Attr()
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	s := &Server{Name: name, Log: log, cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(s.exited)
	}()
	return s, nil
}

// Exited is closed when the server has exited.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// Running reports whether the server has not exited yet.
func (s *Server) Running() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Kill kills the server's process group (the server and whatever it
// forked) and waits for the server to exit.
func (s *Server) Kill() {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.exited
}

// Pause stops the server (SIGSTOP) without ending it: its connections
// stay open and its clients' requests hang, as with a member whose
// machine froze. Kill still ends it.
func (s *Server) Pause() {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGSTOP)
}

// KillFor kills the server that said, without exiting, that it cannot
// serve (why): ExitError then gives why as the cause of its exit.
func (s *Server) KillFor(why string) {
	s.killed.Store(&why)
	s.Kill()
}

// ExitError says that the server exited, how, and how its log ends; nil
// while it runs.
func (s *Server) ExitError() error {
	if s.Running() {
		return nil
	}
	how := s.cmd.ProcessState.String()
	if why := s.killed.Load(); why != nil {
		how = "killed: " + *why
	}
	return fmt.Errorf("%s exited (%s); the end of its log %s:\n%s", s.Name, how, s.Log, s.Tail())
}

// Tail is the end of the server's log: its last lines, at most 4 KB.
func (s *Server) Tail() string {
	data, _ := os.ReadFile(s.Log)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	tail := strings.Join(lines[max(0, len(lines)-tailLines):], "\n")
	if len(tail) > tailBytes {
		tail = "…" + tail[len(tail)-tailBytes:]
	}
	return tail
}

const (
	tailLines = 15
	tailBytes = 4000
)

// Wait polls ready until it holds and returns nil, or returns the
// ExitError of the first of servers to exit: ready's context ends then,
// so a request hanging on a port someone else holds does not keep the
// wait going. An answer counts only while every server still runs, since
// after one exited it may have come from another process on its port.
// Like await.Until it has no deadline of its own and fails t shortly
// before the test binary's -timeout.
func Wait(t testing.TB, what string, ready func(context.Context) bool, servers ...*Server) error {
	t.Helper()
	return WaitBy(t, what, await.Deadline(t), ready, servers...)
}

// WaitBy is Wait giving up at by (await.UntilBy), or shortly before the
// -timeout if that is earlier.
func WaitBy(t testing.TB, what string, by time.Time, ready func(context.Context) bool, servers ...*Server) error {
	t.Helper()
	ctx, cancel := context.WithDeadline(await.Context(t), by)
	defer cancel()
	for _, s := range servers {
		go func() {
			select {
			case <-s.exited:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	exited := func() error {
		for _, s := range servers {
			if err := s.ExitError(); err != nil {
				return err
			}
		}
		return nil
	}
	var err error
	await.UntilBy(t, what, by, func() bool {
		if err = exited(); err != nil {
			return true
		}
		if !ready(ctx) {
			return false
		}
		err = exited()
		return true
	})
	return err
}
