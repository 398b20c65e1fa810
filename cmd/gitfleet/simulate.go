package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gitfleet/gitfleet/simulate"
)

func newSimulateCommand() *cobra.Command {
	opts := simulate.Options{}
	var output string
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Preview the rollouts of a fleet repository in virtual time",
		Long: `simulate replays the first-parent history of a branch into resource snapshot
indexes (every commit that changes what a placement selects is a new index, as
'gitfleet serve' records them), loads the fleet objects at HEAD, and runs the
real update-run engine against simulated members in virtual time: timers jump
the clock, nothing sleeps. It prints a timeline with virtual offsets and a
summary, or with -o yaml the final objects as one YAML stream, ending with
the manifests each simulated member received, overrides applied (annotated
gitfleet.io/member-cluster).

It stops when every run has finished or waits on a person (an approval, a
Stop), or at --until. Members take the delays their gitfleet.io/sim-*
annotations give. Nothing is written to the repository.`,
		Example: `  # Preview the rollout of the quickstart repository
  gitfleet simulate --repo ./fleet

  # Approve every approval request as soon as it appears
  gitfleet simulate --repo ./fleet --approve

  # Print the final runs, approvals, placements, snapshots, bindings and
  # override snapshots, then what each member received
  gitfleet simulate --repo ./fleet --approve -o yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "" && output != "yaml" {
				return fmt.Errorf("--output must be empty or yaml, not %q", output)
			}
			opts.NoTimeline = output == "yaml"
			res, err := simulate.Run(cmd.Context(), opts)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if output == "yaml" {
				return simulate.WriteObjects(cmd.Context(), w, res.Hub)
			}
			if err := simulate.WriteTimeline(w, res.Timeline); err != nil {
				return err
			}
			fmt.Fprintln(w)
			return simulate.WriteSummary(cmd.Context(), w, res)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Repo, "repo", ".", "path of the fleet repository (a local Git repository)")
	f.StringVar(&opts.Branch, "branch", "", "branch to replay (default: the repository's current branch)")
	f.StringVar(&opts.Path, "path", ".", "folder of the hub content inside the repository")
	f.BoolVar(&opts.Approve, "approve", false, "approve every approval request the instant it appears")
	f.DurationVar(&opts.Until, "until", 24*time.Hour, "stop after this much virtual time")
	f.DurationVar(&opts.StuckThreshold, "stuck-threshold", 5*time.Minute, "report a run stuck when a cluster has been updating this long")
	f.StringVarP(&output, "output", "o", "", "output format: empty for a timeline and summary, or yaml")
	return cmd
}
