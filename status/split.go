package status

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
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
)

// runPart is one part file of a split run: a slice of one stage's clusters.
type runPart struct {
	StageName string                        `json:"stageName"`
	Clusters  []fleet.ClusterUpdatingStatus `json:"clusters"`
}

// placementPart is one part file of a split placement.
type placementPart struct {
	PlacementStatuses []fleet.PerClusterPlacementStatus `json:"placementStatuses"`
}

// part is one part file to write: its path and content (a runPart or a
// placementPart).
type part struct {
	path  string
	value any
}

// split returns what obj's own file at mainPath holds and its part files:
// obj itself and none when it is small. The returned main object shares
// everything but the cut lists with obj; neither is modified.
func split(obj runtime.Object, mainPath string) (runtime.Object, []part, error) {
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
		for first := 0; first < len(all); first += ChunkSize {
			parts = append(parts, part{partPath(dir, first), placementPart{all[first:min(first+ChunkSize, len(all))]}})
		}
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

func partPath(dir string, first int) string { return path.Join(dir, fmt.Sprintf("%05d.yaml", first)) }

// splitHeader is the comment on top of a split object's own file: a person
// reading it learns where the clusters went.
func splitHeader(obj runtime.Object, mainPath string) []byte {
	dir := strings.TrimSuffix(mainPath, ".yaml") + partsSuffix
	what := "the clusters of each stage are in " + dir + "/<stage>/"
	if _, ok := obj.(*fleet.Placement); ok {
		what = "placementStatuses are in " + dir + "/"
	}
	return []byte(fmt.Sprintf("# This file lists no clusters: %s, %d to a file.\n# `gitfleet get -o yaml` prints the whole object.\n", what, ChunkSize))
}

// encodePart renders a part file: a comment naming the object it belongs
// to, then the entries in the object's own field names.
func encodePart(mainPath string, p part) ([]byte, error) {
	data, err := marshalClean(p.value)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", p.path, err)
	}
	return append([]byte("# Part of "+mainPath+"; `gitfleet get -o yaml` prints the whole object.\n"), data...), nil
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
				if err := strictUnmarshal(data, &rp); err != nil {
					return nil, err
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
		fs, ok := groups[""]
		if !ok || len(groups) > 1 {
			return fmt.Errorf("%s: placements have no folders of parts", firstKey(parts))
		}
		all, err := concat(fs, parts, func(p string, data []byte) ([]fleet.PerClusterPlacementStatus, error) {
			var pp placementPart
			err := strictUnmarshal(data, &pp)
			return pp.PlacementStatuses, err
		})
		if err != nil {
			return err
		}
		o.Status.PlacementStatuses = all
	default:
		return fmt.Errorf("%s: %s is not split", firstKey(parts), mainPath)
	}
	return nil
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
