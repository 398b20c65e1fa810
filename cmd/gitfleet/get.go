package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	cliprinters "k8s.io/cli-runtime/pkg/printers"
	kubectlget "k8s.io/kubectl/pkg/cmd/get"

	"github.com/spf13/cobra"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/render"
	"github.com/gitfleet/gitfleet/status"
	"github.com/gitfleet/gitfleet/status/printers"
)

// now is the clock behind AGE columns and approval timestamps. It is a
// variable so tests can pin it and compare output with golden files.
var now = time.Now

func newGetCommand() *cobra.Command {
	var (
		q        query
		out      output
		all      bool
		table    printers.Options
		watch    bool
		interval time.Duration
	)
	cmd := &cobra.Command{
		Use:   "get (runs|approvals|snapshots|placements|bindings|clusters|strategies|sources)[,KIND...] [NAME...]",
		Short: "List runs, approval requests, snapshots, placements, bindings, clusters, strategies or sources from the status tree",
		Long: `get prints the objects gitfleet recorded in the fleet repository as kubectl
prints KubeFleet's: the same printer columns, so a 'kubectl get csur' habit
carries over. It reads files, not a cluster: --repo is a local clone or working
tree of the fleet repository. Pull first to see the latest progress, or let
get do it: --fetch runs 'git pull --ff-only' in --repo before reading, and
--watch (-w) does so every --interval and prints the objects that changed.
A fast-forward never loses work: git refuses it when you have commits or
edits it would overwrite, and get says so and shows what you have. Every
get says on stderr which commit the status is from and how old it is
("status from a1b2c3d (2m ago)"); stdout has only the objects.
With 'serve --status-branch B', status/ lives on B while approvals/ stays on
the tracked branch; read B from a second worktree ('git worktree add
../fleet-status B', then --repo ../fleet-status).

  runs         status/runs/        ClusterStagedUpdateRuns, StagedUpdateRuns
  approvals    approvals/          ClusterApprovalRequests, ApprovalRequests
  snapshots    status/snapshots/   ClusterResourceSnapshots, ResourceSnapshots
  placements   status/placements/  ClusterResourcePlacements, ResourcePlacements
  bindings     status/bindings/    ClusterResourceBindings, ResourceBindings
  clusters     status/clusters/    MemberClusters (before gitfleet wrote any,
                                   the ones declared in the manifests)
  strategies   status/strategies/  ClusterStagedUpdateStrategies, StagedUpdateStrategies
  sources      status/sources/     the branch serve tracks: last fetched and
                                   processed commit, last error and since when

The generic names list both scopes. KubeFleet's kind names and short names
narrow it as kubectl does: csur, careq, crs, crp, crb and csus (and the full
Cluster... names) list only the cluster-scoped objects; sur, areq, rs, rp, rb
and sus (and StagedUpdateRun, ApprovalRequest, ...) only the namespaced ones. As
with kubectl, a name may carry its group (csur.placement.kubernetes-fleet.io).
Several kinds separated by commas print one table each (get runs,approvals).
A repository has no current namespace, so every namespace is listed unless
-n picks one (-A is accepted for kubectl habits); a NAMESPACE column appears
when the rows span several. -l selects by labels, as kubectl's -l does.

Columns beyond KubeFleet's are in -o wide: for runs the phase (Waiting,
Stopped, Stuck, ...), the current stage, what the run waits for and the
resource snapshot index it uses. Tables are printed by kubectl's table printer
(k8s.io/cli-runtime), with its --no-headers, --show-labels and -L. -o yaml
prints the files' objects; -o json, -o name, -o jsonpath=..., -o go-template=...
are kubectl's too.`,
		Example: `  # The runs and their conditions, as 'kubectl get csur' shows them
  gitfleet get runs --repo ./fleet

  # What each run waits for: an approval, the end of a timed wait, stuck clusters
  gitfleet get runs -o wide

  # Which approval requests wait for a person, and whether merged approvals counted
  gitfleet get approvals -o wide

  # Pull, then follow the rollout; Ctrl-C ends it
  gitfleet get runs,approvals --watch

  # One run as YAML, or one field of it
  gitfleet get csur example-run -o yaml
  gitfleet get csur example-run -o jsonpath='{.status.conditions[?(@.type=="Progressing")].reason}'

  # The approval requests of one run, by label
  gitfleet get approvals -l kubernetes-fleet.io/targetUpdateRun=example-run -o name

  # Is serve keeping up with the branch?
  gitfleet get sources

  # Namespaced runs of one namespace
  gitfleet get sur -n my-app-namespace`,
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: q.complete,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return listKinds(cmd.OutOrStdout())
			}
			if err := out.validate(); err != nil {
				return err
			}
			if all && q.namespace != "" {
				return errors.New("--all-namespaces and --namespace are mutually exclusive")
			}
			if err := q.parse(args[0]); err != nil {
				return err
			}
			q.names = args[1:]
			if err := q.parseSelector(); err != nil {
				return err
			}
			table.Wide, table.ShowKind, table.Sorted = out.format == "wide", len(q.kinds) > 1, q.sortBy != ""
			l := lister{ctx: cmdContext(cmd), q: &q, out: &out, opts: table, stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr()}
			if watch {
				return l.watch(interval)
			}
			if q.fetch {
				if err := pull(l.ctx, q.repo); err != nil {
					return err
				}
			}
			return l.list()
		},
	}
	f := cmd.Flags()
	q.flags(cmd)
	out.flags(cmd)
	f.BoolVarP(&all, "all-namespaces", "A", false, "list every namespace (the default: a repository has no current namespace)")
	f.StringVar(&q.sortBy, "sort-by", "", "sort by a field, given as a JSONPath expression as kubectl's --sort-by ('{.metadata.name}' or .status.conditions[0].lastTransitionTime)")
	f.BoolVar(&table.NoHeaders, "no-headers", false, "leave out the header line of tables")
	f.BoolVar(&table.ShowLabels, "show-labels", false, "show all labels as the last column of tables, as kubectl does")
	f.StringSliceVarP(&table.LabelColumns, "label-columns", "L", nil, "labels to show as columns of tables, comma-separated or repeated (-L key1 -L key2), as kubectl's -L")
	f.BoolVarP(&watch, "watch", "w", false, "after listing, pull every --interval (git pull --ff-only) and print the objects that changed")
	f.DurationVar(&interval, "interval", 10*time.Second, "how often --watch pulls")
	return cmd
}

// kindRef is one kind a query asks for: a family narrowed to a scope.
type kindRef struct {
	fam   *family
	scope scope
}

// scope narrows a family to its cluster-scoped or namespaced kind, as the
// word the user typed says.
type scope int

const (
	anyScope scope = iota
	clusterScope
	namespacedScope
)

// family is one kind of object get and describe list: where its files are,
// gitfleet's names for it, its kinds and its table. KubeFleet's names for
// the kinds (plural, singular, short names) come from the registry's
// RESTMapper, as kubectl's come from discovery.
type family struct {
	name string
	dir  string
	// words are gitfleet's names: both scopes, or the only one.
	words []string
	// clusterKind and namespacedKind are the family's kinds (the latter
	// empty when it has only a cluster-scoped kind).
	clusterKind, namespacedKind string
	table                       func(io.Writer, []runtime.Object, time.Time, printers.Options) error
}

var families = []*family{
	{name: "runs", dir: "status/runs", words: []string{"runs", "run", "updateruns", "updaterun"},
		clusterKind: fleet.KindClusterStagedUpdateRun, namespacedKind: fleet.KindStagedUpdateRun,
		table: table(printers.Runs)},
	{name: "approvals", dir: "approvals", words: []string{"approvals", "approval"},
		clusterKind: fleet.KindClusterApprovalRequest, namespacedKind: fleet.KindApprovalRequest,
		table: table(printers.Approvals)},
	{name: "snapshots", dir: "status/snapshots", words: []string{"snapshots", "snapshot"},
		clusterKind: fleet.KindClusterResourceSnapshot, namespacedKind: fleet.KindResourceSnapshot,
		table: table(printers.Snapshots)},
	{name: "overrides", dir: "status/overridesnapshots",
		words:       []string{"overrides", "override", "overridesnapshots", "overridesnapshot"},
		clusterKind: fleet.KindClusterResourceOverrideSnapshot, namespacedKind: fleet.KindResourceOverrideSnapshot,
		table: overrideTable},
	{name: "placements", dir: "status/placements", words: []string{"placements", "placement"},
		clusterKind: fleet.KindClusterResourcePlacement, namespacedKind: fleet.KindResourcePlacement,
		table: table(printers.Placements)},
	{name: "bindings", dir: "status/bindings", words: []string{"bindings", "binding"},
		clusterKind: fleet.KindClusterResourceBinding, namespacedKind: fleet.KindResourceBinding,
		table: table(printers.Bindings)},
	{name: "evictions", dir: "status/evictions", words: []string{"evictions", "eviction"},
		clusterKind: fleet.KindClusterResourcePlacementEviction, table: table(printers.Evictions)},
	{name: "clusters", dir: "status/clusters", words: []string{"clusters"},
		clusterKind: fleet.KindMemberCluster, table: table(printers.Clusters)},
	{name: "strategies", dir: "status/strategies", words: []string{"strategies", "strategy", "updatestrategies", "updatestrategy"},
		clusterKind: fleet.KindClusterStagedUpdateStrategy, namespacedKind: fleet.KindStagedUpdateStrategy,
		table: table(printers.Strategies)},
	{name: "sources", dir: "status/sources", words: []string{"sources", "source"},
		clusterKind: fleet.KindGitSource, table: table(printers.Sources)},
}

// restMapper resolves KubeFleet's names for a kind.
var restMapper = fleet.RESTMapper()

// wordScope is the scope gitfleet's own words for the family name: both
// kinds, or the only one.
func (f *family) wordScope() scope {
	if f.namespacedKind == "" {
		return clusterScope
	}
	return anyScope
}

// kubectlWords are the names kubectl takes for the cluster-scoped kind:
// short names, plural, singular (after gitfleet's words when they name
// only that kind).
func (f *family) kubectlWords() []string {
	var words []string
	if f.wordScope() == clusterScope {
		words = append(words, f.words...)
	}
	k, _ := fleet.LookupKind(f.clusterKind)
	words = append(words, k.ShortNames...)
	return append(words, k.Plural, k.Singular)
}

// table adapts a typed printer to the objects a family's files decode to.
func table[T runtime.Object](print func(io.Writer, []T, time.Time, printers.Options) error) func(io.Writer, []runtime.Object, time.Time, printers.Options) error {
	return func(w io.Writer, objs []runtime.Object, t time.Time, opts printers.Options) error {
		typed := make([]T, 0, len(objs))
		for _, o := range objs {
			if x, ok := o.(T); ok {
				typed = append(typed, x)
			}
		}
		return print(w, typed, t, opts)
	}
}

// listKinds answers a bare `gitfleet get`, as kubectl api-resources does.
func listKinds(w io.Writer) error {
	tw := cliprinters.GetNewTabWriter(w) // kubectl api-resources' layout
	fmt.Fprintln(tw, "NAME\tSHORTNAMES\tKIND\tFILES")
	for _, fam := range families {
		k, _ := fleet.LookupKind(fam.clusterKind)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s/\n", fam.name, strings.Join(fam.kubectlWords(), ","), k.Singular, fam.dir)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "\nUse \"gitfleet get <name>\" to list objects of a kind, for example: gitfleet get runs")
	return err
}

// query is what get and describe were asked for.
type query struct {
	repo, path string
	kinds      []kindRef
	namespace  string
	names      []string
	selector   string
	labels     labels.Selector
	fetch      bool
	// sortBy is get's --sort-by: a JSONPath every kind's objects are
	// sorted by, as kubectl sorts them.
	sortBy string
}

// flags registers the flags get and describe share.
func (q *query) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&q.repo, "repo", ".", "path of a local clone or working tree of the fleet repository")
	f.StringVar(&q.path, "path", ".", "folder of the hub content inside the repository (read for clusters before gitfleet recorded any)")
	f.StringVarP(&q.namespace, "namespace", "n", "", "only objects of this namespace")
	f.StringVarP(&q.selector, "selector", "l", "", "label selector, as kubectl's (-l key=value,key2!=v,key3 in (a,b))")
	f.BoolVar(&q.fetch, "fetch", false, "run 'git pull --ff-only' in --repo first (it never overwrites your commits or edits)")
}

// parse resolves the resource words: one, or several separated by commas.
func (q *query) parse(words string) error {
	q.kinds = nil
	for _, word := range strings.Split(words, ",") {
		k, err := parseKind(word)
		if err != nil {
			return err
		}
		q.kinds = append(q.kinds, k)
	}
	return nil
}

// parseSelector parses -l; kubectl refuses names together with a selector.
func (q *query) parseSelector() error {
	q.labels = labels.Everything()
	if q.selector == "" {
		return nil
	}
	if len(q.names) > 0 {
		return errors.New("name cannot be provided when a selector is specified")
	}
	sel, err := labels.Parse(q.selector)
	if err != nil {
		return fmt.Errorf("--selector: %w", err)
	}
	q.labels = sel
	return nil
}

// parseKind resolves one resource word: gitfleet's name of a family, or a
// name kubectl takes for one of its kinds (also qualified by its group, as
// in csur.placement.kubernetes-fleet.io), resolved by the RESTMapper.
func parseKind(word string) (kindRef, error) {
	w := strings.ToLower(strings.TrimSpace(word))
	for _, fam := range families {
		if slices.Contains(fam.words, w) {
			return kindRef{fam, fam.wordScope()}, nil
		}
	}
	_, gr := schema.ParseResourceArg(w)
	if gvk, err := restMapper.KindFor(gr.WithVersion("")); err == nil && w != "" {
		for _, fam := range families {
			switch gvk.Kind {
			case fam.clusterKind:
				return kindRef{fam, clusterScope}, nil
			case fam.namespacedKind:
				return kindRef{fam, namespacedScope}, nil
			}
		}
	}
	names := make([]string, len(families))
	for i, fam := range families {
		names[i] = fam.name
	}
	return kindRef{}, fmt.Errorf("unknown resource type %q: want one of %s (or a KubeFleet short name such as csur)", word, strings.Join(names, ", "))
}

// complete is shell completion for get and describe: the resource words,
// then the names recorded in --repo.
func (q *query) complete(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) == 0 {
		names := make([]string, len(families))
		for i, fam := range families {
			names[i] = fam.name
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
	if q.parse(args[0]) != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for _, k := range q.kinds {
		objs, _ := readFamily(q.repo, k.fam.dir)
		for _, o := range objs {
			if q.keep(k, o) && !slices.Contains(args[1:], o.(metav1.Object).GetName()) {
				names = append(names, o.(metav1.Object).GetName())
			}
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// kind is the lowercase kind messages name, as kubectl does.
func (q *query) kind(k kindRef) string {
	kind := k.fam.clusterKind
	if k.scope == namespacedScope || (k.scope == anyScope && q.namespace != "") {
		kind = k.fam.namespacedKind
	}
	info, _ := fleet.LookupKind(kind)
	return info.Singular + "." + info.Group
}

// keep reports whether obj is one the query asks for.
func (q *query) keep(k kindRef, obj runtime.Object) bool {
	m := obj.(metav1.Object)
	if q.labels != nil && !q.labels.Matches(labels.Set(m.GetLabels())) {
		return false
	}
	ns := m.GetNamespace()
	switch k.scope {
	case clusterScope:
		// kubectl ignores -n for cluster-scoped kinds; so does get.
		return ns == ""
	case namespacedScope:
		if ns == "" {
			return false
		}
	}
	return q.namespace == "" || ns == q.namespace
}

// found is what a query found of one kind.
type found struct {
	kind kindRef
	objs []runtime.Object
}

// find reads each kind's files and returns the objects asked for, in a
// stable order. Problems that spoil only some files are written to stderr
// and returned as one exit error after the readable objects; an empty
// result is announced on stderr, as kubectl does.
func (q *query) find(stderr io.Writer) ([]found, error) {
	if err := q.root(); err != nil {
		return nil, err
	}
	var out []found
	var problems []render.ManifestError
	var missing, named int
	total := 0
	for _, k := range q.kinds {
		objs, probs := readFamily(q.repo, k.fam.dir)
		if k.fam.name == "clusters" && len(objs) == 0 && len(probs) == 0 {
			var err error
			if objs, err = declaredClusters(q.repo, q.path, stderr); err != nil {
				return nil, err
			}
		}
		problems = append(problems, probs...)
		var kept []runtime.Object
		for _, o := range objs {
			if q.keep(k, o) {
				kept = append(kept, o)
			}
		}
		kept, gone := q.byName(k, kept)
		if q.sortBy != "" {
			var err error
			if kept, err = sortBy(kept, q.sortBy); err != nil {
				return nil, err
			}
		}
		for _, p := range probs {
			fmt.Fprintf(stderr, "error: %v\n", p)
		}
		for _, name := range gone {
			fmt.Fprintf(stderr, "Error from repository (NotFound): %s %q not found%s\n", q.kind(k), name, q.where(k))
		}
		missing += len(gone)
		named += len(q.names)
		total += len(kept)
		out = append(out, found{k, kept})
	}
	if total == 0 && len(q.names) == 0 {
		msg := "No resources found"
		if q.namespace != "" && !q.onlyClusterScoped() {
			msg += " in " + q.namespace + " namespace."
		}
		if _, err := os.Stat(filepath.Join(q.repo, status.StatusDir)); errors.Is(err, fs.ErrNotExist) && q.readsStatus() {
			msg += fmt.Sprintf(" (%s has no %s/ folder: is it a checkout of the branch gitfleet writes status to?)", q.repo, status.StatusDir)
		}
		fmt.Fprintln(stderr, msg)
	}
	switch {
	case len(problems) > 0:
		return out, &exitError{code: 1, err: fmt.Errorf("%d file(s) of %s could not be read", len(problems), q.repo)}
	case missing > 0:
		return out, &exitError{code: 1, err: fmt.Errorf("%d of %d named object(s) not found", missing, named)}
	}
	return out, nil
}

// root resolves --repo to the top of its working tree and checks it is a
// folder of the fleet repository: in a Git repository, or a copy of a
// checkout holding status/ or approvals/. Elsewhere "No resources found"
// would hide a wrong --repo or working directory.
func (q *query) root() error {
	if fi, err := os.Stat(q.repo); err != nil {
		return fmt.Errorf("repository: %w", err)
	} else if !fi.IsDir() {
		return fmt.Errorf("repository %s is not a folder", q.repo)
	}
	root, err := fleetRepo(q.repo)
	if err != nil {
		return err
	}
	q.repo = root
	return nil
}

// fleetRepo is the clone (or copy of a checkout's records) that dir is in,
// or an error naming dir when it is neither.
func fleetRepo(dir string) (string, error) {
	root, ok := repoRoot(dir)
	if !ok && !holdsRecords(dir) {
		abs, _ := filepath.Abs(dir)
		return "", fmt.Errorf("%s is not in a Git repository and holds no %s/ or %s/ folder: run in a clone of the fleet repository or give --repo one",
			abs, status.StatusDir, status.ApprovalsDir)
	}
	return root, nil
}

// holdsRecords reports whether dir has a status/ or approvals/ folder, as
// a copy of a checkout of the fleet repository does.
func holdsRecords(dir string) bool {
	for _, sub := range []string{status.StatusDir, status.ApprovalsDir} {
		if fi, err := os.Stat(filepath.Join(dir, sub)); err == nil && fi.IsDir() {
			return true
		}
	}
	return false
}

// onlyClusterScoped reports whether every kind asked for is cluster-scoped.
func (q *query) onlyClusterScoped() bool {
	for _, k := range q.kinds {
		if k.scope != clusterScope {
			return false
		}
	}
	return true
}

// readsStatus reports whether a kind asked for lives under status/.
func (q *query) readsStatus() bool {
	for _, k := range q.kinds {
		if strings.HasPrefix(k.fam.dir, status.StatusDir+"/") {
			return true
		}
	}
	return false
}

// byName keeps the named objects, in the order named, and lists the names
// that matched nothing. Without names it keeps everything.
func (q *query) byName(k kindRef, objs []runtime.Object) (kept []runtime.Object, missing []string) {
	if len(q.names) == 0 {
		return objs, nil
	}
	for _, name := range q.names {
		found := false
		for _, o := range objs {
			if o.(metav1.Object).GetName() == name {
				kept = append(kept, o)
				found = true
			}
		}
		if !found && k.fam.name == "bindings" {
			// Binding names carry a hash; their files are named by
			// cluster. A cluster name that names one binding finds it.
			var same []runtime.Object
			for _, o := range objs {
				if b, ok := o.(*fleet.Binding); ok && b.Spec.TargetCluster == name {
					same = append(same, o)
				}
			}
			if len(same) == 1 {
				kept, found = append(kept, same[0]), true
			}
		}
		if !found {
			missing = append(missing, name)
		}
	}
	return kept, missing
}

// repoRoot is the top of the working tree dir is in, found as git finds
// it (the nearest folder upwards with a .git), so get and describe work
// from any subfolder of a clone; ok is false when there is none.
func repoRoot(dir string) (root string, ok bool) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir, false
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			if d == abs {
				return dir, true
			}
			return d, true
		}
		if filepath.Dir(d) == d {
			return dir, false
		}
	}
}

// where says where a missing object was looked for.
func (q *query) where(k kindRef) string {
	s := fmt.Sprintf(" in %s", filepath.Join(q.repo, filepath.FromSlash(k.fam.dir))+string(filepath.Separator))
	if q.namespace != "" && k.scope != clusterScope {
		s += " (namespace " + q.namespace + ")"
	}
	return s
}

// readFamily decodes every object stored below dir of the repository, in
// file order with numbers compared as numbers (snapshot 10 after 9). A run
// or placement too large for one file is assembled from its parts
// (status.ReadObjects), so it prints whole. As the hub does when it loads
// the tree, it refuses a file whose object belongs elsewhere: the path is
// part of what gitfleet records. Problems name the file; the other files
// are still read.
func readFamily(repo, dir string) ([]runtime.Object, []render.ManifestError) {
	stored, errs := status.ReadObjects(status.Dir(repo), dir)
	slices.SortFunc(stored, func(a, b status.StoredObject) int { return naturalCompare(a.Path, b.Path) })
	objs := make([]runtime.Object, len(stored))
	for i, so := range stored {
		objs[i] = so.Object
	}
	var problems []render.ManifestError
	for _, err := range errs {
		var fe *status.FileError
		if errors.As(err, &fe) {
			problems = append(problems, render.ManifestError{File: fe.File, Message: fe.Err.Error()})
		} else {
			problems = append(problems, render.ManifestError{File: dir, Message: err.Error()})
		}
	}
	slices.SortStableFunc(problems, func(a, b render.ManifestError) int { return naturalCompare(a.File, b.File) })
	return objs, problems
}

// declaredClusters renders the working tree for its MemberClusters: before
// gitfleet has recorded any cluster, they are what the manifests declare.
func declaredClusters(repo, hubPath string, stderr io.Writer) ([]runtime.Object, error) {
	c, err := render.Render(os.DirFS(repo), render.Options{Path: hubPath})
	if problems := render.RefusalProblems(err); len(problems) > 0 {
		return nil, fmt.Errorf("%s does not render, so no cluster can be listed from it (gitfleet validate lists every problem): %w", repo, err)
	}
	if err != nil {
		return nil, err
	}
	if len(c.Errors) > 0 {
		fmt.Fprintf(stderr, "Warning: %d manifest error(s) in %s; clusters in broken files are not listed (run gitfleet validate)\n", len(c.Errors), repo)
	}
	objs := make([]runtime.Object, len(c.Members))
	for i, m := range c.Members {
		objs[i] = m
	}
	return objs, nil
}

// objectName is namespace/name, or name for cluster-scoped objects.
func objectName(obj runtime.Object) string {
	m := obj.(metav1.Object)
	if m.GetNamespace() != "" {
		return m.GetNamespace() + "/" + m.GetName()
	}
	return m.GetName()
}

// naturalCompare orders strings with runs of digits compared by value, so
// status/snapshots/p/10.yaml sorts after 9.yaml.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := len(na) - len(nb); c != 0 {
				return c
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return int(a[0]) - int(b[0])
		}
		a, b = a[1:], b[1:]
	}
	return len(a) - len(b)
}

// digits is the length of the run of ASCII digits s starts with.
func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// statusPathspecs are the git pathspecs of every file that has held obj's
// recorded state (its file, its parts, its stage folders): describe's
// Events are the commits that changed any of them.
func statusPathspecs(obj runtime.Object) []string {
	specs, err := status.HistoryPathspecs(obj)
	if err != nil {
		return nil
	}
	return specs
}

// overrideTable prints the two override snapshot kinds in one table.
func overrideTable(w io.Writer, objs []runtime.Object, t time.Time, opts printers.Options) error {
	snaps := make([]metav1.Object, 0, len(objs))
	for _, o := range objs {
		switch o.(type) {
		case *fleet.ClusterResourceOverrideSnapshot, *fleet.ResourceOverrideSnapshot:
			snaps = append(snaps, o.(metav1.Object))
		}
	}
	return printers.OverrideSnapshots(w, snaps, t, opts)
}

// sortBy orders objs by the field the JSONPath names, with kubectl's
// sorter (missing values first, numbers by value, times by time).
func sortBy(objs []runtime.Object, field string) ([]runtime.Object, error) {
	if len(objs) < 2 {
		return objs, nil
	}
	// kubectl's sorter reads maps, as it reads what an API server sends.
	maps := make([]runtime.Object, len(objs))
	for i, o := range objs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil, err
		}
		maps[i] = &unstructured.Unstructured{Object: m}
	}
	sorter, err := kubectlget.SortObjects(unstructured.UnstructuredJSONScheme, maps, field)
	if err != nil {
		return nil, fmt.Errorf("--sort-by: %w", err)
	}
	sorted := make([]runtime.Object, len(objs))
	for i := range objs {
		sorted[i] = objs[sorter.OriginalPosition(i)]
	}
	return sorted, nil
}
