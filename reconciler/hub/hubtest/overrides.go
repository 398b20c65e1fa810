package hubtest

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// overrideSnapshotsPutListDelete: a put creates the snapshot or replaces
// it (the latest label flipped), lists hold every snapshot of the kind
// with its spec, and a delete removes it.
func (s *suite) overrideSnapshotsPutListDelete() {
	oh, ok := s.h.(hub.OverrideSnapshots)
	if !ok {
		s.t.Skip("the hub keeps no override snapshots")
	}
	meta := func(index int, latest bool) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: fmt.Sprintf("override-%d", index), Namespace: s.ns, Labels: map[string]string{
			fleet.OverrideTrackingLabel: "override", fleet.OverrideIndexLabel: fmt.Sprint(index),
			fleet.IsLatestSnapshotLabel: fmt.Sprint(latest)}}
	}
	policy := &fleet.OverridePolicy{OverrideRules: []fleet.OverrideRule{{ClusterSelector: &fleet.ClusterSelector{ClusterSelectorTerms: []fleet.ClusterSelectorTerm{}},
		OverrideType: fleet.DeleteOverrideType}}}
	put := func(index int, latest bool) {
		var err error
		if s.ns == "" {
			err = oh.PutClusterResourceOverrideSnapshot(s.ctx, &fleet.ClusterResourceOverrideSnapshot{ObjectMeta: meta(index, latest),
				Spec: fleet.ClusterResourceOverrideSnapshotSpec{OverrideHash: []byte("h"), OverrideSpec: fleet.ClusterResourceOverrideSpec{
					ClusterResourceSelectors: []fleet.ResourceSelectorTerm{{Version: "v1", Kind: "Namespace", Name: "app"}}, Policy: policy}}})
		} else {
			err = oh.PutResourceOverrideSnapshot(s.ctx, &fleet.ResourceOverrideSnapshot{ObjectMeta: meta(index, latest),
				Spec: fleet.ResourceOverrideSnapshotSpec{OverrideHash: []byte("h"), OverrideSpec: fleet.ResourceOverrideSpec{
					ResourceSelectors: []fleet.ResourceSelector{{Version: "v1", Kind: "ConfigMap", Name: "app"}}, Policy: policy}}})
		}
		s.must(err)
	}
	// listed is name=latest of every snapshot, each checked for its spec.
	listed := func() []string {
		var out []string
		if s.ns == "" {
			all, err := oh.ListClusterResourceOverrideSnapshots(s.ctx)
			s.must(err)
			for _, o := range all {
				if o.Spec.OverrideSpec.Policy == nil || len(o.Spec.OverrideSpec.ClusterResourceSelectors) != 1 {
					s.t.Errorf("%s lost its spec: %+v", o.Name, o.Spec)
				}
				out = append(out, o.Name+"="+o.Labels[fleet.IsLatestSnapshotLabel])
			}
		} else {
			all, err := oh.ListResourceOverrideSnapshots(s.ctx)
			s.must(err)
			for _, o := range all {
				if o.Spec.OverrideSpec.Policy == nil || len(o.Spec.OverrideSpec.ResourceSelectors) != 1 {
					s.t.Errorf("%s lost its spec: %+v", o.Name, o.Spec)
				}
				out = append(out, o.Namespace+"/"+o.Name+"="+o.Labels[fleet.IsLatestSnapshotLabel])
			}
		}
		return out
	}
	prefix := ""
	if s.ns != "" {
		prefix = s.ns + "/"
	}
	want := func(names ...string) {
		s.t.Helper()
		for i := range names {
			names[i] = prefix + names[i]
		}
		if got := listed(); !slices.Equal(got, names) {
			s.t.Errorf("listed %v, want %v", got, names)
		}
	}
	put(0, true)
	want("override-0=true")
	put(0, false)
	put(1, true)
	want("override-0=false", "override-1=true")
	if s.ns == "" {
		s.must(oh.DeleteClusterResourceOverrideSnapshot(s.ctx, s.key("override-0")))
		if err := oh.DeleteClusterResourceOverrideSnapshot(s.ctx, s.key("override-0")); !hub.IsNotFound(err) {
			s.t.Errorf("deleting a deleted snapshot: %v, want NotFound", err)
		}
	} else {
		s.must(oh.DeleteResourceOverrideSnapshot(s.ctx, s.key("override-0")))
		if err := oh.DeleteResourceOverrideSnapshot(s.ctx, s.key("override-0")); !hub.IsNotFound(err) {
			s.t.Errorf("deleting a deleted snapshot: %v, want NotFound", err)
		}
	}
	want("override-1=true")
}
