package gittest

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
)

func TestDaemonServesTheRepositoriesBelowBase(t *testing.T) {
	base := t.TempDir()
	Must(t, base, "init", "--bare", "remote.git")
	url := Daemon(t, base)
	work := t.TempDir()
	Must(t, work, "init")
	Must(t, work, "commit", "--allow-empty", "-m", "first")
	Must(t, work, "push", url+"remote.git", "HEAD:refs/heads/main")
	if got, want := Must(t, filepath.Join(base, "remote.git"), "rev-parse", "main"), Must(t, work, "rev-parse", "HEAD"); got != want {
		t.Fatalf("the daemon's repository has main at %s, want %s", got, want)
	}
}

func TestDaemonFailsAtOnceWhenItsPortIsTaken(t *testing.T) {
	Require(t, "git")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = daemon(t, t.TempDir(), l.Addr().(*net.TCPAddr).Port)
	if err == nil {
		t.Fatal("the daemon started on a taken port")
	}
	for _, want := range []string{"git daemon exited (exit status 128)", "Address already in use"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
}
