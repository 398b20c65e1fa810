package main

import (
	"errors"
	"log/slog"
	"os"

	"github.com/spf13/cobra"
)

// exitError carries a process exit code (e.g. validate's 1 on manifest errors).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func exitCode(err error) int {
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	return 1
}

func newRootCommand() *cobra.Command {
	var logLevel string
	root := &cobra.Command{
		Use:     "gitfleet",
		Version: versionString(),
		Short:   "Staged rollouts across a Kubernetes fleet, driven by Git",
		Long: `gitfleet makes a Git repository the control plane of staged rollouts across a
fleet of Kubernetes clusters. It re-implements KubeFleet's staged update runs
(ClusterStagedUpdateStrategy, ClusterStagedUpdateRun, ClusterApprovalRequest):
you git push workload manifests and run files; gitfleet snapshots every
commit, rolls it out stage by stage, and writes progress (status/) and approval
requests (approvals/) back into the repository. Merging the pull request that
approves a request is the approval.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			var lvl slog.Level
			if err := lvl.UnmarshalText([]byte(logLevel)); err != nil {
				return err
			}
			slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})))
			return nil
		},
	}
	root.PersistentFlags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	root.AddCommand(newVersionCommand(), newSimulateCommand(), newServeCommand())
	root.AddCommand(newGetCommand(), newDescribeCommand(), newApproveCommand(), newValidateCommand())
	return root
}
