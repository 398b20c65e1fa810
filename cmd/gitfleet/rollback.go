package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/rollback"
	"github.com/gitfleet/gitfleet/render"
	"github.com/gitfleet/gitfleet/status"
)

// rollbackOptions are the flags of rollback.
type rollbackOptions struct {
	repo, path, namespace, to string
	dryRun                    bool
}

func newRollbackCommand() *cobra.Command {
	var o rollbackOptions
	cmd := &cobra.Command{
		Use:   "rollback RUN",
		Short: "Write the run that rolls a failed run back to the last snapshot that succeeded",
		Long: `rollback writes rollbacks/RUN.yaml below --path in --repo, a clone of the fleet
repository: a ClusterStagedUpdateRun (StagedUpdateRun with -n) named RUN-rollback
that rolls RUN's placement out again at an older resource snapshot index,
through the same strategy, stages and approvals as any run. Nothing happens
until the file is committed and reaches the branch gitfleet tracks: review it,
preview it with 'gitfleet plan', then commit and push it (or open a pull
request). 'gitfleet serve --forge' opens the same file as a pull request,
branch gitfleet/rollback/RUN, when a run fails.

The index is read from the status/ tree gitfleet recorded: the index of the
run of the same placement that succeeded most recently on every cluster RUN
changed (started updating), other than RUN's own index, still recorded, and
not rejected by the placement (gitfleet.io/rejected-snapshot-<index>
annotations, read from the working tree). --to N chooses the index yourself;
a rejected one is refused. gitfleet never proposes a rollback of a rollback:
name the index with --to.`,
		Example: `  # Roll example-run back to the snapshot that last succeeded on its clusters
  gitfleet rollback example-run
  gitfleet plan --base origin/main     # preview it (after git add/commit)
  git add rollbacks/example-run.yaml && git commit -m "roll back example-run" && git push

  # Print the run without writing it
  gitfleet rollback example-run --dry-run

  # Choose the index
  gitfleet rollback example-run --to 1

  # A namespaced StagedUpdateRun, hub content in fleet/
  gitfleet rollback web-rollout -n my-app --path fleet`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return writeRollback(cmd.OutOrStdout(), args[0], o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.repo, "repo", ".", "path of a local clone or working tree of the fleet repository")
	f.StringVar(&o.path, "path", ".", "folder of the hub content inside the repository (the file goes to its rollbacks/)")
	f.StringVarP(&o.namespace, "namespace", "n", "", "namespace of a StagedUpdateRun (empty: a ClusterStagedUpdateRun)")
	f.StringVar(&o.to, "to", "", "resource snapshot index to roll back to (default: the last that succeeded on the run's clusters)")
	f.BoolVar(&o.dryRun, "dry-run", false, "print the run instead of writing it")
	return cmd
}

// writeRollback writes (or prints) the rollback of the run name.
func writeRollback(out io.Writer, name string, o rollbackOptions) error {
	repo, err := fleetRepo(o.repo)
	if err != nil {
		return err
	}
	objs, _ := readFamily(repo, status.StatusDir)
	var runs []*fleet.UpdateRun
	var failed *fleet.UpdateRun
	indexes := map[string]bool{}
	var recordedPlacement *fleet.Placement
	for _, obj := range objs {
		switch x := obj.(type) {
		case *fleet.UpdateRun:
			runs = append(runs, x)
			if x.Name == name && x.Namespace == o.namespace {
				failed = x
			}
		}
	}
	if failed == nil {
		return fmt.Errorf("run %s not found in %s/ of %s (pull first: gitfleet records each run there)", qualified(o.namespace, name), status.StatusDir, repo)
	}
	if failed.Status.ResourceSnapshotIndexUsed == "" {
		return fmt.Errorf("run %s was never initialized: it changed no cluster, there is nothing to roll back", qualified(o.namespace, name))
	}
	for _, obj := range objs {
		switch x := obj.(type) {
		case *fleet.ResourceSnapshot:
			if x.Namespace == o.namespace && x.Labels[fleet.PlacementTrackingLabel] == failed.Spec.PlacementName {
				indexes[x.Labels[fleet.ResourceIndexLabel]] = true
			}
		case *fleet.Placement:
			if x.Namespace == o.namespace && x.Name == failed.Spec.PlacementName {
				recordedPlacement = x
			}
		}
	}
	rejected := workTreeRejections(repo, o.path, o.namespace, failed.Spec.PlacementName, recordedPlacement)
	var exists func(string) bool
	if len(indexes) > 0 {
		exists = func(i string) bool { return indexes[i] }
	}
	var t rollback.Target
	if o.to != "" {
		if n, err := strconv.Atoi(o.to); err != nil || n < 0 || strconv.Itoa(n) != o.to {
			return fmt.Errorf("--to %s: want a resource snapshot index, an integer >= 0", o.to)
		}
		if why, ok := rejected[o.to]; ok {
			return fmt.Errorf("--to %s: placement %s rejects resource snapshot %s (annotation %s: %s): a run for it would refuse to initialize",
				o.to, failed.Spec.PlacementName, o.to, fleet.RejectedSnapshotAnnotation(o.to), why)
		}
		if exists != nil && !exists(o.to) {
			return fmt.Errorf("--to %s: placement %s has no resource snapshot %s recorded in %s/ (gitfleet get snapshots lists them)",
				o.to, failed.Spec.PlacementName, o.to, status.StatusDir)
		}
		t = rollback.Target{Index: o.to, Clusters: rollback.Changed(failed)}
	} else {
		t, err = rollback.Find(failed, runs, rejected, exists)
		var none *rollback.NoTarget
		if errors.As(err, &none) {
			return fmt.Errorf("no rollback for %s: %s; choose an index with --to N", qualified(o.namespace, name), none.Reason)
		}
		if err != nil {
			return err
		}
	}
	data := rollback.Manifest(failed, t, "")
	if o.dryRun {
		_, err := out.Write(data)
		return err
	}
	rel := filepath.Join(o.path, filepath.FromSlash(rollback.File(failed)))
	p := filepath.Join(repo, rel)
	if old, err := os.ReadFile(p); err == nil && bytes.Equal(old, data) {
		fmt.Fprintf(out, "%s already holds this rollback; nothing written\n", rel)
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		return err
	}
	from := ""
	if t.From != "" {
		from = fmt.Sprintf(" (the last that succeeded on %s, in run %s)", strings.Join(t.Clusters, ", "), t.From)
	}
	fmt.Fprintf(out, "wrote %s: run %s rolls placement %s back to resource snapshot %s%s\n",
		rel, rollback.Name(failed.Name), failed.Spec.PlacementName, t.Index, from)
	if kustomized(filepath.Join(repo, o.path)) {
		fmt.Fprintf(out, "%s is built with kustomize: add %s to its resources\n", o.path, rollback.File(failed))
	}
	fmt.Fprintf(out, "commit and push it (or open a pull request) to start it; gitfleet plan previews it once committed\n")
	return nil
}

// workTreeRejections are the indexes the placement rejects, as the working
// tree declares it (what a commit would merge), else as status/ recorded it.
func workTreeRejections(repo, hubPath, namespace, placement string, recorded *fleet.Placement) map[string]string {
	if c, err := render.Render(os.DirFS(repo), render.Options{Path: hubPath}); c != nil && (err == nil || len(render.RefusalProblems(err)) == 0) {
		for _, p := range c.Placements {
			if p.Namespace == namespace && p.Name == placement {
				return fleet.RejectedSnapshots(p.Annotations)
			}
		}
	}
	if recorded != nil {
		return fleet.RejectedSnapshots(recorded.Annotations)
	}
	return nil
}

// kustomized reports whether dir is built with kustomize.
func kustomized(dir string) bool {
	for _, n := range render.KustomizationNames {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			return true
		}
	}
	return false
}

func qualified(namespace, name string) string {
	if namespace != "" {
		return namespace + "/" + name
	}
	return name
}
