package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version and commit are set at build time (make build):
// -ldflags "-X main.version=v0.1.0 -X main.commit=<sha>". Without them the
// commit comes from the Go toolchain's VCS stamp, when it has one.
var (
	version = "dev"
	commit  = ""
)

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the gitfleet version",
		Example: `  gitfleet version`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			commit := commit
			if info, ok := debug.ReadBuildInfo(); ok && commit == "" {
				for _, s := range info.Settings {
					if s.Key == "vcs.revision" {
						commit = s.Value
					}
				}
			}
			if commit == "" {
				commit = "unknown"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "gitfleet %s (commit %s, %s, %s/%s)\n", version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
}
