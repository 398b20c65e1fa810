//go:build !linux

package renderproc

import "syscall"

// procAttr: no parent-death signal outside Linux.
func procAttr() *syscall.SysProcAttr { return nil }

// residentBytes is unknown outside Linux: only the time limit applies
// while a worker runs.
func residentBytes(int) (int64, bool) { return 0, false }

// ownPeak is unknown outside Linux.
func ownPeak() int64 { return 0 }
