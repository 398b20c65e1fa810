package status

import (
	"bytes"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// Large objects are split so that a commit costs what it changes. A run or
// a placement lists every cluster it reaches; whole, its file grows with the
// fleet (about 0.5 KB a cluster) and every status commit rewrites it. Once
// the list passes SplitThreshold entries, the object's file keeps everything
// else (spec, conditions, each stage's tasks and times) and the per-cluster
// entries move, in order, into part files of ChunkSize entries each:
//
//	status/runs/[<ns>/]<run>.clusters/<stage>/<first>.yaml          stageName, clusters
//	status/runs/[<ns>/]<run>.clusters/deletionStage/<first>.yaml   the deletion stage
//	status/placements/[<ns>/]<placement>.clusters/<first>.yaml      placementStatuses
//
// <first> is the position of the part's first entry, zero-padded, so the
// files list in order. A stage's clusters are run in list order, so one
// batch of a stage rewrites a few neighbouring parts. Namespaces have no
// dots, so a "<name>.clusters" folder never meets a namespace folder.
//
// A placement's clusters are listed by name, but its runs go stage by
// stage, and a stage's clusters are spread over the whole list. So once the
// placement's newest run is split, its placementStatuses and its bindings
// are grouped by that run's stages (stageLayout), and a batch rewrites the
// files of one stage, not a slice of every part of the fleet:
//
//	status/placements/[<ns>/]<placement>.clusters/<stage>/<first>.yaml   the stage's entries
//	status/placements/[<ns>/]<placement>.clusters/<first>.yaml           entries in no stage
//	status/bindings/[<ns>/]<placement>/stage=<stage>/[<first>/]<cluster>.yaml
//
// A grouped part lists the positions of its entries in placementStatuses
// (indexes), so the whole list is put back in KubeFleet's order. The
// bindings of a stage of more than SplitThreshold clusters are in folders
// of ChunkSize, by position in the stage (<first>), so that the folder a
// batch rewrites stays small. A run of one stage groups nothing. "=" is in
// no Kubernetes name, so a "stage=" folder never meets a namespace or a
// placement folder. A binding moves to its stage's folder (and back) when
// it is next written.
//
// Readers assemble the object from its file and its parts (ReadObjects);
// nothing but the file layout differs from a whole object.
const (
	// SplitThreshold is the most per-cluster entries an object's own
	// file holds: up to it (a screenful of stages, ~25 KB) the file is the
	// whole object, easy to read in Git; past it, the entries move to parts.
	SplitThreshold = 50
	// ChunkSize is the number of entries of one part file: small enough
	// that a serial stage rewrites ~5 KB per cluster, big enough that the
	// folder of a 10,000-cluster stage has 1,000 entries, not 10,000.
	ChunkSize = 10

	partsSuffix      = ".clusters"
	deletionStageDir = "deletionStage"
	// stageFolderPrefix starts the name of a folder of bindings of one
	// stage.
	stageFolderPrefix = "stage="
)

// runPart is one part file of a split run: a slice of one stage's clusters.
type runPart struct {
	StageName string                        `json:"stageName"`
	Clusters  []fleet.ClusterUpdatingStatus `json:"clusters"`
}

// placementPart is one part file of a split placement. Indexes, set when
// the placement is grouped by stage, are the positions of the entries in
// the whole list.
type placementPart struct {
	Indexes           []int                             `json:"indexes,omitempty"`
	PlacementStatuses []fleet.PerClusterPlacementStatus `json:"placementStatuses"`
}

// stageLayout is how a split run groups its placement's clusters: by
// stage, in the run's order of stages. Clusters of the deletion stage, and
// clusters the run does not reach, are in no stage.
type stageLayout struct {
	placement placementKey
	created   metav1.Time
	run       string
	stages    []string
	stageOf   map[string]stageSeat // by cluster name
	// fingerprint tells cheaply whether a new version of the run changed
	// its stages (they are fixed at initialization): names and sizes.
	fingerprint string
	// husk, set for a run whose record the store forgot, is the run:
	// the layout knows only its placement and how new it is, and the
	// run is read back when it is elected.
	husk *hub.ObjectRef
}

// stageSeat is where a cluster sits in a run: its stage, and the folder of
// its binding in the stage's folder ("" when the stage is small).
type stageSeat struct {
	stage, chunk string
}

// placementKey names a placement: its namespace ("" for a
// ClusterResourcePlacement) and name.
type placementKey struct{ namespace, name string }

// layoutOfRun is the stage layout a run imposes on its placement, or nil
// when the run is not split (small fleets keep their files as they are) or
// has no stages yet. prev, the run's previous layout, is returned when the
// stages did not change, to spare rebuilding the map.
func layoutOfRun(r *fleet.UpdateRun, prev *stageLayout) *stageLayout {
	n := 0
	var fp strings.Builder
	for _, st := range r.Status.StagesStatus {
		n += len(st.Clusters)
		fmt.Fprintf(&fp, "%s/%d/", st.StageName, len(st.Clusters))
		if k := len(st.Clusters); k > 0 {
			fp.WriteString(st.Clusters[0].ClusterName + "/" + st.Clusters[k-1].ClusterName + "/")
		}
	}
	if d := r.Status.DeletionStageStatus; d != nil {
		n += len(d.Clusters)
	}
	if n <= SplitThreshold {
		return nil
	}
	key := placementKey{r.Namespace, r.Spec.PlacementName}
	if prev != nil && prev.fingerprint == fp.String() && prev.placement == key {
		return prev
	}
	l := &stageLayout{placement: key, created: r.CreationTimestamp, run: r.Name, stageOf: make(map[string]stageSeat, n), fingerprint: fp.String()}
	reached := 0
	for _, st := range r.Status.StagesStatus {
		if checkSegment("stage name", st.StageName) != nil || strings.Contains(st.StageName, "=") {
			return nil // split refuses the run; its placement stays as it is
		}
		if len(st.Clusters) > 0 {
			reached++
		}
		l.stages = append(l.stages, st.StageName)
		for i, c := range st.Clusters {
			seat := stageSeat{stage: st.StageName}
			if len(st.Clusters) > SplitThreshold {
				seat.chunk = fmt.Sprintf("%05d", i/ChunkSize*ChunkSize)
			}
			l.stageOf[c.ClusterName] = seat
		}
	}
	if reached < 2 {
		return nil // one stage holds every cluster: grouping would change nothing
	}
	return l
}

// newer reports whether l belongs to a newer run than m (nil is oldest).
func (l *stageLayout) newer(m *stageLayout) bool {
	if m == nil {
		return true
	}
	if !l.created.Equal(&m.created) {
		return m.created.Before(&l.created)
	}
	return l.run > m.run
}

// stagedBindingPath is where a binding lives in layout l: its stage's
// folder, or p (its flat path) when it is in no stage.
func stagedBindingPath(p, cluster string, l *stageLayout) string {
	if l == nil {
		return p
	}
	seat, ok := l.stageOf[cluster]
	if !ok {
		return p
	}
	dir, file := path.Split(p)
	return path.Join(dir, stageFolderPrefix+seat.stage, seat.chunk, file)
}

// unstaged is a binding's path with its stage folder (and the folder of
// ten in it) left out: the path PathFor gives it.
func unstaged(p string) string {
	parts := strings.Split(p, "/")
	if n := len(parts); n >= 3 {
		if i := stageFolderIndex(parts); i > 0 {
			return path.Join(append(parts[:i:i], parts[n-1])...)
		}
	}
	return p
}

// stageFolderIndex is the position of the stage folder in a binding's
// path split at slashes: second to last, or third to last when a folder of
// ten follows it; 0 when there is none.
func stageFolderIndex(parts []string) int {
	n := len(parts)
	if n >= 2 && strings.HasPrefix(parts[n-2], stageFolderPrefix) {
		return n - 2
	}
	if n >= 3 && strings.HasPrefix(parts[n-3], stageFolderPrefix) && isChunkFolder(parts[n-2]) {
		return n - 3
	}
	return 0
}

// isChunkFolder reports whether s names a folder of ten ("00010").
func isChunkFolder(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 0 && fmt.Sprintf("%05d", n) == s
}

// part is one part file to write: its path and content (a runPart or a
// placementPart).
type part struct {
	path  string
	value any
}

// split returns what obj's own file at mainPath holds and its part files:
// obj itself and none when it is small. A placement's parts are grouped by
// the stages of layout when it is not nil. The returned main object shares
// everything but the cut lists with obj; neither is modified.
func split(obj runtime.Object, mainPath string, layout *stageLayout) (runtime.Object, []part, error) {
	dir := strings.TrimSuffix(mainPath, ".yaml") + partsSuffix
	switch o := obj.(type) {
	case *fleet.UpdateRun:
		n := 0
		for _, s := range o.Status.StagesStatus {
			n += len(s.Clusters)
		}
		if d := o.Status.DeletionStageStatus; d != nil {
			n += len(d.Clusters)
		}
		if n <= SplitThreshold {
			return obj, nil, nil
		}
		main := *o
		main.Status.StagesStatus = make([]fleet.StageUpdatingStatus, len(o.Status.StagesStatus))
		var parts []part
		seen := map[string]bool{}
		for i, s := range o.Status.StagesStatus {
			main.Status.StagesStatus[i] = s
			if len(s.Clusters) == 0 {
				continue // kept as is: an empty list stays one
			}
			if err := checkSegment("stage name", s.StageName); err != nil || s.StageName == deletionStageDir || seen[s.StageName] {
				return nil, nil, fmt.Errorf("%s: stage %q cannot name a folder of its own", describeObject(obj), s.StageName)
			}
			seen[s.StageName] = true
			main.Status.StagesStatus[i].Clusters = nil
			parts = appendRunParts(parts, path.Join(dir, s.StageName), s.StageName, s.Clusters)
		}
		if d := o.Status.DeletionStageStatus; d != nil && len(d.Clusters) > 0 {
			ds := *d
			ds.Clusters = nil
			main.Status.DeletionStageStatus = &ds
			parts = appendRunParts(parts, path.Join(dir, deletionStageDir), d.StageName, d.Clusters)
		}
		return &main, parts, nil
	case *fleet.Placement:
		all := o.Status.PlacementStatuses
		if len(all) <= SplitThreshold {
			return obj, nil, nil
		}
		main := *o
		main.Status.PlacementStatuses = nil
		var parts []part
		if layout == nil {
			for first := 0; first < len(all); first += ChunkSize {
				parts = append(parts, part{partPath(dir, first), placementPart{PlacementStatuses: all[first:min(first+ChunkSize, len(all))]}})
			}
			return &main, parts, nil
		}
		byStage := make(map[string][]int, len(layout.stages))
		var rest []int
		for i, s := range all {
			if seat, ok := layout.stageOf[s.ClusterName]; ok {
				byStage[seat.stage] = append(byStage[seat.stage], i)
			} else {
				rest = append(rest, i)
			}
		}
		group := func(dir string, indexes []int) {
			for first := 0; first < len(indexes); first += ChunkSize {
				chunk := indexes[first:min(first+ChunkSize, len(indexes))]
				entries := make([]fleet.PerClusterPlacementStatus, len(chunk))
				for j, i := range chunk {
					entries[j] = all[i]
				}
				parts = append(parts, part{partPath(dir, first), placementPart{Indexes: chunk, PlacementStatuses: entries}})
			}
		}
		for _, stage := range layout.stages {
			group(path.Join(dir, stage), byStage[stage])
		}
		group(dir, rest)
		return &main, parts, nil
	}
	return obj, nil, nil
}

func appendRunParts(parts []part, dir, stage string, clusters []fleet.ClusterUpdatingStatus) []part {
	for first := 0; first < len(clusters); first += ChunkSize {
		parts = append(parts, part{partPath(dir, first), runPart{stage, clusters[first:min(first+ChunkSize, len(clusters))]}})
	}
	return parts
}

// partPath is dir/<first>.yaml, first zero-padded to five digits
// (fmt.Sprintf("%05d") without its cost: a flush names every part of the
// objects it encodes). dir is clean.
func partPath(dir string, first int) string {
	n := strconv.Itoa(first)
	if len(n) < 5 {
		n = "00000"[len(n):] + n
	}
	return dir + "/" + n + ".yaml"
}

// splitHeader is the comment on top of a split object's own file: a person
// reading it learns where the clusters went.
func splitHeader(obj runtime.Object, mainPath string) string {
	dir := strings.TrimSuffix(mainPath, ".yaml") + partsSuffix
	what := "the clusters of each stage are in " + dir + "/<stage>/"
	if _, ok := obj.(*fleet.Placement); ok {
		what = "placementStatuses are in " + dir + "/ (by stage of the newest large run, if any)"
	}
	return fmt.Sprintf("# This file lists no clusters: %s, %d to a file.\n# `gitfleet get -o yaml` prints the whole object.\n", what, ChunkSize)
}

// encodePart renders a part file: a comment naming the object it belongs
// to, then the entries in the object's own field names.
func encodePart(mainPath string, p part) ([]byte, error) {
	buf := getBuffer()
	defer putBuffer(buf)
	buf.WriteString("# Part of " + mainPath + "; `gitfleet get -o yaml` prints the whole object.\n")
	if err := marshalCleanTo(buf, p.value); err != nil {
		return nil, fmt.Errorf("encode %s: %w", p.path, err)
	}
	return bytes.Clone(buf.Bytes()), nil
}

// partOf reports whether p is a part file and, if so, the path of the
// object file it belongs to and the rest of its path below the parts folder
// ("<stage>/<first>.yaml" for runs, "<first>.yaml" for placements).
func partOf(p string) (mainPath, rest string, ok bool) {
	parts := strings.Split(p, "/")
	if len(parts) < 4 || parts[0] != StatusDir || (parts[1] != runsDir && parts[1] != placementsDir) {
		return "", "", false
	}
	for i := 2; i < len(parts)-1 && i <= 3; i++ {
		if name, found := strings.CutSuffix(parts[i], partsSuffix); found && name != "" {
			return path.Join(append(parts[:i:i], name+".yaml")...), path.Join(parts[i+1:]...), true
		}
	}
	return "", "", false
}

// assemble puts an object's part files (path → content) back into obj,
// decoded from its own file: the inverse of split. Parts must be complete
// and in order; a missing, extra or foreign one is an error naming it.
func assemble(obj runtime.Object, mainPath string, parts map[string][]byte) error {
	if len(parts) == 0 {
		return nil
	}
	// Group the parts by folder (stage), in order of their first entry.
	groups := map[string][]partFile{}
	for p := range parts {
		_, rest, _ := partOf(p)
		dir, name := path.Split(rest)
		first, err := strconv.Atoi(strings.TrimSuffix(name, ".yaml"))
		if err != nil || first < 0 {
			return fmt.Errorf("%s: file name is not the position of its first entry", p)
		}
		dir = strings.TrimSuffix(dir, "/")
		groups[dir] = append(groups[dir], partFile{p, first})
	}
	dirs := make([]string, 0, len(groups))
	for dir, fs := range groups {
		sort.Slice(fs, func(i, j int) bool { return fs[i].first < fs[j].first })
		dirs = append(dirs, dir)
	}
	sort.Strings(dirs)
	switch o := obj.(type) {
	case *fleet.UpdateRun:
		for _, dir := range dirs {
			fs := groups[dir]
			stage := stageFor(o, dir)
			if stage == nil {
				return fmt.Errorf("%s: %s has no stage %q", fs[0].path, mainPath, dir)
			}
			if len(stage.Clusters) > 0 {
				return fmt.Errorf("%s: stage %q of %s already lists its clusters", fs[0].path, stage.StageName, mainPath)
			}
			all, err := concat(fs, parts, func(p string, data []byte) ([]fleet.ClusterUpdatingStatus, error) {
				var rp runPart
				if !unmarshalOwn(data, &rp) {
					if err := strictUnmarshal(data, &rp); err != nil {
						return nil, err
					}
				}
				if rp.StageName != stage.StageName {
					return nil, fmt.Errorf("holds clusters of stage %q, not %q", rp.StageName, stage.StageName)
				}
				return rp.Clusters, nil
			})
			if err != nil {
				return err
			}
			stage.Clusters = all
		}
	case *fleet.Placement:
		if len(o.Status.PlacementStatuses) > 0 {
			return fmt.Errorf("%s: %s already lists its placementStatuses", firstKey(parts), mainPath)
		}
		all, err := assemblePlacement(strings.TrimSuffix(mainPath, ".yaml")+partsSuffix, dirs, groups, parts)
		if err != nil {
			return err
		}
		o.Status.PlacementStatuses = all
	default:
		return fmt.Errorf("%s: %s is not split", firstKey(parts), mainPath)
	}
	return nil
}

// assemblePlacement joins a placement's parts: in order when they list no
// indexes (one folder of consecutive slices), else each entry at its index,
// every position filled exactly once. dir is the parts folder.
func assemblePlacement(dir string, dirs []string, groups map[string][]partFile, parts map[string][]byte) ([]fleet.PerClusterPlacementStatus, error) {
	read := func(p string, data []byte) (placementPart, error) {
		var pp placementPart
		if !unmarshalOwn(data, &pp) {
			if err := strictUnmarshal(data, &pp); err != nil {
				return pp, err
			}
		}
		if pp.Indexes != nil && len(pp.Indexes) != len(pp.PlacementStatuses) {
			return pp, fmt.Errorf("lists %d indexes for %d entries", len(pp.Indexes), len(pp.PlacementStatuses))
		}
		return pp, nil
	}
	grouped := len(dirs) > 1 || dirs[0] != ""
	if !grouped {
		fs := groups[""]
		data := parts[fs[0].path]
		if pp, err := read(fs[0].path, data); err != nil {
			return nil, fmt.Errorf("%s: %w", fs[0].path, err)
		} else if pp.Indexes != nil {
			grouped = true
		}
	}
	if !grouped {
		return concat(groups[""], parts, func(p string, data []byte) ([]fleet.PerClusterPlacementStatus, error) {
			pp, err := read(p, data)
			if err == nil && pp.Indexes != nil {
				err = fmt.Errorf("lists indexes, but the parts before it do not")
			}
			return pp.PlacementStatuses, err
		})
	}
	var slots []fleet.PerClusterPlacementStatus
	from := map[int]string{} // index -> the part that filled it
	for _, dir := range dirs {
		next := 0
		for _, f := range groups[dir] {
			if f.first != next {
				return nil, fmt.Errorf("%s: starts at entry %d of its folder, but the parts before it hold %d", f.path, f.first, next)
			}
			pp, err := read(f.path, parts[f.path])
			if err == nil && (pp.Indexes == nil || len(pp.PlacementStatuses) == 0) {
				err = fmt.Errorf("lists no indexes, but the placement's parts are grouped by stage")
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.path, err)
			}
			next += len(pp.Indexes)
			for j, i := range pp.Indexes {
				if i < 0 {
					return nil, fmt.Errorf("%s: index %d is not a position", f.path, i)
				}
				if other, dup := from[i]; dup {
					return nil, fmt.Errorf("%s: index %d is also in %s", f.path, i, other)
				}
				from[i] = f.path
				for len(slots) <= i {
					slots = append(slots, fleet.PerClusterPlacementStatus{})
				}
				slots[i] = pp.PlacementStatuses[j]
			}
		}
	}
	for i := range slots {
		if _, ok := from[i]; !ok {
			return nil, fmt.Errorf("%s: no part holds entry %d of placementStatuses", dir, i)
		}
	}
	return slots, nil
}

// partFile is a part file and the position of its first entry.
type partFile struct {
	path  string
	first int
}

// concat reads a folder's parts, sorted, and joins their entries, checking
// that each starts where the ones before it ended; read decodes one part.
func concat[T any](fs []partFile, parts map[string][]byte, read func(p string, data []byte) ([]T, error)) ([]T, error) {
	var all []T
	for _, f := range fs {
		if f.first != len(all) {
			return nil, fmt.Errorf("%s: starts at entry %d, but the parts before it hold %d", f.path, f.first, len(all))
		}
		entries, err := read(f.path, parts[f.path])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.path, err)
		}
		if len(entries) == 0 {
			return nil, fmt.Errorf("%s: lists no entries", f.path)
		}
		all = append(all, entries...)
	}
	return all, nil
}

// stageFor finds the stage whose parts are in folder dir.
func stageFor(r *fleet.UpdateRun, dir string) *fleet.StageUpdatingStatus {
	if dir == deletionStageDir {
		return r.Status.DeletionStageStatus
	}
	for i := range r.Status.StagesStatus {
		if r.Status.StagesStatus[i].StageName == dir {
			return &r.Status.StagesStatus[i]
		}
	}
	return nil
}

func firstKey(m map[string][]byte) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys[0]
}
