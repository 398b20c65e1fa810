package updaterun

import (
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
)

func configMap(name, data string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": "app"}, "data": map[string]any{"key": data}}}
}

// TestSnapshotInUseOutlivesTheHistoryLimit: more changes than
// revisionHistoryLimit while a stopped run holds snapshot 0 delete the
// unused snapshots only; 0 stays, with the ten newest besides it, and the
// run resumes on it.
func TestSnapshotInUseOutlivesTheHistoryLimit(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			e := newEnv(t, f.ns).fixture().create()
			e.ok()
			if got := e.get().Status.ResourceSnapshotIndexUsed; got != "0" {
				t.Fatalf("run initialized on snapshot %q, want 0", got)
			}
			e.setState(fleet.StateStop)
			e.ok()
			p, _ := e.h.GetPlacement(e.ctx, e.pkey())
			for i := 1; i <= fleet.DefaultRevisionHistoryLimit+2; i++ {
				if _, created, err := resourcesnapshot.Ensure(e.ctx, e.h, p, []*unstructured.Unstructured{configMap("a", fmt.Sprint(i))}, ""); err != nil || !created {
					t.Fatalf("change %d: created %v err %v", i, created, err)
				}
			}
			want := []string{placementName + "-0-snapshot=false"}
			for i := 3; i <= 12; i++ {
				want = append(want, fmt.Sprintf("%s-%d-snapshot=%v", placementName, i, i == 12))
			}
			slices.Sort(want)
			if got := snapshotNames(e); !slices.Equal(got, want) {
				t.Errorf("snapshots kept %v, want %v", got, want)
			}
			e.setState(fleet.StateRun)
			e.ok()
			if r := e.get(); r.Status.ResourceSnapshotIndexUsed != "0" || meta.IsStatusConditionFalse(r.Status.Conditions, fleet.StagedUpdateRunConditionSucceeded) {
				t.Errorf("resumed run: snapshot %q, conditions %v", r.Status.ResourceSnapshotIndexUsed, r.Status.Conditions)
			}
		})
	}
}
