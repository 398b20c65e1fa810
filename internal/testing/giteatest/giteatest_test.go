package giteatest

import (
	"net"
	"strings"
	"testing"
)

func TestAStartFailsAtOnceWhenGiteasPortIsTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = start(t, l.Addr().(*net.TCPAddr).Port)
	if err == nil {
		t.Fatal("gitea started on a taken port")
	}
	for _, want := range []string{"gitea exited (killed: it logged that it failed to start its server)", "address already in use"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
}
