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
			fmt.Fprintf(cmd.OutOrStdout(), "gitfleet %s\n", versionString())
			return nil
		},
	}
}

// versionString is "<version> (commit <sha>, <go>, <os>/<arch>)", for
// `gitfleet version` and `gitfleet --version`.
func versionString() string {
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
	return fmt.Sprintf("%s (commit %s, %s, %s/%s)", version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
