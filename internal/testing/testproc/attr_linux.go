package testproc

import "syscall"

// orphanSignal asks the kernel to kill the child when the thread that
// started it exits. Go's runtime ends a thread only when a goroutine that
// locked it exits without unlocking, which the tests using this package
// do not do, so in practice this fires when the test binary dies.
func orphanSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
