package hubtest

import (
	"fmt"
	"slices"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/overridesnapshot"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
	"github.com/gitfleet/gitfleet/reconciler/snapshothistory"
)

// snapshotsInUseOutliveTheHistoryLimit: more commits than the history
// limits while a run and a binding use old snapshots delete only unused
// ones; once the run has finished and the binding moved on, the next
// commit lets them go. Resource snapshots on a revisionHistoryLimit of 2,
// override snapshots (on a hub that keeps them) on their fixed 10.
func (s *suite) snapshotsInUseOutliveTheHistoryLimit() {
	p := s.placement("app")
	limit := int32(2)
	p.Spec.RevisionHistoryLimit = &limit
	s.s.Apply(s.t, p)
	oh, overrides := s.h.(hub.OverrideSnapshots)
	commit := func(i int) {
		s.t.Helper()
		cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "app", "namespace": "default"}, "data": map[string]any{"commit": strconv.Itoa(i)}}}
		if _, _, err := resourcesnapshot.Ensure(s.ctx, s.h, p, []*unstructured.Unstructured{cm}, fmt.Sprint("c", i)); err != nil {
			s.t.Fatal(err)
		}
		if !overrides {
			return
		}
		var cros []*fleet.ClusterResourceOverride
		var ros []*fleet.ResourceOverride
		switch o := s.override("env", strconv.Itoa(i)).(type) {
		case *fleet.ClusterResourceOverride:
			cros = append(cros, o)
		case *fleet.ResourceOverride:
			ros = append(ros, o)
		}
		if _, err := overridesnapshot.Record(s.ctx, oh, snapshothistory.Of(s.ctx, s.h), cros, ros, nil, fmt.Sprint("c", i)); err != nil {
			s.t.Fatal(err)
		}
	}
	// uses names override snapshot env-<i> as a run or a binding does.
	uses := func(i int) ([]string, []fleet.NamespacedName) {
		name := fmt.Sprintf(fleet.OverrideSnapshotNameFmt, "env", i)
		if s.ns == "" {
			return []string{name}, nil
		}
		return nil, []fleet.NamespacedName{{Namespace: s.ns, Name: name}}
	}
	kept := func(wantResources, wantOverrides []int) {
		s.t.Helper()
		rs, err := s.h.ListResourceSnapshots(s.ctx, s.key("app"))
		s.must(err)
		var got, want []string
		for _, r := range rs {
			got = append(got, r.Name)
		}
		for _, i := range wantResources {
			want = append(want, fmt.Sprintf(fleet.ResourceSnapshotNameFmt, "app", i))
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			s.t.Errorf("resource snapshots kept %v, want %v", got, want)
		}
		if !overrides {
			return
		}
		got, want = nil, nil
		if s.ns == "" {
			all, err := oh.ListClusterResourceOverrideSnapshots(s.ctx)
			s.must(err)
			for _, o := range all {
				got = append(got, o.Name)
			}
		} else {
			all, err := oh.ListResourceOverrideSnapshots(s.ctx)
			s.must(err)
			for _, o := range all {
				got = append(got, o.Name)
			}
		}
		for _, i := range wantOverrides {
			want = append(want, fmt.Sprintf(fleet.OverrideSnapshotNameFmt, "env", i))
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			s.t.Errorf("override snapshots kept %v, want %v", got, want)
		}
	}

	// A run rolls out resource snapshot 0 with override snapshot env-0
	// frozen for member-1.
	commit(0)
	s.s.Apply(s.t, s.run("run", "app"))
	run := s.getRun("run")
	run.Status.ResourceSnapshotIndexUsed = "0"
	cros, ros := uses(0)
	run.Status.StagesStatus = []fleet.StageUpdatingStatus{{StageName: "canary", Clusters: []fleet.ClusterUpdatingStatus{
		{ClusterName: "member-1", ClusterResourceOverrideSnapshots: cros, ResourceOverrideSnapshots: ros}}}}
	s.must(s.h.UpdateUpdateRunStatus(s.ctx, run))
	// member-2's binding carries resource snapshot 1 and env-1.
	commit(1)
	b := s.binding("app-member-2", "app", "member-2")
	s.must(s.h.CreateBinding(s.ctx, b))
	bind := func(i int) {
		b := s.getBinding("app-member-2")
		b.Spec.ResourceSnapshotName = fmt.Sprintf(fleet.ResourceSnapshotNameFmt, "app", i)
		b.Spec.ClusterResourceOverrideSnapshots, b.Spec.ResourceOverrideSnapshots = uses(i)
		s.must(s.h.UpdateBinding(s.ctx, b))
	}
	bind(1)

	for i := 2; i <= 13; i++ {
		commit(i)
	}
	kept([]int{0, 1, 12, 13}, []int{0, 1, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13})

	// The run succeeds and the binding moves on to 13: the next commit lets
	// 0 and 1 go, and 13, used, does not count against the limit.
	run = s.getRun("run")
	run.Status.Conditions = []metav1.Condition{condition(fleet.StagedUpdateRunConditionSucceeded, run.Generation)}
	s.must(s.h.UpdateUpdateRunStatus(s.ctx, run))
	// A list shows the status at once, as a get does (a hub that writes it
	// behind the caller too): the next commit must see the run finished.
	runs, err := s.h.ListUpdateRuns(s.ctx)
	s.must(err)
	if len(runs) != 1 || !snapshothistory.Finished(runs[0]) {
		s.t.Errorf("runs listed right after the run succeeded: %d, finished %v; want the run, finished", len(runs), len(runs) == 1 && snapshothistory.Finished(runs[0]))
	}
	bind(13)
	commit(14)
	kept([]int{12, 13, 14}, []int{4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14})
}
