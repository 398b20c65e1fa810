// Command gitfleet makes a Git repository the control plane of staged
// rollouts across a fleet of Kubernetes clusters. See README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/gitfleet/gitfleet/render/renderproc"
)

func main() {
	renderproc.Main() // a render worker (renderproc) runs here and exits
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(exitCode(err))
	}
}
