package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/gittest"
)

// TestDescribeEventsFollowAnObjectAcrossLayouts: a large run's status moves
// into part files and its bindings into stage folders; describe's Events
// still list the commits that changed those files, and not the commits of
// a neighbour whose name shares a prefix.
func TestDescribeEventsFollowAnObjectAcrossLayouts(t *testing.T) {
	gittest.Require(t, "git")
	binding := &fleet.Binding{ObjectMeta: metav1.ObjectMeta{Name: "app-member1-x",
		Labels: map[string]string{fleet.PlacementTrackingLabel: "app"}},
		Spec: fleet.ResourceBindingSpec{TargetCluster: "member1"}}
	run := &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: "big-run"}}

	for _, tc := range []struct {
		name string
		obj  runtime.Object
		// commits: file changed → whether the object's Events list it.
		commits []struct {
			file   string
			listed bool
		}
	}{
		{"a binding in the flat folder, then in a stage folder, then in a folder of ten", binding, []struct {
			file   string
			listed bool
		}{
			{"status/bindings/app/member1.yaml", true},
			{"status/bindings/app/stage=canary/member1.yaml", true},
			{"status/bindings/app/stage=prod/10/member1.yaml", true},
			{"status/bindings/app/stage=prod/10/member10.yaml", false},
			{"status/bindings/other/stage=prod/member1.yaml", false},
		}},
		{"a split run's own file and its parts", run, []struct {
			file   string
			listed bool
		}{
			{"status/runs/big-run.yaml", true},
			{"status/runs/big-run.clusters/prod/0.yaml", true},
			{"status/runs/big-run-2.clusters/prod/0.yaml", false},
			{"status/runs/big-run-2.yaml", false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := t.TempDir()
			gittest.Must(t, repo, "init", "-q")
			want := map[string]bool{}
			for _, c := range tc.commits {
				p := filepath.Join(repo, c.file)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte("x: "+c.file+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				gittest.Must(t, repo, "add", "-A")
				gittest.Must(t, repo, "commit", "-q", "-m", c.file)
				want[c.file] = c.listed
			}
			events, err := objectEvents(context.Background(), repo, tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, e := range events {
				got[e.Message] = true
			}
			for file, listed := range want {
				if got[file] != listed {
					t.Errorf("commit changing %s listed = %v; want %v (events %v)", file, got[file], listed, events)
				}
			}
		})
	}
}
