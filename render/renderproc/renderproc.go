// Package renderproc renders a commit in a child process of gitfleet's own
// binary, so that a render can be stopped for real: kustomize takes no
// context, and a render abandoned in process keeps burning CPU and memory
// until it ends by itself (issue 22). The child (the worker, Main) gets the
// files the render reads on its standard input and answers the content as
// JSON on its standard output; the parent kills it (SIGKILL) at the time
// limit or once its resident memory is over the memory limit.
//
// The memory limit is a hard one, enforced from outside: the parent reads
// the worker's VmRSS from /proc/<pid>/status every pollInterval and kills
// it over the limit, and a worker that ended on its own is refused too if
// its peak resident size (the kernel's maxrss) was over, so one tree gets
// one verdict whatever the polling saw. GOMEMLIMIT is set in the worker
// at softMemoryShare of the limit: the Go collector then works harder
// before the hard limit rather than letting garbage grow to it (GOGC=100
// lets the heap double between collections). Neither rlimits (Go reserves
// address space it never touches, so RLIMIT_AS fails healthy renders) nor
// cgroups (they need privileges or a delegated hierarchy a Pod rarely
// has) were chosen.
package renderproc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gitfleet/gitfleet/render"
)

// Default limits, the same in serve, validate, simulate and plan.
const (
	DefaultTimeout = time.Minute
	DefaultMemory  = 1 << 30 // 1 GiB
)

// Limits bound one render.
type Limits struct {
	// Timeout bounds the render's wall-clock time (default DefaultTimeout).
	Timeout time.Duration
	// Memory bounds the worker's resident memory in bytes (default
	// DefaultMemory).
	Memory int64
}

func (l Limits) withDefaults() Limits {
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	if l.Memory <= 0 {
		l.Memory = DefaultMemory
	}
	return l
}

const (
	// pollInterval is how often the worker's resident memory is read.
	pollInterval = 10 * time.Millisecond
	// softMemoryShare is GOMEMLIMIT as a share of Limits.Memory.
	softMemoryShare = 0.75
	// maxStderr bounds the worker's standard error kept for messages.
	maxStderr = 8 << 10
)

// Errors of a render stopped at a limit; Render returns them in a
// *LimitError.
var (
	ErrTimeout = errors.New("render timed out")
	ErrMemory  = errors.New("render exceeded its memory limit")
)

// LimitError is a render stopped at a limit: its worker was killed, or it
// ended having used more memory than allowed.
type LimitError struct {
	Err     error // ErrTimeout or ErrMemory
	Limits  Limits
	PID     int           // the worker's process id
	Elapsed time.Duration // from the start of the worker to its end
	PeakRSS int64         // the worker's peak resident memory in bytes, when known
}

// Error names the limit and the flag that sets it, the same in every
// command.
func (e *LimitError) Error() string {
	if errors.Is(e.Err, ErrMemory) {
		return fmt.Sprintf("%v: it used more than %s (--render-memory-limit)", e.Err, Bytes(e.Limits.Memory))
	}
	return fmt.Sprintf("%v after %s (--render-timeout)", e.Err, e.Limits.Timeout)
}

func (e *LimitError) Unwrap() error { return e.Err }

// Bytes formats a byte count as a Kubernetes quantity would (1Gi, 512Mi),
// exactly, so a limit in a message is the flag's value.
func Bytes(n int64) string {
	for _, u := range []struct {
		s string
		n int64
	}{{"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}} {
		if n >= u.n && n%u.n == 0 {
			return strconv.FormatInt(n/u.n, 10) + u.s
		}
	}
	return strconv.FormatInt(n, 10)
}

// started, if set (tests), is told each worker's process id.
var started func(pid int)

// Render is render.Render in a worker process, within lim: the same
// content, or the same error (a *render.RefusedError or
// *render.ManifestError keeps its type), or a *LimitError once the worker
// was stopped at a limit. Canceling ctx kills the worker too and returns
// ctx's error.
func Render(ctx context.Context, fsys fs.FS, opts render.Options, lim Limits) (*render.Content, error) {
	if os.Getenv(workerEnv) != "" {
		return nil, errors.New("renderproc: a render worker was asked to render: this binary does not call renderproc.Main first")
	}
	lim = lim.withDefaults()
	// Errors of the path itself need no worker.
	if err := checkPath(fsys, opts); err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("renderproc: finding gitfleet's binary: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = workerEnviron(lim)
	cmd.SysProcAttr = procAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	var stdout bytes.Buffer
	stderr := &tail{max: maxStderr}
	cmd.Stdout, cmd.Stderr = &limitedWriter{w: &stdout, n: outputLimit(opts, lim)}, stderr
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("renderproc: starting a render worker: %w", err)
	}
	pid := cmd.Process.Pid
	if started != nil {
		started(pid)
	}

	var (
		mu     sync.Mutex
		reason error // why the worker was killed
	)
	kill := func(why error) {
		mu.Lock()
		if reason == nil {
			reason = why
		}
		mu.Unlock()
		_ = cmd.Process.Kill()
	}
	writeErr := make(chan error, 1)
	pipe := &pipeWriter{w: stdin}
	go func() {
		err := writeRequest(pipe, fsys, opts)
		if cerr := stdin.Close(); err == nil {
			err = cerr
		}
		writeErr <- err
	}()
	done := make(chan struct{})
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		timer := time.NewTimer(lim.Timeout)
		defer timer.Stop()
		tick := time.NewTicker(pollInterval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				kill(ctx.Err())
				return
			case <-timer.C:
				kill(ErrTimeout)
				return
			case <-tick.C:
				if rss, ok := residentBytes(pid); ok && rss > lim.Memory {
					kill(ErrMemory)
					return
				}
			}
		}
	}()
	waitErr := cmd.Wait()
	close(done)
	<-watchDone
	elapsed := time.Since(begin)
	// The worker is gone and Wait closed its standard input: the writer
	// ends at its next write, and reads nothing of fsys after Render.
	werr := <-writeErr
	mu.Lock()
	why := reason
	mu.Unlock()
	var w wire
	answered := waitErr == nil && json.Unmarshal(stdout.Bytes(), &w) == nil
	switch {
	case why == nil && answered && w.PeakRSS > lim.Memory:
		// Ended on its own, but over the limit on the way: one tree gets
		// one verdict, however the polling fell.
		why = ErrMemory
	case why == nil && waitErr != nil && strings.Contains(stderr.String(), "out of memory"):
		why = ErrMemory // the runtime could not get memory (GOMEMLIMIT is soft)
	}
	switch {
	case errors.Is(why, ErrTimeout) || errors.Is(why, ErrMemory):
		return nil, &LimitError{Err: why, Limits: lim, PID: pid, Elapsed: elapsed, PeakRSS: w.PeakRSS}
	case why != nil:
		return nil, why // ctx's error
	}
	if werr != nil && !pipe.failed {
		return nil, werr // reading the tree failed, as the render would have
	}
	if waitErr != nil {
		return nil, fmt.Errorf("render worker failed (%v): %s", waitErr, strings.TrimSpace(stderr.String()))
	}
	if !answered {
		return nil, errors.New("render worker: its answer is not JSON")
	}
	return fromWire(w)
}

// pipeWriter tells a failed write to the worker (it died) from a failed
// read of the tree.
type pipeWriter struct {
	w      io.Writer
	failed bool
}

func (p *pipeWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	if err != nil {
		p.failed = true
	}
	return n, err
}

// workerEnviron is the worker's environment: only the Go runtime's
// variables of this process (GODEBUG, GOCOVERDIR, GOTRACEBACK…), never
// credentials, plus the worker switch and the soft memory limit.
func workerEnviron(lim Limits) []string {
	env := []string{workerEnv + "=1", fmt.Sprintf("GOMEMLIMIT=%d", int64(float64(lim.Memory)*softMemoryShare))}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GO") && !strings.HasPrefix(kv, "GOMEMLIMIT=") && !strings.HasPrefix(kv, workerEnv+"=") {
			env = append(env, kv)
		}
	}
	return env
}

// outputLimit bounds the worker's answer: more than the memory it may use
// is no answer.
func outputLimit(opts render.Options, lim Limits) int64 {
	return max(lim.Memory, 4*opts.WithDefaults().MaxTotalSize)
}

// limitedWriter fails once more than n bytes were written.
type limitedWriter struct {
	w io.Writer
	n int64
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.n {
		return 0, errors.New("render worker: answer too large")
	}
	l.n -= int64(len(p))
	return l.w.Write(p)
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
