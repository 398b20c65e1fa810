package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/spf13/cobra"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	admit "github.com/gitfleet/gitfleet/internal/admission"
	"github.com/gitfleet/gitfleet/reconciler/member/kube"
	"github.com/gitfleet/gitfleet/render"
	"github.com/gitfleet/gitfleet/render/renderproc"
	"github.com/gitfleet/gitfleet/status"
)

func newValidateCommand() *cobra.Command {
	var repo, hubPath, kubeconfig string
	var limits renderLimits
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check the fleet repository's manifests the way gitfleet will read them",
		Long: `validate renders the working tree of the fleet repository exactly as 'gitfleet
serve' renders a commit (kustomize or plain YAML below --path) and reports
every problem gitfleet would report after the push, before you push:

  - files that are not YAML or JSON (a syntax error, a tab, a duplicate
    key, an empty file), or objects without apiVersion, kind, name or
    namespace, a kind its API group does not have (kind: ConfigMapp in v1),
    or a name the API server would refuse;
  - kinds gitfleet does not serve, unknown or misspelled fields;
  - invalid specs (strategies, runs, placements, label selectors), with the
    messages the KubeFleet API server would give;
  - objects defined twice;
  - changes the API server would refuse for an object gitfleet has already
    accepted (an immutable field of a run or placement, a forbidden state
    transition), compared with its copy in status/;
  - runs whose placementName or stagedRolloutStrategyName names no object in
    the repository (a namespaced run looks in its namespace): such a run
    fails its initialization, and both fields are immutable; a strategy
    that is there but invalid makes its runs say so, with its first error;
  - ClusterResourceOverrides and ResourceOverrides (v1beta1 or v1alpha1):
    the KubeFleet webhook's rules and messages (patch paths such as /kind,
    /metadata/name or /status, label selectors, Delete with patches), and
    a resource selected by two overrides;
  - approval request files (approvals/) and status files (status/) that do
    not decode.

It warns about a run whose resourceSnapshotIndex no snapshot recorded in
status/ has (other than the next index, which the push may record), and
about an override whose spec.placement names no placement in the tree. It
warns, first and one 'Warning: …' line each, about every object the tree
takes out of a placement's selection: an object of the placement's latest
resource snapshot recorded in status/ that the tree no longer selects (a
deleted or moved file, a changed selector) is deleted from the placement's
clusters by the next run that rolls the new snapshot out. With
--kubeconfig it also warns about every MemberCluster whose gitfleet.io/driver
names a kubeconfig context that file does not have. Warnings do not change
the exit code: status/ may lag the remote, and the kubeconfig of the machine
that serves may differ from yours.

Each problem is one line, '<file>:<line>: <Kind> <name>: <field>: <message>'
(the line of the field, where the problem is one field), sorted by file and
line, so editors and CI logs link to the spot. A commit with any problem of
the first list or a duplicate is refused whole by serve (nothing of it is
rolled out, so nothing is deleted); a fleet object with invalid fields is
left out alone and gitfleet keeps its last accepted version. validate exits
1 if there is any problem, which makes it a
pull-request check. Otherwise it prints how many manifests it read.

The tree renders in a process of its own within serve's limits, with
serve's flags and defaults (--render-timeout, --render-memory-limit,
--max-file-size, --max-tree-size): a commit serve would stop is stopped here
too.`,
		Example: `  # Check the working tree before pushing
  gitfleet validate --repo ./fleet

  # Also check the member clusters' contexts against the kubeconfig serve uses
  gitfleet validate --repo ./fleet --kubeconfig ~/.kube/fleet.yaml

  # In CI, on the checked-out pull request
  gitfleet validate --repo "$GITHUB_WORKSPACE" --path clusters/prod`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return validate(cmd.Context(), cmd.OutOrStdout(), repo, hubPath, kubeconfig, limits)
		},
	}
	f := cmd.Flags()
	f.StringVar(&repo, "repo", ".", "path of the working tree of the fleet repository")
	f.StringVar(&hubPath, "path", ".", "folder of the hub content inside the repository")
	f.StringVar(&kubeconfig, "kubeconfig", "", "warn about kubeconfig:<context> drivers whose context is not in this kubeconfig")
	limits.addFlags(f)
	return cmd
}

// validate prints every problem of the repository at repo, or a count of
// what it read when there is none.
func validate(ctx context.Context, out io.Writer, repo, hubPath, kubeconfig string, limits renderLimits) error {
	if fi, err := os.Stat(repo); err != nil {
		return fmt.Errorf("repository: %w", err)
	} else if !fi.IsDir() {
		return fmt.Errorf("repository %s is not a folder", repo)
	}
	fsys := os.DirFS(repo)
	var problems []render.ManifestError
	manifests := 0
	c, err := renderproc.Render(ctx, fsys, limits.options(hubPath), limits.limits())
	var refused *render.RefusedError
	var whole *render.ManifestError
	switch {
	case errors.As(err, &refused):
		// gitfleet would refuse the commit whole; list everything.
		problems = append(problems, refused.Problems()...)
	case errors.As(err, &whole):
		problems = append(problems, *whole)
	case err != nil:
		return err
	default:
		problems = append(problems, c.Errors...)
		manifests += len(c.Members) + len(c.Placements) + len(c.Strategies) + len(c.Runs) + len(c.Resources) +
			len(c.ClusterResourceOverrides) + len(c.ResourceOverrides)
	}
	approvals, errs := render.ReadApprovals(fsys, render.ApprovalsDir)
	problems = append(problems, errs...)
	manifests += len(approvals)
	recorded, errs := readFamily(repo, status.StatusDir)
	problems = append(problems, errs...)
	var warnings []render.ManifestError
	var deletions []string
	if c != nil {
		deletions = removedFromSelection(c, recorded)
		problems = append(problems, admission(fsys, c, recorded)...)
		problems = append(problems, runIndexes(fsys, c)...)
		refErrs, refWarnings := runReferences(fsys, c, recorded)
		problems = append(problems, refErrs...)
		warnings = append(warnings, refWarnings...)
		warnings = append(warnings, runSnapshotIndexes(fsys, c, recorded)...)
		warnings = append(warnings, overridePlacements(fsys, c)...)
		warnings = append(warnings, windowReferences(fsys, c)...)
	}
	if kubeconfig != "" && c != nil {
		missing, err := missingContexts(fsys, c, kubeconfig)
		if err != nil {
			return err
		}
		warnings = append(warnings, missing...)
	}
	for _, d := range deletions {
		fmt.Fprintln(out, d)
	}
	sortProblems(warnings)
	for _, w := range warnings {
		fmt.Fprintln(out, w.Error())
	}
	if len(problems) == 0 {
		fmt.Fprintf(out, "%d manifests OK\n", manifests)
		return nil
	}
	sortProblems(problems)
	for _, p := range problems {
		fmt.Fprintln(out, p.Error())
	}
	return &exitError{code: 1, err: fmt.Errorf("%d problem(s) in %s", len(problems), repo)}
}

// sortProblems orders problems by file and line, as editors list them.
func sortProblems(problems []render.ManifestError) {
	slices.SortStableFunc(problems, func(a, b render.ManifestError) int {
		return cmp.Or(naturalCompare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
}

// missingContexts warns about members whose kubeconfig:<context> driver
// names a context the kubeconfig does not have.
func missingContexts(fsys fs.FS, c *render.Content, kubeconfig string) ([]render.ManifestError, error) {
	clusters, err := kube.Load(kube.Options{Kubeconfig: kubeconfig})
	if err != nil {
		return nil, err
	}
	var out []render.ManifestError
	for _, m := range c.Members {
		driver := m.Annotations[fleet.DriverAnnotation]
		ctx, ok := strings.CutPrefix(driver, fleet.DriverKubeconfigPrefix)
		if !ok || clusters.HasContext(ctx) {
			continue
		}
		src := c.Sources[render.ObjectRef{Group: fleet.ClusterGroup, Kind: "MemberCluster", Name: m.Name}]
		field := "metadata.annotations[" + fleet.DriverAnnotation + "]"
		out = append(out, render.ManifestError{File: src.File, Line: render.FieldLine(fsys, src, field), Kind: "MemberCluster", Name: m.Name,
			Field:   field,
			Message: fmt.Sprintf("warning: kubeconfig context %q is not in %s (it has: %s)", ctx, kubeconfig, strings.Join(clusters.Contexts(), ", "))})
	}
	return out, nil
}

// runIndexes reports runs whose resourceSnapshotIndex is not an integer
// >= 0. The API server accepts any string there, and the run then fails its
// initialization for good; validate says so before the push, with the
// message initialization would give.
func runIndexes(fsys fs.FS, c *render.Content) []render.ManifestError {
	var out []render.ManifestError
	for _, r := range c.Runs {
		idx := r.Spec.ResourceSnapshotIndex
		if n, err := strconv.Atoi(idx); idx == "" || err == nil && n >= 0 {
			continue
		}
		src := c.Sources[render.ObjectRef{Group: fleet.PlacementGroup, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}]
		out = append(out, render.ManifestError{File: src.File, Line: render.FieldLine(fsys, src, "spec.resourceSnapshotIndex"), Kind: r.Kind, Namespace: r.Namespace, Name: r.Name,
			Field: "spec.resourceSnapshotIndex", Message: fmt.Sprintf("invalid resource snapshot index `%s` provided, expected an integer >= 0", idx)})
	}
	return out
}

// admission reports the changes to runs and placements that gitfleet has
// accepted before (their status files hold the accepted spec) and that the
// API server would refuse; gitfleet keeps using the accepted spec.
func admission(fsys fs.FS, c *render.Content, recorded []runtime.Object) []render.ManifestError {
	type key struct{ kind, namespace, name string }
	accepted := map[key]runtime.Object{}
	for _, o := range recorded {
		switch x := o.(type) {
		case *fleet.UpdateRun:
			// Every run gitfleet accepted names its placement; a status
			// file without one holds no accepted spec to compare with.
			if x.Spec.PlacementName != "" {
				accepted[key{"run", x.Namespace, x.Name}] = x
			}
		case *fleet.Placement:
			accepted[key{"placement", x.Namespace, x.Name}] = x
		}
	}
	var out []render.ManifestError
	report := func(kind, namespace, name string, errs field.ErrorList, statusFile string) {
		src := c.Sources[render.ObjectRef{Group: fleet.PlacementGroup, Kind: kind, Namespace: namespace, Name: name}]
		for _, e := range errs {
			out = append(out, render.ManifestError{File: src.File, Line: render.FieldLine(fsys, src, e.Field), Kind: kind, Namespace: namespace, Name: name,
				Field: e.Field, Message: e.ErrorBody() + " (compared with the accepted spec in " + statusFile + ")"})
		}
	}
	for _, r := range c.Runs {
		if old, ok := accepted[key{"run", r.Namespace, r.Name}].(*fleet.UpdateRun); ok {
			p, _ := status.PathFor(old)
			report(r.Kind, r.Namespace, r.Name, admit.Update(old, r), p)
		}
	}
	for _, pl := range c.Placements {
		if old, ok := accepted[key{"placement", pl.Namespace, pl.Name}].(*fleet.Placement); ok {
			p, _ := status.PathFor(old)
			report(pl.Kind, pl.Namespace, pl.Name, admit.Update(old, pl), p)
		}
	}
	return out
}
