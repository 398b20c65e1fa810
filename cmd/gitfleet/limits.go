package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/render"
	"github.com/gitfleet/gitfleet/render/renderproc"
)

// renderLimits are the render limits serve, validate, simulate and plan
// share, with flags of the same names and defaults: a preview renders a
// commit as the daemon will, in a process of its own (renderproc) that is
// killed at the time or memory limit.
type renderLimits struct {
	timeout                       time.Duration
	memory, maxFileSize, maxTotal byteSize
}

func (l *renderLimits) addFlags(f *pflag.FlagSet) {
	l.memory, l.maxFileSize, l.maxTotal = renderproc.DefaultMemory, gitsource.DefaultMaxFileSize, gitsource.DefaultMaxTotalSize
	f.DurationVar(&l.timeout, "render-timeout", renderproc.DefaultTimeout, "stop rendering a commit after this long (its process is killed); the commit is refused")
	f.Var(&l.memory, "render-memory-limit", "stop rendering a commit once its process uses more memory than this (bytes, or 512Mi, 2Gi); the commit is refused")
	f.Var(&l.maxFileSize, "max-file-size", "refuse a commit with a file people wrote larger than this (bytes, or 8Mi)")
	f.Var(&l.maxTotal, "max-tree-size", "likewise for the sum of the files a render reads")
}

// options are render's options for the hub content at path.
func (l renderLimits) options(path string) render.Options {
	return render.Options{Path: path, MaxFileSize: int64(l.maxFileSize), MaxTotalSize: int64(l.maxTotal)}
}

func (l renderLimits) limits() renderproc.Limits {
	return renderproc.Limits{Timeout: l.timeout, Memory: int64(l.memory)}
}

// byteSize is a flag of a number of bytes, written as an integer or a
// Kubernetes quantity (512Mi, 1Gi, 1G).
type byteSize int64

func (b *byteSize) String() string { return renderproc.Bytes(int64(*b)) }

func (b *byteSize) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return fmt.Errorf("%q is not a size: bytes, or a quantity such as 512Mi or 2Gi", s)
	}
	n, ok := q.AsInt64()
	if !ok || n <= 0 {
		return fmt.Errorf("%q is not a positive whole number of bytes", s)
	}
	*b = byteSize(n)
	return nil
}

func (b *byteSize) Type() string { return "bytes" }
