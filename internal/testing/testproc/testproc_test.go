package testproc_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"testing"

	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/internal/testing/testproc"
)

// TestMain lets the test binary play the test binary that gets killed:
// with GITFLEET_TESTPROC_PARENT set it starts a server (sleep) as the
// helpers do, prints its pid and waits to be killed.
func TestMain(m *testing.M) {
	if os.Getenv("GITFLEET_TESTPROC_PARENT") == "" {
		os.Exit(m.Run())
	}
	server := exec.Command("sleep", "600")
	server.SysProcAttr = testproc.Attr()
	if err := server.Start(); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println(server.Process.Pid)
	select {}
}

func TestAServerDiesWithTheTestBinaryThatStartedIt(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux's")
	}
	parent := exec.Command(os.Args[0], "-test.run=^$")
	parent.Env = append(os.Environ(), "GITFLEET_TESTPROC_PARENT=1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("read the server's pid: %v", err)
	}
	pid, err := strconv.Atoi(line[:len(line)-1])
	if err != nil {
		t.Fatalf("the parent said %q", line)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the server is not running: %v", err)
	}

	// As `go test -timeout` does: SIGKILL, so no Cleanup runs.
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	await.Until(t, "the server to die with its test binary", func() bool {
		// The server is our grandchild: once killed it is reaped by
		// init (or a subreaper), so "no such process" is the end state;
		// a zombie awaiting reaping counts as dead too.
		if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
			return true
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		return err != nil || isZombie(string(stat))
	})
}

// isZombie reads the state field of /proc/PID/stat ("pid (comm) S ...").
func isZombie(stat string) bool {
	for i := len(stat) - 1; i >= 0; i-- {
		if stat[i] == ')' {
			return i+2 < len(stat) && stat[i+2] == 'Z'
		}
	}
	return false
}
