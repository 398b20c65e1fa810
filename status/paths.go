package status

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// Roots of the two trees gitfleet writes in the fleet repository.
const (
	StatusDir    = "status"
	ApprovalsDir = "approvals"
)

// Family folders under StatusDir. Strategies are the user's objects, but the
// hub persists its accepted copy (the last spec that passed admission), so
// they get a folder too.
const (
	runsDir           = "runs"
	placementsDir     = "placements"
	snapshotsDir      = "snapshots"
	policySnapshotDir = "policysnapshots"
	bindingsDir       = "bindings"
	clustersDir       = "clusters"
	strategiesDir     = "strategies"
	commitsDir        = "commits"
	sourcesDir        = "sources"
	overridesDir      = "overridesnapshots"
	evictionsDir      = "evictions"
)

// Ref is what a file's path says about the object it holds.
type Ref struct {
	Kind      string
	Namespace string
	// Name is the object's name. It is empty for bindings, whose files are
	// named by cluster and whose names carry a hash the path does not.
	Name string
	// Placement is set for snapshots, policy snapshots and bindings.
	Placement string
	// Cluster is set for bindings.
	Cluster string
	// Part is set for a part file of a split run or placement (see
	// SplitThreshold): its path below the object's parts folder.
	Part string
}

// PathFor is the slash-separated repository path of obj's file:
//
//	status/runs/[<ns>/]<name>.yaml
//	status/placements/[<ns>/]<name>.yaml
//	status/snapshots/[<ns>/]<placement>/<index>.yaml   (sub-snapshots <index>-<sub>.yaml)
//	status/policysnapshots/[<ns>/]<placement>/<index>.yaml
//	status/bindings/[<ns>/]<placement>/<cluster>.yaml     (or, grouped, .../stage=<stage>/<cluster>.yaml)
//	status/overridesnapshots/[<ns>/]<override>/<index>.yaml (ClusterResourceOverrideSnapshots, ResourceOverrideSnapshots)
//	status/clusters/<name>.yaml
//	status/evictions/<name>.yaml                        (ClusterResourcePlacementEvictions)
//	status/strategies/[<ns>/]<name>.yaml
//	status/commits/<sha>.yaml                           (commits that did not render)
//	status/sources/<branch>.yaml                        (how serve follows the branch)
//	approvals/[<ns>/]<name>.yaml
//
// A large run or placement also has part files next to its file (see
// SplitThreshold); PathFor names the object's own file.
//
// Snapshot paths come from the snapshot's labels, so PathFor insists that the
// name agrees with them: two objects must never share a file.
func PathFor(obj runtime.Object) (string, error) {
	kind := kindFor(obj)
	if kind == "" {
		return "", fmt.Errorf("no status path for %T", obj)
	}
	mo := obj.(metav1.Object)
	ns, name := mo.GetNamespace(), mo.GetName()
	if err := checkSegment("name", name); err != nil {
		return "", fmt.Errorf("%s: %w", describeObject(obj), err)
	}
	if ns != "" {
		if err := checkSegment("namespace", ns); err != nil {
			return "", fmt.Errorf("%s: %w", describeObject(obj), err)
		}
	}
	scoped := func(root string, parts ...string) string {
		all := []string{root}
		if ns != "" {
			all = append(all, ns)
		}
		all = append(all, parts...)
		all[len(all)-1] += ".yaml"
		return path.Join(all...)
	}
	switch o := obj.(type) {
	case *fleet.UpdateRun:
		return scoped(path.Join(StatusDir, runsDir), name), nil
	case *fleet.Placement:
		return scoped(path.Join(StatusDir, placementsDir), name), nil
	case *fleet.MemberCluster:
		return scoped(path.Join(StatusDir, clustersDir), name), nil
	case *fleet.Commit:
		return scoped(path.Join(StatusDir, commitsDir), name), nil
	case *fleet.GitSource:
		return scoped(path.Join(StatusDir, sourcesDir), name), nil
	case *fleet.UpdateStrategy:
		return scoped(path.Join(StatusDir, strategiesDir), name), nil
	case *fleet.ClusterResourcePlacementEviction:
		return scoped(path.Join(StatusDir, evictionsDir), name), nil
	case *fleet.ApprovalRequest:
		return scoped(ApprovalsDir, name), nil
	case *fleet.ResourceSnapshot:
		placement, index, err := indexedLabels(obj, fleet.ResourceIndexLabel)
		if err != nil {
			return "", err
		}
		file := strconv.Itoa(index)
		want := fmt.Sprintf(fleet.ResourceSnapshotNameFmt, placement, index)
		if sub, ok := o.Annotations[fleet.SubindexOfResourceSnapshotAnnotation]; ok {
			n, err := strconv.Atoi(sub)
			if err != nil || n < 0 {
				return "", fmt.Errorf("%s: annotation %s=%q is not an index", describeObject(obj), fleet.SubindexOfResourceSnapshotAnnotation, sub)
			}
			file += "-" + strconv.Itoa(n)
			want = fmt.Sprintf(fleet.ResourceSnapshotSubNameFmt, placement, index, n)
		}
		if name != want {
			return "", fmt.Errorf("%s: name does not match its labels, want %q", describeObject(obj), want)
		}
		return scoped(path.Join(StatusDir, snapshotsDir), placement, file), nil
	case *fleet.PolicySnapshot:
		placement, index, err := indexedLabels(obj, fleet.PolicyIndexLabel)
		if err != nil {
			return "", err
		}
		if want := fmt.Sprintf(fleet.PolicySnapshotNameFmt, placement, index); name != want {
			return "", fmt.Errorf("%s: name does not match its labels, want %q", describeObject(obj), want)
		}
		return scoped(path.Join(StatusDir, policySnapshotDir), placement, strconv.Itoa(index)), nil
	case *fleet.ClusterResourceOverrideSnapshot, *fleet.ResourceOverrideSnapshot:
		labels := mo.GetLabels()
		override := labels[fleet.OverrideTrackingLabel]
		if err := checkSegment("label "+fleet.OverrideTrackingLabel, override); err != nil {
			return "", fmt.Errorf("%s: %w", describeObject(obj), err)
		}
		index, err := strconv.Atoi(labels[fleet.OverrideIndexLabel])
		if err != nil || index < 0 {
			return "", fmt.Errorf("%s: label %s=%q is not an index", describeObject(obj), fleet.OverrideIndexLabel, labels[fleet.OverrideIndexLabel])
		}
		if want := fmt.Sprintf(fleet.OverrideSnapshotNameFmt, override, index); name != want {
			return "", fmt.Errorf("%s: name does not match its labels, want %q", describeObject(obj), want)
		}
		return scoped(path.Join(StatusDir, overridesDir), override, strconv.Itoa(index)), nil
	case *fleet.Binding:
		placement := o.Labels[fleet.PlacementTrackingLabel]
		if err := checkSegment("label "+fleet.PlacementTrackingLabel, placement); err != nil {
			return "", fmt.Errorf("%s: %w", describeObject(obj), err)
		}
		if strings.HasPrefix(placement, stageFolderPrefix) {
			return "", fmt.Errorf("%s: label %s=%q would read as a folder of a stage", describeObject(obj), fleet.PlacementTrackingLabel, placement)
		}
		if err := checkSegment("spec.targetCluster", o.Spec.TargetCluster); err != nil {
			return "", fmt.Errorf("%s: %w", describeObject(obj), err)
		}
		return scoped(path.Join(StatusDir, bindingsDir), placement, o.Spec.TargetCluster), nil
	}
	return "", fmt.Errorf("no status path for %T", obj)
}

// indexedLabels reads the placement and the index label of a snapshot.
func indexedLabels(obj runtime.Object, indexLabel string) (string, int, error) {
	labels := obj.(metav1.Object).GetLabels()
	placement := labels[fleet.PlacementTrackingLabel]
	if err := checkSegment("label "+fleet.PlacementTrackingLabel, placement); err != nil {
		return "", 0, fmt.Errorf("%s: %w", describeObject(obj), err)
	}
	index, err := strconv.Atoi(labels[indexLabel])
	if err != nil || index < 0 {
		return "", 0, fmt.Errorf("%s: label %s=%q is not an index", describeObject(obj), indexLabel, labels[indexLabel])
	}
	return placement, index, nil
}

// checkSegment rejects values that cannot be one path segment.
func checkSegment(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%s is empty", what)
	case s == "." || s == "..", strings.ContainsAny(s, `/\`):
		return fmt.Errorf("%s %q cannot be a file name", what, s)
	}
	return nil
}

// RefFor is the inverse of PathFor: what the file at p holds.
func RefFor(p string) (Ref, error) {
	bad := func(why string) (Ref, error) { return Ref{}, fmt.Errorf("%s: %s", p, why) }
	if path.Clean(p) != p || !strings.HasSuffix(p, ".yaml") {
		return bad("not a clean .yaml path")
	}
	parts := strings.Split(strings.TrimSuffix(p, ".yaml"), "/")
	for _, s := range parts {
		if err := checkSegment("path segment", s); err != nil {
			return bad(err.Error())
		}
	}
	if parts[0] == ApprovalsDir {
		return named(parts[1:], fleet.ApprovalRequestKind, p)
	}
	if parts[0] != StatusDir || len(parts) < 3 {
		return bad("not in the status or approvals tree")
	}
	if main, rest, ok := partOf(p); ok {
		ref, err := RefFor(main)
		if err != nil {
			return bad("part of " + main + ", which is not an object's file")
		}
		depth := strings.Count(rest, "/") + 1
		// Runs: <stage>/<first>.yaml; placements: [<stage>/]<first>.yaml.
		if depth != 2 && (parts[1] != placementsDir || depth != 1) {
			return bad("not where a part of " + main + " goes")
		}
		ref.Part = rest
		return ref, nil
	}
	rest := parts[2:]
	switch parts[1] {
	case runsDir:
		return named(rest, fleet.UpdateRunKind, p)
	case placementsDir:
		return named(rest, fleet.PlacementKind, p)
	case strategiesDir:
		return named(rest, fleet.UpdateStrategyKind, p)
	case clustersDir:
		if len(rest) != 1 {
			return bad("member clusters are cluster-scoped")
		}
		return Ref{Kind: fleet.KindMemberCluster, Name: rest[0]}, nil
	case evictionsDir:
		if len(rest) != 1 {
			return bad("evictions are cluster-scoped")
		}
		return Ref{Kind: fleet.KindClusterResourcePlacementEviction, Name: rest[0]}, nil
	case commitsDir:
		if len(rest) != 1 {
			return bad("want status/commits/<sha>.yaml")
		}
		return Ref{Kind: fleet.KindCommit, Name: rest[0]}, nil
	case sourcesDir:
		if len(rest) != 1 {
			return bad("want status/sources/<branch>.yaml")
		}
		return Ref{Kind: fleet.KindGitSource, Name: rest[0]}, nil
	case snapshotsDir, policySnapshotDir:
		ns, placement, file, err := placementScoped(rest)
		if err != nil {
			return bad(err.Error())
		}
		idx, sub, hasSub := strings.Cut(file, "-")
		index, err := strconv.Atoi(idx)
		if err != nil || index < 0 || strconv.Itoa(index) != idx {
			return bad("file name is not a snapshot index")
		}
		if parts[1] == policySnapshotDir {
			if hasSub {
				return bad("policy snapshots have no sub-index")
			}
			return Ref{Kind: fleet.PolicySnapshotKind(ns), Namespace: ns, Placement: placement,
				Name: fmt.Sprintf(fleet.PolicySnapshotNameFmt, placement, index)}, nil
		}
		ref := Ref{Kind: fleet.ResourceSnapshotKind(ns), Namespace: ns, Placement: placement,
			Name: fmt.Sprintf(fleet.ResourceSnapshotNameFmt, placement, index)}
		if hasSub {
			n, err := strconv.Atoi(sub)
			if err != nil || n < 0 || strconv.Itoa(n) != sub {
				return bad("file name is not <index>-<subindex>")
			}
			ref.Name = fmt.Sprintf(fleet.ResourceSnapshotSubNameFmt, placement, index, n)
		}
		return ref, nil
	case overridesDir:
		ns, override, file, err := placementScoped(rest)
		if err != nil {
			return bad(err.Error())
		}
		index, err := strconv.Atoi(file)
		if err != nil || index < 0 || strconv.Itoa(index) != file {
			return bad("file name is not an override snapshot index")
		}
		kind := fleet.KindClusterResourceOverrideSnapshot
		if ns != "" {
			kind = fleet.KindResourceOverrideSnapshot
		}
		return Ref{Kind: kind, Namespace: ns, Name: fmt.Sprintf(fleet.OverrideSnapshotNameFmt, override, index)}, nil
	case bindingsDir:
		// [<ns>/]<placement>/stage=<stage>/[<first>/]<cluster>
		if i := stageFolderIndex(rest); i > 0 {
			if rest[i] == stageFolderPrefix {
				return bad("a stage folder names its stage")
			}
			rest = append(rest[:i:i], rest[len(rest)-1])
		}
		ns, placement, cluster, err := placementScoped(rest)
		if err != nil {
			return bad(err.Error())
		}
		return Ref{Kind: fleet.BindingKind(ns), Namespace: ns, Placement: placement, Cluster: cluster}, nil
	}
	return bad("unknown status folder " + parts[1])
}

// named decodes [<ns>/]<name>.
func named(rest []string, kind func(string) string, p string) (Ref, error) {
	switch len(rest) {
	case 1:
		return Ref{Kind: kind(""), Name: rest[0]}, nil
	case 2:
		return Ref{Kind: kind(rest[0]), Namespace: rest[0], Name: rest[1]}, nil
	}
	return Ref{}, fmt.Errorf("%s: want [<namespace>/]<name>.yaml", p)
}

// placementScoped decodes [<ns>/]<placement>/<file>.
func placementScoped(rest []string) (ns, placement, file string, err error) {
	switch len(rest) {
	case 2:
		return "", rest[0], rest[1], nil
	case 3:
		return rest[0], rest[1], rest[2], nil
	}
	return "", "", "", fmt.Errorf("want [<namespace>/]<placement>/<file>.yaml")
}

// HistoryPathspecs are git pathspecs (with their magic) of every file that
// has ever held obj's state, in whichever layout: the object's own file, the
// part files of a split run or placement, and a binding's file in the stage
// folders of a large run. `git log -- <pathspecs>` is then the object's
// history across layout changes, which PathFor alone would cut short.
func HistoryPathspecs(obj runtime.Object) ([]string, error) {
	p, err := PathFor(obj)
	if err != nil {
		return nil, err
	}
	specs := []string{":(top)" + p}
	switch obj.(type) {
	case *fleet.UpdateRun, *fleet.Placement:
		specs = append(specs, ":(top)"+strings.TrimSuffix(p, ".yaml")+partsSuffix)
	case *fleet.Binding:
		dir, file := path.Split(p)
		specs = append(specs, ":(top,glob)"+dir+stageFolderPrefix+"*/**/"+file)
	}
	return specs, nil
}
