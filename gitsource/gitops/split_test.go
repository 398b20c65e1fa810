package gitops_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource/gitops"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/status"
)

// A run and a placement too large for one file are stored split (and,
// with more than one stage, the placement's parts and bindings grouped by
// stage); a gitfleet restarted with only the remote assembles them,
// finishes the run, and what it holds is exactly what Git holds.
func TestRestartFromTheRemoteAssemblesSplitRunsAndPlacements(t *testing.T) {
	for _, tc := range []struct {
		name      string
		clusters  int
		stages    int
		groupedIn []string // folders that must exist in Git
	}{
		{"one stage", status.SplitThreshold + 10, 1, nil},
		{"two stages", 2*status.SplitThreshold + 2, 2, []string{
			"status/placements/app.clusters/prod0", "status/placements/app.clusters/prod1",
			"status/bindings/app/stage=prod0/00050", "status/bindings/app/stage=prod1/00000"}},
	} {
		t.Run(tc.name, func(t *testing.T) { testRestartAssemblesSplitObjects(t, tc.clusters, tc.stages, tc.groupedIn) })
	}
}

func testRestartAssemblesSplitObjects(t *testing.T, n, stages int, groupedIn []string) {
	ctx := context.Background()
	r := newFleetRepo(t, stagedFleetStages(n, stages, `"10%"`))
	d := startDaemon(t, "file://"+r.remote, t.TempDir(), 50*time.Millisecond)
	eventually(t, "the placement's bindings", func() bool {
		bs, err := d.Hub.ListBindings(ctx, hub.Key{Name: "app"})
		return err == nil && len(bs) == n && !d.Store.Pending()
	})
	r.commit("run", map[string][]byte{"run.yaml": runFile("run")})
	d.poke()
	eventually(t, "the first batch to start in Git", func() bool {
		run := r.run("run")
		return run != nil && firstClusterStarted(run)
	})
	d.stop(t)
	if main := r.file("status/runs/run.yaml"); !bytes.HasPrefix(main, []byte("# This file lists no clusters")) {
		t.Fatalf("a run of %d clusters is not split:\n%s", n, main)
	}
	for _, dir := range groupedIn {
		if r.git("ls-tree", "main", dir+"/") == "" {
			t.Errorf("no folder %s in Git:\n%s", dir, r.git("ls-tree", "-r", "--name-only", "main", "status/"))
		}
	}

	d2 := startDaemon(t, "file://"+r.remote, t.TempDir(), 50*time.Millisecond)
	run := r.waitPhase("run", fleet.PhaseSucceeded)
	waitFlushed(t, d2)
	clusters := 0
	for _, st := range run.Status.StagesStatus {
		for _, c := range st.Clusters {
			clusters++
			if !meta.IsStatusConditionTrue(c.Conditions, fleet.ClusterUpdatingConditionSucceeded) {
				t.Errorf("cluster %s did not succeed: %v", c.ClusterName, c.Conditions)
			}
		}
	}
	if clusters != n {
		t.Errorf("the run in Git lists %d clusters, want %d", clusters, n)
	}

	held, err := d2.Hub.GetUpdateRun(ctx, hub.Key{Name: "run"})
	if err != nil {
		t.Fatal(err)
	}
	sameInGit(t, held, run)
	placement, err := d2.Hub.GetPlacement(ctx, hub.Key{Name: "app"})
	if err != nil {
		t.Fatal(err)
	}
	objs, errs := status.ReadObjects(remoteFiles{r: r}, "status/placements")
	if len(errs) > 0 || len(objs) != 1 || len(objs[0].Files) < 2 {
		t.Fatalf("reading the split placement from Git: %d objects, errors %v", len(objs), errs)
	}
	sameInGit(t, placement, objs[0].Object)
	bindings, errs := status.ReadObjects(remoteFiles{r: r}, "status/bindings")
	if len(errs) > 0 || len(bindings) != n {
		t.Fatalf("reading the bindings from Git: %d objects, errors %v", len(bindings), errs)
	}
	for _, b := range bindings {
		held, err := d2.Hub.GetBinding(ctx, hub.Key{Name: b.Object.(*fleet.Binding).Name})
		if err != nil {
			t.Fatalf("%s: %v", b.Path, err)
		}
		sameInGit(t, held, b.Object)
	}
}

// sameInGit fails unless the hub's object and the one assembled from Git
// encode to the same bytes.
func sameInGit(t *testing.T, held, inGit runtime.Object) {
	t.Helper()
	a, err := status.Encode(held)
	if err != nil {
		t.Fatal(err)
	}
	b, err := status.Encode(inGit)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("the hub holds\n%s\nGit holds\n%s", a, b)
	}
}

// A run that ended long ago is forgotten by the status tree (its record is
// not kept in memory) and read back from Git when it changes: deleting its
// file still removes every file of its status, parts included, and the
// placement's bindings follow the newest run left.
func TestDeletingAForgottenEndedRunRemovesAllItsFiles(t *testing.T) {
	n := 2*status.SplitThreshold + 2
	r := newFleetRepo(t, stagedFleetStages(n, 2, `"50%"`))
	startDaemonWith(t, "file://"+r.remote, t.TempDir(), 50*time.Millisecond, func(c *gitops.Config) { c.EndedRunsKept = -1 })
	for _, name := range []string{"run-0", "run-1"} {
		r.commit(name, map[string][]byte{name + ".yaml": runFile(name)})
		eventually(t, name+" to succeed in Git", func() bool {
			run := r.run(name)
			return run != nil && run.Phase() == fleet.PhaseSucceeded
		})
	}
	if r.git("ls-tree", "-r", "--name-only", "main", "status/runs/run-0.clusters/") == "" {
		t.Fatal("run-0 is not split")
	}
	for _, name := range []string{"run-0", "run-1"} {
		r.commit("delete "+name, map[string][]byte{name + ".yaml": nil})
		eventually(t, "every status file of "+name+" to go", func() bool {
			return r.file("status/runs/"+name+".yaml") == nil &&
				r.git("ls-tree", "-r", "--name-only", "main", "status/runs/"+name+".clusters/") == ""
		})
	}
	if staged := r.git("ls-tree", "-r", "--name-only", "main", "status/bindings/app/"); strings.Contains(staged, "stage=") {
		t.Errorf("with no run left, bindings are still in stage folders:\n%s", staged)
	}
}
