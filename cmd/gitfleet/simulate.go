package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gitfleet/gitfleet/gitsource/simulate"
)

func newSimulateCommand() *cobra.Command {
	opts := simulate.Options{}
	var limits renderLimits
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

It starts from the state 'gitfleet serve' recorded: when the branch's tip
has a status/ tree (serve writes it), simulate restores the hub from it as a
restarted serve would, replays only the commits serve had not processed yet,
and starts the virtual clock at that commit's time. Runs that already
finished stay finished; a rollback to an older index starts where the fleet
really stands. --from-status REF restores status/ of another revision (a
--status-branch, or an older commit); --from-status none replays the whole
branch into an empty hub, as if serve had never run.

It stops when every run has finished or waits on a person (an approval, a
Stop), or at --until. Members take the delays their gitfleet.io/sim-*
annotations give. Nothing is written to the repository.

Every commit renders in a process of its own within serve's limits, with
serve's flags and defaults (--render-timeout, --render-memory-limit,
--max-file-size, --max-tree-size): a commit serve would stop is stopped here
too.`,
		Example: `  # Preview the rollout of the quickstart repository
  gitfleet simulate --repo ./fleet

  # Approve every approval request as soon as it appears
  gitfleet simulate --repo ./fleet --approve

  # Ignore what serve recorded and replay the whole history
  gitfleet simulate --repo ./fleet --from-status none

  # Status on a separate branch
  gitfleet simulate --repo ./fleet --from-status gitfleet-status

  # Print the final runs, approvals, placements, snapshots, bindings and
  # override snapshots, then what each member received
  gitfleet simulate --repo ./fleet --approve -o yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "" && output != "yaml" {
				return fmt.Errorf("--output must be empty or yaml, not %q", output)
			}
			opts.NoTimeline = output == "yaml"
			opts.Limits, opts.MaxFileSize, opts.MaxTotalSize = limits.limits(), int64(limits.maxFileSize), int64(limits.maxTotal)
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
	f.Var(instantFlag{&opts.Start}, "start", "virtual start time (now or an RFC 3339 time; default: the recorded status commit's time, or 2026-01-01T00:00:00Z): rollout windows and freezes are evaluated from it")
	f.DurationVar(&opts.StuckThreshold, "stuck-threshold", 5*time.Minute, "report a run stuck when a cluster has been updating this long")
	f.StringVar(&opts.FromStatus, "from-status", simulate.FromTip, "revision whose status/ tree to start from (default: the tip's, if it has one; none: replay from scratch)")
	f.StringVarP(&output, "output", "o", "", "output format: empty for a timeline and summary, or yaml")
	limits.addFlags(f)
	return cmd
}
