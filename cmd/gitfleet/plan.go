package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/gitfleet/gitfleet/gitsource/plan"
)

func newPlanCommand() *cobra.Command {
	opts := plan.Options{}
	var limits renderLimits
	var output string
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Preview what merging a change would roll out, from the fleet's recorded state",
		Long: `plan shows what merging the work tree's HEAD commit into --base would do to
the fleet, before anyone merges it — what a pull request's reviewers want to
know. It does not start from an empty hub: it restores the state gitfleet
recorded in status/ at --base (the runs that finished, the snapshot index
every cluster has, the approvals given), exactly as a restarted 'gitfleet
serve' would, then applies the merge and runs the real engine in virtual
time on simulated members.

It prints:
  - first, the deletions, one line each: every object a run of the change
    deletes from member clusters, with the clusters in the run's rollout
    order ("Deletes: ConfigMap test-namespace/test-cm from 3 clusters
    (member2, member3, member1) when run example-run reaches them"), the
    clusters a run's deletion stage empties, and objects a new snapshot
    drops that no run of the change rolls out yet;
  - the new resource snapshots (index, the commit, what changed in the
    selected resources) and the index each cluster of the placement has now;
  - the update runs that would start or move: their stages, each stage's
    clusters in rollout order, the gates (approval request names, TimedWait
    soaks) and the expected timeline. Approvals the change opens are counted
    as given at once; approvals already pending at --base stay pending;
  - changes the API server would refuse (an immutable field, a forbidden
    state change) and manifests that do not render, with file and line.
    Then plan exits 1, so CI can fail the pull request.

The merge is built in a scratch clone (git merge-tree when --base has moved
on); uncommitted edits are not part of it. Nothing is written to the
repository.

Every commit renders in a process of its own within serve's limits, with
serve's flags and defaults (--render-timeout, --render-memory-limit,
--max-file-size, --max-tree-size): a commit serve would stop is stopped here
too.`,
		Example: `  # What would merging my branch into main do?
  git fetch && gitfleet plan --repo ./fleet --base origin/main

  # A pull request's commit, for a CI job or a bot
  gitfleet plan --repo . --base origin/main --head "$PR_SHA" -o json

  # Status on a separate branch (serve --status-branch gitfleet-status)
  gitfleet plan --base origin/main --status origin/gitfleet-status`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch output {
			case "", "yaml", "json":
			default:
				return fmt.Errorf("--output must be empty (a table), yaml or json, not %q", output)
			}
			opts.Limits, opts.MaxFileSize, opts.MaxTotalSize = limits.limits(), int64(limits.maxFileSize), int64(limits.maxTotal)
			p, err := plan.Compute(cmd.Context(), opts)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			switch output {
			case "json":
				data, err := json.MarshalIndent(p, "", "  ")
				if err != nil {
					return err
				}
				fmt.Fprintln(w, string(data))
			case "yaml":
				data, err := yaml.Marshal(p)
				if err != nil {
					return err
				}
				if _, err := w.Write(data); err != nil {
					return err
				}
			default:
				if err := plan.WriteText(w, p); err != nil {
					return err
				}
			}
			if p.HeadError != "" {
				return &exitError{code: 1, err: fmt.Errorf("the change does not render: %s", p.HeadError)}
			}
			if p.Failed() {
				return &exitError{code: 1, err: fmt.Errorf("the change has %d refused change(s) and %d manifest error(s)", len(p.Refused), len(p.ManifestErrors))}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Repo, "repo", ".", "path of a local clone or work tree of the fleet repository")
	f.StringVar(&opts.Base, "base", "", "revision the change would merge into: the branch gitfleet tracks (e.g. origin/main)")
	f.StringVar(&opts.Head, "head", "HEAD", "the change: a commit, branch or tag")
	f.StringVar(&opts.Status, "status", "", "revision whose status/ tree holds gitfleet's recorded state (default: --base)")
	f.StringVar(&opts.Path, "path", ".", "folder of the hub content inside the repository")
	f.DurationVar(&opts.Until, "until", 24*time.Hour, "preview at most this much virtual time")
	f.Var(instantFlag{&opts.At}, "at", "when the merge is assumed (now or an RFC 3339 time; default: the recorded status commit's time): rollout windows and freezes are evaluated from it")
	f.DurationVar(&opts.StuckThreshold, "stuck-threshold", 5*time.Minute, "report a run stuck when a cluster has been updating this long")
	f.StringVarP(&output, "output", "o", "", "output format: empty for tables, yaml or json")
	limits.addFlags(f)
	_ = cmd.MarkFlagRequired("base")
	return cmd
}
