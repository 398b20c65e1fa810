// Package testproc starts the servers tests run beside them (API servers,
// etcd, Gitea) so that they never outlive the test binary.
//
// Tests stop their servers in t.Cleanup, which does not run when `go test
// -timeout` or a person kills the binary: a server started in its own
// process group (so Cleanup can kill it with its children) then keeps its
// port, its temporary folder and a core busy until someone finds it.
package testproc

import "syscall"

// Attr is the SysProcAttr of a test server: its own process group, and on
// Linux SIGKILL when the test binary dies (see attr_linux.go).
func Attr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	orphanSignal(a)
	return a
}
