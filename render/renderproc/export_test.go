package renderproc

// SetStarted tells f each worker's process id; the returned func undoes it.
func SetStarted(f func(pid int)) (restore func()) {
	old := started
	started = f
	return func() { started = old }
}
