package main

import (
	"bytes"
	"io"

	"github.com/spf13/cobra"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/printers"
)

func newDescribeCommand() *cobra.Command {
	var q query
	cmd := &cobra.Command{
		Use:   "describe (run|approval|snapshot|placement|binding|cluster) [NAME...]",
		Short: "Show the details of runs, approval requests and other recorded objects",
		Long: `describe prints objects of the fleet repository's status tree the way
'kubectl describe' prints KubeFleet's: for a run, its spec, the frozen
strategy, and per stage and cluster the conditions that say where the rollout
stands and why it waits (an approval, a timed wait, a stuck cluster). An
approval request shows its Approved condition with the observedGeneration
that decides whether the approval counts.

The resource words and -n are those of 'gitfleet get'; without NAME every
object of the kind is described. Like get, describe reads --repo, a local
clone or working tree: pull first to see the latest progress.`,
		Example: `  # Where the quickstart rollout stands, stage by stage
  gitfleet describe run example-run --repo ./fleet

  # Whether an approval was given at the right generation
  gitfleet describe approval example-run-after-canary

  # A namespaced run
  gitfleet describe sur web-app-rollout -n my-app-namespace`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: q.complete,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := q.parse(args[0]); err != nil {
				return err
			}
			q.names = args[1:]
			objs, err := q.find(cmd.ErrOrStderr())
			// Build the whole text first so a failure leaves no half
			// description; kubectl separates objects with a blank line.
			var out bytes.Buffer
			for i, o := range objs {
				if i > 0 {
					out.WriteString("\n\n")
				}
				var derr error
				if run, ok := o.(*fleet.UpdateRun); ok {
					derr = printers.DescribeRun(&out, run, now())
				} else {
					derr = printers.Describe(&out, o)
				}
				if derr != nil {
					return derr
				}
			}
			if _, werr := io.Copy(cmd.OutOrStdout(), &out); werr != nil {
				return werr
			}
			return err
		},
	}
	q.flags(cmd)
	return cmd
}
