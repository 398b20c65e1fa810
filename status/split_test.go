package status

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
)

// bigRun is the waiting run with stages of the given sizes (a size of -1
// is an empty list) and a deletion stage of del clusters.
func bigRun(ns string, del int, sizes ...int) *fleet.UpdateRun {
	r := waitingRun(ns)
	tmpl := r.Status.StagesStatus[0]
	r.Status.StagesStatus = nil
	n := 0
	clusters := func(k int) []fleet.ClusterUpdatingStatus {
		out := []fleet.ClusterUpdatingStatus{}
		for range k {
			c := tmpl.Clusters[0]
			c.ClusterName = fmt.Sprintf("member-%05d", n)
			c.Conditions = slices.Clone(c.Conditions)
			c.Conditions[0].Message = fmt.Sprintf("Cluster update started (%d)", n)
			out = append(out, c)
			n++
		}
		return out
	}
	for i, k := range sizes {
		st := tmpl
		st.StageName = fmt.Sprintf("stage-%d", i)
		st.Clusters = clusters(max(k, 0))
		r.Status.StagesStatus = append(r.Status.StagesStatus, st)
	}
	r.Status.DeletionStageStatus.Clusters = clusters(del)
	return r
}

func bigPlacement(ns string, n int) *fleet.Placement {
	p := placement(ns)
	for i := range n {
		p.Status.PlacementStatuses = append(p.Status.PlacementStatuses, fleet.PerClusterPlacementStatus{
			ClusterName: fmt.Sprintf("member-%05d", i), ObservedResourceIndex: "1",
			Conditions: []metav1.Condition{cond("ClusterResourcePlacementAvailable", "True", "AllWorkAreAvailable", "All corresponding work objects are available", time.Minute)}})
	}
	return p
}

func files(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSplitObjectsRoundTripExactly(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  runtime.Object
		// files below status/ the object is stored in
		files []string
	}{
		{"a run at the threshold stays whole", bigRun("", 0, 30, 20), []string{"runs/example-run.yaml"}},
		{"a placement at the threshold stays whole", bigPlacement("", SplitThreshold), []string{"placements/example-placement.yaml"}},
		{"a large run lists its clusters by stage, in parts of ten", bigRun("", 3, 12, -1, 40), []string{
			"runs/example-run.clusters/deletionStage/00000.yaml",
			"runs/example-run.clusters/stage-0/00000.yaml", "runs/example-run.clusters/stage-0/00010.yaml",
			"runs/example-run.clusters/stage-2/00000.yaml", "runs/example-run.clusters/stage-2/00010.yaml",
			"runs/example-run.clusters/stage-2/00020.yaml", "runs/example-run.clusters/stage-2/00030.yaml",
			"runs/example-run.yaml"}},
		{"a namespaced run", bigRun("team-a", 0, 51), []string{
			"runs/team-a/example-run.clusters/stage-0/00000.yaml", "runs/team-a/example-run.clusters/stage-0/00010.yaml",
			"runs/team-a/example-run.clusters/stage-0/00020.yaml", "runs/team-a/example-run.clusters/stage-0/00030.yaml",
			"runs/team-a/example-run.clusters/stage-0/00040.yaml", "runs/team-a/example-run.clusters/stage-0/00050.yaml",
			"runs/team-a/example-run.yaml"}},
		{"a large placement", bigPlacement("team-a", 61), []string{
			"placements/team-a/example-placement.clusters/00000.yaml", "placements/team-a/example-placement.clusters/00010.yaml",
			"placements/team-a/example-placement.clusters/00020.yaml", "placements/team-a/example-placement.clusters/00030.yaml",
			"placements/team-a/example-placement.clusters/00040.yaml", "placements/team-a/example-placement.clusters/00050.yaml",
			"placements/team-a/example-placement.clusters/00060.yaml",
			"placements/team-a/example-placement.yaml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			r := newRepo(t)
			s, _ := newStore(r)
			obj := withKind([]runtime.Object{tc.obj})[0]
			s.Put(refOfObj(obj), obj)
			if err := s.Flush(ctx, true); err != nil {
				t.Fatal(err)
			}
			if got := files(t, filepath.Join(string(r.Dir), StatusDir)); !slices.Equal(got, tc.files) {
				t.Fatalf("files:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.files, "\n"))
			}
			want, err := Encode(obj)
			if err != nil {
				t.Fatal(err)
			}
			loaded, err := NewTreeStore(r, r, clock.NewFake(t0)).Load(ctx)
			if err != nil || len(loaded) != 1 {
				t.Fatalf("load: %d objects, %v", len(loaded), err)
			}
			got, err := Encode(loaded[0])
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("assembled object differs from the one stored:\n%s\nwant:\n%s", got, want)
			}
			if len(tc.files) > 1 {
				main, _ := r.Read(StatusDir + "/" + tc.files[len(tc.files)-1])
				if bytes.Contains(main, []byte("clusterName")) || !bytes.HasPrefix(main, []byte("# This file lists no clusters")) {
					t.Errorf("a split object's file lists clusters or does not say where they are:\n%s", main)
				}
			}
		})
	}
}

func TestSplitRunWritesOnlyTheChangedParts(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	s, _ := newStore(r)
	s.Interval = 0
	run := withKind([]runtime.Object{bigRun("", 0, 1000, 1000)})[0].(*fleet.UpdateRun)
	s.Put(refOfObj(run), run)
	if err := s.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}

	// One cluster of the second stage changes.
	run.Status.StagesStatus[1].Clusters[523].Conditions[1].Message = "changed"
	s.Put(refOfObj(run), run)
	if err := s.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	c := r.lastCommit(t)
	if got, want := c.changes.WritePaths(), []string{"status/runs/example-run.clusters/stage-1/00520.yaml"}; !slices.Equal(got, want) || len(c.changes.Deletes) > 0 {
		t.Errorf("commit wrote %v and deleted %v, want only %v", got, c.changes.Deletes, want)
	}
	if !strings.HasPrefix(c.message, "status: example-run ") {
		t.Errorf("the commit message does not name the run: %q", c.message)
	}

	// The run shrinks below the threshold: the parts go, the file is whole.
	run.Status.StagesStatus = run.Status.StagesStatus[:1]
	run.Status.StagesStatus[0].Clusters = run.Status.StagesStatus[0].Clusters[:5]
	s.Put(refOfObj(run), run)
	if err := s.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	if got := files(t, filepath.Join(string(r.Dir), StatusDir)); !slices.Equal(got, []string{"runs/example-run.yaml"}) {
		t.Errorf("after shrinking, files are %v", got)
	}

	// Deleting the object deletes every file it had.
	s.Put(refOfObj(run), bigRun("", 0, 60))
	if err := s.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	s.Delete(refOfObj(run))
	if err := s.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	if got := files(t, filepath.Join(string(r.Dir), StatusDir)); len(got) != 0 {
		t.Errorf("after deleting, files are %v", got)
	}
}

func TestReadObjectsRefusesIncompleteOrForeignParts(t *testing.T) {
	stored := func(t *testing.T) Dir {
		r := newRepo(t)
		s, _ := newStore(r)
		obj := withKind([]runtime.Object{bigRun("", 0, 25, 30)})[0]
		s.Put(refOfObj(obj), obj)
		if err := s.Flush(context.Background(), true); err != nil {
			t.Fatal(err)
		}
		return r.Dir
	}
	const parts = "status/runs/example-run.clusters/"
	for _, tc := range []struct {
		name   string
		change func(d Dir) error
		want   string
	}{
		{"a missing part", func(d Dir) error { return os.Remove(d.join(parts + "stage-0/00010.yaml")) },
			parts + "stage-0/00020.yaml: starts at entry 20, but the parts before it hold 10"},
		{"a part of a stage the run does not have", func(d Dir) error {
			return os.Rename(d.join(parts+"stage-1"), d.join(parts+"stage-9"))
		}, parts + "stage-9/00000.yaml: status/runs/example-run.yaml has no stage \"stage-9\""},
		{"a part of another stage", func(d Dir) error {
			return os.Rename(d.join(parts+"stage-0/00020.yaml"), d.join(parts+"stage-1/00030.yaml"))
		}, parts + "stage-1/00030.yaml: holds clusters of stage \"stage-0\", not \"stage-1\""},
		{"a part with a typo", func(d Dir) error {
			return os.WriteFile(d.join(parts+"stage-0/00020.yaml"), []byte("stageName: stage-0\nclusterz: []\n"), 0o644)
		}, parts + "stage-0/00020.yaml: unknown field \"clusterz\""},
		{"parts without their run", func(d Dir) error { return os.Remove(d.join("status/runs/example-run.yaml")) },
			parts + "stage-0/00000.yaml: part of status/runs/example-run.yaml, which does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := stored(t)
			if err := tc.change(d); err != nil {
				t.Fatal(err)
			}
			objs, errs := ReadObjects(d, StatusDir)
			if len(objs) != 0 || len(errs) == 0 || errs[0].Error() != tc.want {
				t.Errorf("got %d objects, errors %v; want none and %q", len(objs), errs, tc.want)
			}
		})
	}
}

func TestRefForNamesThePartsOfSplitObjects(t *testing.T) {
	for p, want := range map[string]Ref{
		"status/runs/example-run.clusters/canary/00010.yaml":           {Kind: fleet.KindClusterStagedUpdateRun, Name: "example-run", Part: "canary/00010.yaml"},
		"status/runs/ns/example-run.clusters/deletionStage/00000.yaml": {Kind: fleet.KindStagedUpdateRun, Namespace: "ns", Name: "example-run", Part: "deletionStage/00000.yaml"},
		"status/placements/p.v2.clusters/00000.yaml":                   {Kind: fleet.KindClusterResourcePlacement, Name: "p.v2", Part: "00000.yaml"},
		"status/placements/p.clusters/canary/00000.yaml":               {Kind: fleet.KindClusterResourcePlacement, Name: "p", Part: "canary/00000.yaml"},
		"status/bindings/p/stage=canary/member-1.yaml":                 {Kind: fleet.KindClusterResourceBinding, Placement: "p", Cluster: "member-1"},
		"status/bindings/ns/p/stage=canary/member-1.yaml":              {Kind: fleet.KindResourceBinding, Namespace: "ns", Placement: "p", Cluster: "member-1"},
		"status/bindings/p/stage=canary/00010/member-1.yaml":           {Kind: fleet.KindClusterResourceBinding, Placement: "p", Cluster: "member-1"},
	} {
		got, err := RefFor(p)
		if err != nil || got != want {
			t.Errorf("RefFor(%s) = %+v, %v; want %+v", p, got, err, want)
		}
	}
	for _, p := range []string{
		"status/runs/example-run.clusters/00010.yaml",
		"status/placements/p.clusters/canary/a/00000.yaml",
		"status/runs/a/b/c.clusters/s/00000.yaml",
		"status/bindings/p/stage=/member-1.yaml",
		"status/bindings/a/b/c/member-1.yaml",
		"status/bindings/p/stage=canary/10/member-1.yaml",
	} {
		if ref, err := RefFor(p); err == nil {
			t.Errorf("RefFor(%s) = %+v, want an error", p, ref)
		}
	}
}

// stagedRun is a split run of two stages that take the clusters of a
// placement of n by turns (stage-0 the even ones, stage-1 the odd ones), as
// stages chosen by label do: each stage is spread over the whole list.
func stagedRun(n int) *fleet.UpdateRun {
	r := bigRun("", 0, n/2, n/2)
	for s := range r.Status.StagesStatus {
		for j := range r.Status.StagesStatus[s].Clusters {
			r.Status.StagesStatus[s].Clusters[j].ClusterName = fmt.Sprintf("member-%05d", 2*j+s)
		}
	}
	return r
}

func TestALargeRunGroupsItsPlacementAndBindingsByStage(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	s, _ := newStore(r)
	s.Interval = 0
	run := stagedRun(80)
	pl := bigPlacement("", 85) // member-00080 … 84 are in no stage of the run
	objs := withKind([]runtime.Object{run, pl, binding("", "member-00000"), binding("", "member-00001"), binding("", "member-00084")})
	for _, o := range objs[1:] {
		s.Put(refOfObj(o), o)
	}
	if err := s.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	// The run comes: the placement follows its stages when next written,
	// and the bindings move at once, as they are.
	s.Put(refOfObj(run), run)
	s.Put(refOfObj(pl), pl)
	if err := s.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	moved := r.lastCommit(t).changes
	if msg := r.lastCommit(t).message; !strings.Contains(msg, "2 bindings moved") || strings.Contains(msg, "removed") {
		t.Errorf("the commit that moves the bindings says:\n%s", msg)
	}
	for _, c := range []string{"member-00000", "member-00001"} {
		data := moved.Writes["status/bindings/example-placement/stage=stage-"+c[len(c)-1:]+"/"+c+".yaml"]
		if !slices.Contains(moved.Deletes, "status/bindings/example-placement/"+c+".yaml") || data == nil {
			t.Errorf("the binding of %s did not move to its stage's folder: %v", c, moved)
		}
	}
	want := []string{"placements/example-placement.clusters/00000.yaml"}
	for _, stage := range []string{"stage-0", "stage-1"} {
		for first := 0; first < 40; first += 10 {
			want = append(want, fmt.Sprintf("placements/example-placement.clusters/%s/%05d.yaml", stage, first))
		}
	}
	want = append(want, "placements/example-placement.yaml")
	got := files(t, filepath.Join(string(r.Dir), StatusDir))
	bindings := []string{"bindings/example-placement/member-00084.yaml",
		"bindings/example-placement/stage=stage-0/member-00000.yaml", "bindings/example-placement/stage=stage-1/member-00001.yaml"}
	if !slices.Equal(got[:3], bindings) || !slices.Equal(got[3:3+len(want)], want) {
		t.Fatalf("files:\n%s\nwant the bindings\n%s\nand the placement\n%s", strings.Join(got, "\n"), strings.Join(bindings, "\n"), strings.Join(want, "\n"))
	}
	part, _ := r.Read("status/placements/example-placement.clusters/stage-1/00000.yaml")
	if !bytes.Contains(part, []byte("indexes:\n- 1\n- 3\n- 5\n")) || !bytes.Contains(part, []byte("clusterName: member-00019")) {
		t.Errorf("the first part of stage-1 does not list clusters 1, 3, 5 … 19 and their positions:\n%s", part)
	}

	// Restart: every object reads back whole, the placement in KubeFleet's order.
	loaded, err := NewTreeStore(r, r, clock.NewFake(t0)).Load(ctx)
	if err != nil || len(loaded) != len(objs) {
		t.Fatalf("load: %d objects, %v", len(loaded), err)
	}
	for _, o := range loaded {
		wantObj := objs[slices.IndexFunc(objs, func(x runtime.Object) bool { return refOfObj(x) == refOfObj(o) })]
		got, _ := Encode(o)
		want, _ := Encode(wantObj)
		if !bytes.Equal(got, want) {
			t.Errorf("%s reads back as:\n%s\nwant:\n%s", describeObject(o), got, want)
		}
	}

	// A batch of stage-1 rewrites one part of stage-1, not one part in four.
	for _, i := range []int{1, 3, 5, 7} {
		pl.Status.PlacementStatuses[i].Conditions[0].Message = "changed"
	}
	s.Put(refOfObj(pl), pl)
	if err := s.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	if got, want := r.lastCommit(t).changes.WritePaths(), []string{"status/placements/example-placement.clusters/stage-1/00000.yaml"}; !slices.Equal(got, want) {
		t.Errorf("the batch wrote %v, want %v", got, want)
	}

	// Without the run, the bindings move back at once, the placement's
	// parts when it is next written.
	s.Delete(refOfObj(run))
	s.Put(refOfObj(pl), pl)
	if err := s.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	want = []string{"bindings/example-placement/member-00000.yaml", "bindings/example-placement/member-00001.yaml", "bindings/example-placement/member-00084.yaml"}
	for first := 0; first < 85; first += 10 {
		want = append(want, fmt.Sprintf("placements/example-placement.clusters/%05d.yaml", first))
	}
	want = append(want, "placements/example-placement.yaml")
	if got := files(t, filepath.Join(string(r.Dir), StatusDir)); !slices.Equal(got, want) {
		t.Errorf("files without the run:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestReadObjectsRefusesIncompleteGroupedParts(t *testing.T) {
	const parts = "status/placements/example-placement.clusters/"
	for _, tc := range []struct {
		name   string
		change func(d Dir) error
		want   string
	}{
		{"a missing part", func(d Dir) error { return os.Remove(d.join(parts + "stage-0/00030.yaml")) },
			"status/placements/example-placement.clusters: no part holds entry 60 of placementStatuses"},
		{"an entry listed twice", func(d Dir) error {
			data, err := os.ReadFile(d.join(parts + "stage-1/00000.yaml"))
			if err != nil {
				return err
			}
			return os.WriteFile(d.join(parts+"stage-1/00000.yaml"), bytes.Replace(data, []byte("- 3\n"), []byte("- 2\n"), 1), 0o644)
		}, parts + "stage-1/00000.yaml: index 2 is also in " + parts + "stage-0/00000.yaml"},
		{"a part that lists no indexes", func(d Dir) error {
			return os.WriteFile(d.join(parts+"stage-1/00000.yaml"), []byte("placementStatuses:\n- clusterName: member-00001\n"), 0o644)
		}, parts + "stage-1/00000.yaml: lists no indexes, but the placement's parts are grouped by stage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRepo(t)
			s, _ := newStore(r)
			for _, o := range withKind([]runtime.Object{stagedRun(80), bigPlacement("", 80)}) {
				s.Put(refOfObj(o), o)
			}
			if err := s.Flush(context.Background(), true); err != nil {
				t.Fatal(err)
			}
			if err := tc.change(r.Dir); err != nil {
				t.Fatal(err)
			}
			objs, errs := ReadObjects(r.Dir, StatusDir+"/placements")
			if len(objs) != 0 || len(errs) == 0 || errs[0].Error() != tc.want {
				t.Errorf("got %d objects, errors %v; want none and %q", len(objs), errs, tc.want)
			}
		})
	}
}

func TestBindingsOfALargeStageAreInFoldersOfTen(t *testing.T) {
	l := layoutOfRun(stagedRun(120), nil) // 60 clusters a stage
	for cluster, want := range map[string]string{
		"member-00000": "status/bindings/p/stage=stage-0/00000/member-00000.yaml",
		"member-00021": "status/bindings/p/stage=stage-1/00010/member-00021.yaml",
		"member-00119": "status/bindings/p/stage=stage-1/00050/member-00119.yaml",
		"member-00500": "status/bindings/p/member-00500.yaml",
	} {
		flat := "status/bindings/p/" + cluster + ".yaml"
		got := stagedBindingPath(flat, cluster, l)
		if got != want {
			t.Errorf("%s: binding at %s, want %s", cluster, got, want)
		}
		if unstaged(got) != flat {
			t.Errorf("unstaged(%s) = %s, want %s", got, unstaged(got), flat)
		}
	}
	if l := layoutOfRun(bigRun("", 0, 120), nil); l != nil {
		t.Errorf("a run of one stage groups its placement's files: %+v", l.stages)
	}
}

// The README's examples of the layout of large fleets name files gitfleet
// reads as what they say they are.
func TestTheREADMEsLayoutExamplesAreFilesGitfleetReads(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := bytes.Cut(readme, []byte("### Large fleets: split status files"))
	if !ok {
		t.Fatal("README has no section on large fleets")
	}
	section, _, _ = bytes.Cut(section, []byte("\n### "))
	checked := 0
	for _, line := range strings.Split(string(section), "\n") {
		p, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		p = strings.TrimSuffix(p, ",")
		if !strings.HasPrefix(p, "status/") {
			continue
		}
		ref, err := RefFor(p)
		if err != nil {
			t.Errorf("README names %s: %v", p, err)
			continue
		}
		kind := map[string]string{"runs": fleet.KindClusterStagedUpdateRun, "placements": fleet.KindClusterResourcePlacement,
			"bindings": fleet.KindClusterResourceBinding}[strings.Split(p, "/")[1]]
		if ref.Kind != kind || (strings.Contains(p, ".clusters/") != (ref.Part != "")) {
			t.Errorf("README names %s, which gitfleet reads as %+v", p, ref)
		}
		checked++
	}
	if checked < 10 {
		t.Errorf("checked %d example paths of the README, want the whole layout", checked)
	}
}

// A new run's layout moves the bindings of its placement only, whether the
// store wrote them or read them at start, and not those it deleted since.
func TestANewLayoutMovesTheBindingsOfItsPlacementOnly(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	s, _ := newStore(r)
	s.Interval = 0
	other := binding("", "member-00000")
	other.Name, other.Labels = "other-member-00000", map[string]string{fleet.PlacementTrackingLabel: "other"}
	objs := withKind([]runtime.Object{binding("", "member-00000"), binding("", "member-00001"), binding("", "member-00002"), other})
	for _, o := range objs {
		s.Put(refOfObj(o), o)
	}
	if err := s.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	s = NewTreeStore(r, r, clock.NewFake(t0))
	s.Interval = 0
	if _, err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	s.Delete(refOfObj(objs[2]))
	run := withKind([]runtime.Object{stagedRun(80)})[0]
	s.Put(refOfObj(run), run)
	if err := s.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	got := files(t, filepath.Join(string(r.Dir), StatusDir, bindingsDir))
	want := []string{"example-placement/stage=stage-0/member-00000.yaml", "example-placement/stage=stage-1/member-00001.yaml", "other/member-00000.yaml"}
	if !slices.Equal(got, want) {
		t.Errorf("bindings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
