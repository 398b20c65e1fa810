package gitops_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/status"
)

// TestAFinishedRunBeyondTheLastPackedReadsFromGitAsItFinished: split runs
// finish one after the other until the oldest keep their husk only
// (embedded.FinishedRunsPacked), and every run still reads as it read
// when it finished: its clusters come back from the status branch; after
// a restart with only the remote, their status is the same again.
func TestAFinishedRunBeyondTheLastPackedReadsFromGitAsItFinished(t *testing.T) {
	ctx := context.Background()
	r := newFleetRepo(t, stagedFleetStages(status.SplitThreshold+2, 2, `"50%"`))
	d := startDaemon(t, "file://"+r.remote, t.TempDir(), 0)
	runs := embedded.FinishedRunsPacked + 2
	want := map[string]*fleet.UpdateRun{}
	for i := range runs {
		name := fmt.Sprintf("run-%d", i)
		r.commit(name, map[string][]byte{name + ".yaml": runFile(name)})
		d.poke()
		eventually(t, name+" to succeed", func() bool {
			run, err := d.Hub.GetUpdateRun(ctx, hub.Key{Name: name})
			return err == nil && run.Phase() == fleet.PhaseSucceeded
		})
		waitFlushed(t, d)
		run, err := d.Hub.GetUpdateRun(ctx, hub.Key{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		want[name] = run
	}
	if got := d.Hub.(*embedded.Hub).RunsReadBack(); got != runs-embedded.FinishedRunsPacked {
		t.Fatalf("%d finished runs read back from Git; want %d", got, runs-embedded.FinishedRunsPacked)
	}
	check := func(how string, same func(got, want *fleet.UpdateRun) bool) {
		t.Helper()
		list, err := d.Hub.ListUpdateRuns(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != runs {
			t.Fatalf("%s: listed %d runs; want %d", how, len(list), runs)
		}
		for _, got := range list {
			if !same(got, want[got.Name]) {
				t.Errorf("%s: %s differs from the run as it finished:\n got %#v\nwant %#v", how, got.Name, got.Status, want[got.Name].Status)
			}
			one, err := d.Hub.GetUpdateRun(ctx, hub.Key{Name: got.Name})
			if err != nil {
				t.Fatal(err)
			}
			if !same(one, want[got.Name]) {
				t.Errorf("%s: GetUpdateRun %s differs from the run as it finished", how, got.Name)
			}
		}
	}
	check("the hub that ran them", func(got, want *fleet.UpdateRun) bool { return reflect.DeepEqual(got, want) })
	d.stop(t)

	d = startDaemon(t, "file://"+r.remote, t.TempDir(), 0)
	defer d.stop(t)
	if got := d.Hub.(*embedded.Hub).RunsReadBack(); got != runs-embedded.FinishedRunsPacked {
		t.Errorf("restarted: %d finished runs read back from Git; want %d", got, runs-embedded.FinishedRunsPacked)
	}
	// A restarted hub reads every run from the status tree, whose times
	// come in Local: the same instants.
	check("restarted with only the remote", func(got, want *fleet.UpdateRun) bool {
		return equality.Semantic.DeepEqual(got.Status, want.Status)
	})
}
