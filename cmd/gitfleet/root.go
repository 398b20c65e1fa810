package main

import (
	"errors"
	"fmt"
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
	var logLevel, logFormat string
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
			opts := &slog.HandlerOptions{Level: lvl, ReplaceAttr: durationsAsText}
			switch logFormat {
			case "json":
				slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stderr, opts)))
			case "text":
				slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, opts)))
			case "":
				// JSON for log collectors, text for a person at a terminal.
				if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
					slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, opts)))
				} else {
					slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stderr, opts)))
				}
			default:
				return fmt.Errorf("--log-format must be text or json, not %q", logFormat)
			}
			return nil
		},
	}
	root.PersistentFlags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	root.PersistentFlags().StringVar(&logFormat, "log-format", "", "log format: text or json (default: text on a terminal, json otherwise)")
	root.AddCommand(newVersionCommand(), newSimulateCommand(), newPlanCommand(), newServeCommand(), newAgentCommand())
	root.AddCommand(newGetCommand(), newDescribeCommand(), newApproveCommand(), newRollbackCommand(), newValidateCommand(), newUICommand())
	return root
}
