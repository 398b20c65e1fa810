package main

import (
	"bytes"
	"context"
	"io"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/spf13/cobra"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/status/printers"
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
that decides whether the approval counts. Events, at the end, are the
status commits that changed the object's file, newest last (the last 20,
from git log: what happened to a run and when, in the words of the commit
subjects).

The resource words, -n and -l are those of 'gitfleet get'; without NAME every
object of the kind is described. Like get, describe reads --repo, a local
clone or working tree: pull first (or pass --fetch) to see the latest
progress.`,
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
			if err := q.parseSelector(); err != nil {
				return err
			}
			if q.fetch {
				if err := pull(cmdContext(cmd), q.repo); err != nil {
					return err
				}
			}
			kinds, err := q.find(cmd.ErrOrStderr())
			// Build the whole text first so a failure leaves no half
			// description; kubectl separates objects with a blank line.
			var out bytes.Buffer
			for _, f := range kinds {
				for _, o := range f.objs {
					if out.Len() > 0 {
						out.WriteString("\n\n")
					}
					if derr := describe(cmdContext(cmd), &out, q.repo, o); derr != nil {
						return derr
					}
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

// eventLimit bounds the Events section: a long-running fleet has many
// status commits per run; git log has them all.
const eventLimit = 20

// describe prints one object and its Events.
func describe(ctx context.Context, w io.Writer, repo string, o runtime.Object) error {
	var err error
	if run, ok := o.(*fleet.UpdateRun); ok {
		err = printers.DescribeRun(w, run, now())
	} else {
		err = printers.Describe(w, o)
	}
	if err != nil {
		return err
	}
	events, err := objectEvents(ctx, repo, o)
	if err != nil {
		return err
	}
	return printers.Events(w, events, eventLimit, now())
}

// objectEvents are the last eventLimit commits that changed o's status
// files, newest last. A tree that is not a Git repository has none.
func objectEvents(ctx context.Context, repo string, o runtime.Object) ([]printers.Event, error) {
	specs := statusPathspecs(o)
	if len(specs) == 0 {
		return nil, nil
	}
	cs, err := history(ctx, repo, eventLimit, specs...)
	if err != nil {
		// A folder that is not a Git clone has files but no history.
		return nil, nil
	}
	events := make([]printers.Event, len(cs))
	for i, c := range cs {
		events[len(cs)-1-i] = printers.Event{Time: c.time, Commit: c.hash, Message: c.subject}
	}
	return events, nil
}
