package gittest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gitfleet/gitfleet/internal/testing/testproc"
)

// Daemon serves every repository below base over git:// from a real
// git-daemon on 127.0.0.1 (push enabled) and returns the URL prefix,
// "git://127.0.0.1:PORT/". The daemon forks a process per connection, so
// it runs in a process group of its own that is killed as a whole when the
// test ends: nothing outlives the test.
func Daemon(tb testing.TB, base string) string {
	tb.Helper()
	Require(tb, "git")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	url, err := daemon(tb, base, port)
	if err != nil {
		tb.Fatal(err)
	}
	return url
}

// daemon starts git-daemon on port and waits until it listens, or fails
// with why it exited.
func daemon(tb testing.TB, base string, port int) (string, error) {
	tb.Helper()
	// git-daemon itself, not "git daemon", which would be a parent process
	// forwarding to it.
	cmd := exec.Command(filepath.Join(Must(tb, base, "--exec-path"), "git-daemon"), "--verbose", "--reuseaddr",
		"--base-path="+base, "--export-all", "--enable=receive-pack", "--listen=127.0.0.1", fmt.Sprintf("--port=%d", port), base)
	cmd.Env = Env(base)
	s, err := testproc.Start("git daemon", cmd, filepath.Join(tb.TempDir(), "git-daemon.log"))
	if err != nil {
		return "", err
	}
	tb.Cleanup(s.Kill)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	// --verbose logs this once it listens: a connection to the port could
	// reach another process that took it, while the daemon dies of that.
	err = testproc.Wait(tb, "git daemon to listen on "+addr, func(context.Context) bool {
		log, _ := os.ReadFile(s.Log)
		return bytes.Contains(log, []byte("Ready to rumble"))
	}, s)
	return "git://" + addr + "/", err
}
