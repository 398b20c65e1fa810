package gittest

import (
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gitfleet/gitfleet/internal/testproc"
)

// Daemon serves every repository below base over git:// from a real
// git-daemon on 127.0.0.1 (push enabled) and returns the URL prefix,
// "git://127.0.0.1:PORT/". The daemon forks a process per connection, so
// it runs in a process group of its own that is killed as a whole when the
// test ends: nothing outlives the test.
func Daemon(tb testing.TB, base string) string {
	tb.Helper()
	Require(tb, "git")
	execPath := Must(tb, base, "--exec-path")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	// git-daemon itself, not "git daemon", which would be a parent process
	// forwarding to it.
	cmd := exec.Command(filepath.Join(execPath, "git-daemon"), "--reuseaddr", "--base-path="+base, "--export-all",
		"--enable=receive-pack", "--listen=127.0.0.1", fmt.Sprintf("--port=%d", port), base)
	cmd.Env = Env(base)
	cmd.SysProcAttr = testproc.Attr()
	if err := cmd.Start(); err != nil {
		tb.Fatalf("git daemon: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	tb.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	if err := waitListening(addr, exited); err != nil {
		tb.Fatalf("git daemon: %v", err)
	}
	return "git://" + addr + "/"
}

// waitListening waits until addr accepts connections, or the server
// exits. There is no deadline of its own: the test's -timeout bounds it.
func waitListening(addr string, exited <-chan struct{}) error {
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("exited before listening on %s", addr)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
