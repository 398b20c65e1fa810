package renderproc

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// procAttr asks the kernel to kill the worker when the thread that started
// it exits: a gitfleet killed with -9 leaves no render running. (Go's
// runtime ends a thread only when a goroutine that locked it exits without
// unlocking, which Render never does.)
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// residentBytes is the resident memory of process pid (VmRSS).
func residentBytes(pid int) (int64, bool) {
	return statusBytes(strconv.Itoa(pid), "VmRSS")
}

// ownPeak is this process's peak resident memory (VmHWM). The kernel's
// maxrss of an ended child is no use: exec records there the high-water
// mark of the parent's memory the child was cloned from.
func ownPeak() int64 {
	n, _ := statusBytes("self", "VmHWM")
	return n
}

// statusBytes reads a field in kB of /proc/<pid>/status.
func statusBytes(pid, field string) (int64, bool) {
	data, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0, false
	}
	key := []byte("\n" + field + ":")
	i := bytes.Index(data, key)
	if i < 0 {
		return 0, false
	}
	fields := bytes.Fields(data[i+len(key):])
	if len(fields) < 2 {
		return 0, false
	}
	kb, err := strconv.ParseInt(string(fields[0]), 10, 64)
	if err != nil {
		return 0, false
	}
	return kb << 10, true
}
