package member

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// lastReport keeps the last report of each binding.
type lastReport struct {
	mu    sync.Mutex
	conds map[hub.Key][]metav1.Condition
}

func (r *lastReport) ReportBindingStatus(key hub.Key, _ int64, conds []metav1.Condition, _ Placements) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conds == nil {
		r.conds = map[hub.Key][]metav1.Condition{}
	}
	r.conds[key] = conds
	return nil
}

func (r *lastReport) cond(key hub.Key, typ string) *metav1.Condition {
	r.mu.Lock()
	defer r.mu.Unlock()
	return meta.FindStatusCondition(r.conds[key], typ)
}

func cm(name string, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": "app"}}}
	u.SetAnnotations(annotations)
	return u
}

func TestASimulatedMemberKeepsWhatIsAnnotatedPruneDisabled(t *testing.T) {
	rep := &lastReport{}
	ds := NewDrivers(clock.NewFake(t0()), rep, nil)
	m := &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "member1",
		Annotations: map[string]string{fleet.DriverAnnotation: fleet.DriverSimulated}}}
	sim := ds.For(m).(*Simulated)
	disabled := map[string]string{fleet.PruneAnnotation: fleet.PruneDisabled}
	flux := map[string]string{fleet.FluxPruneAnnotation: fleet.PruneDisabled}
	deliver := func(gen int64, resources ...*unstructured.Unstructured) Delivery {
		t.Helper()
		b := &fleet.Binding{ObjectMeta: metav1.ObjectMeta{Name: "app-member1", Generation: gen,
			Labels: map[string]string{fleet.PlacementTrackingLabel: "app"}},
			Spec: fleet.ResourceBindingSpec{TargetCluster: "member1", ResourceSnapshotName: fmt.Sprintf("app-%d-snapshot", gen)}}
		d := Delivery{Binding: b, Member: m, Resources: resources}
		if err := sim.Deliver(context.Background(), d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	left := func() string {
		var names []string
		for _, l := range sim.Left() {
			names = append(names, l.Placement.Name+":"+l.Resource.GetName())
		}
		return fmt.Sprint(names)
	}

	// The annotation that counts is the one of the version delivered last;
	// a label says the same, as Flux's exclusions match either.
	labelled := cm("labelled", nil)
	labelled.SetLabels(disabled)
	deliver(1, cm("kept", disabled), cm("flux", flux), cm("annotated-later", nil), cm("unannotated-later", disabled), cm("plain", nil), labelled)
	deliver(2, cm("kept", disabled), cm("flux", flux), cm("annotated-later", disabled), cm("unannotated-later", nil), cm("plain", nil), labelled)
	d := deliver(3)
	if got := left(); got != "[app:annotated-later app:flux app:kept app:labelled]" {
		t.Errorf("left on the member = %s, want [app:annotated-later app:flux app:kept app:labelled]", got)
	}
	want := "4 resources left the resource snapshot but stay on the member cluster, annotated gitfleet.io/prune: disabled: " +
		"ConfigMap app/annotated-later, ConfigMap app/flux, ConfigMap app/kept, ConfigMap app/labelled"
	if c := rep.cond(d.Key(), fleet.ResourceBindingPruneSkipped); c == nil || c.Status != metav1.ConditionTrue ||
		c.Reason != PruneDisabledReason || c.Message != want || c.ObservedGeneration != 3 {
		t.Errorf("PruneSkipped = %+v, want True, PruneDisabled, %q at generation 3", c, want)
	}

	// Back in the snapshot, an object is the placement's again.
	d = deliver(4, cm("kept", nil))
	if got := left(); got != "[app:annotated-later app:flux app:labelled]" {
		t.Errorf("left on the member = %s, want [app:annotated-later app:flux app:labelled]", got)
	}
	// A removal (the cluster leaves the placement) keeps what asks to stay.
	must(t, sim.Remove(context.Background(), deliver(5, cm("kept", disabled), cm("gone", nil))))
	if got := left(); got != "[app:annotated-later app:flux app:kept app:labelled]" {
		t.Errorf("left after the removal = %s, want [app:annotated-later app:flux app:kept app:labelled]", got)
	}
	if len(sim.Placed()) != 0 {
		t.Errorf("the member still holds the removed binding: %+v", sim.Placed())
	}

	// Nothing left: no condition.
	sim2 := ds.For(&fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "member2",
		Annotations: map[string]string{fleet.DriverAnnotation: fleet.DriverSimulated}}}).(*Simulated)
	b := &fleet.Binding{ObjectMeta: metav1.ObjectMeta{Name: "app-member2", Generation: 1,
		Labels: map[string]string{fleet.PlacementTrackingLabel: "app"}}}
	must(t, sim2.Deliver(context.Background(), Delivery{Binding: b, Member: m, Resources: []*unstructured.Unstructured{cm("plain", nil)}}))
	if c := rep.cond(hub.Key{Name: "app-member2"}, fleet.ResourceBindingPruneSkipped); c != nil {
		t.Errorf("PruneSkipped = %+v with nothing left", c)
	}
}

func TestPruneSkippedNamesAtMostTwentyObjects(t *testing.T) {
	var left []fleet.ResourceIdentifier
	for i := range 25 {
		left = append(left, fleet.ResourceIdentifier{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "app", Name: fmt.Sprintf("web-%02d", i)})
	}
	c, ok := PruneSkipped(1, left)
	if !ok {
		t.Fatal("no PruneSkipped for 25 objects left")
	}
	wantStart := "25 resources left the resource snapshot but stay on the member cluster, annotated gitfleet.io/prune: disabled: Deployment.apps app/web-00, "
	wantEnd := "Deployment.apps app/web-19 and 5 more"
	if len(c.Message) < len(wantStart) || c.Message[:len(wantStart)] != wantStart || c.Message[len(c.Message)-len(wantEnd):] != wantEnd {
		t.Errorf("message = %q, want it to start %q and end %q", c.Message, wantStart, wantEnd)
	}
}

// The binding of a member that pulls joins its Works' PruneSkipped into
// the one condition the push transport reports from its one record of the
// same objects, also past the twenty it names.
func TestJoinPruneSkippedIsWhatOneRecordOfEverythingReports(t *testing.T) {
	ids := func(from, to int) []fleet.ResourceIdentifier {
		var out []fleet.ResourceIdentifier
		for i := from; i < to; i++ {
			out = append(out, fleet.ResourceIdentifier{Version: "v1", Kind: "ConfigMap", Namespace: "app", Name: fmt.Sprintf("cm-%02d", i)})
		}
		return out
	}
	of := func(gen int64, left []fleet.ResourceIdentifier) metav1.Condition {
		c, ok := PruneSkipped(gen, left)
		if !ok {
			t.Fatalf("no PruneSkipped for %v", left)
		}
		return c
	}
	for _, tc := range []struct {
		name  string
		works [][]fleet.ResourceIdentifier
	}{
		{"one work", [][]fleet.ResourceIdentifier{ids(0, 3)}},
		{"two works, interleaved names", [][]fleet.ResourceIdentifier{{ids(0, 4)[0], ids(0, 4)[2]}, {ids(0, 4)[1], ids(0, 4)[3]}}},
		{"past twenty over two works", [][]fleet.ResourceIdentifier{ids(0, 13), ids(13, 25)}},
		{"past twenty in each", [][]fleet.ResourceIdentifier{ids(0, 22), ids(22, 50)}},
		{"one left by both", [][]fleet.ResourceIdentifier{ids(0, 2), ids(1, 3)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var conds []metav1.Condition
			all := map[fleet.ResourceIdentifier]bool{}
			for i, w := range tc.works {
				conds = append(conds, of(int64(i+7), w)) // each at its Work's generation
				for _, id := range w {
					all[id] = true
				}
			}
			var union []fleet.ResourceIdentifier
			for id := range all {
				union = append(union, id)
			}
			got, ok := JoinPruneSkipped(3, conds)
			if want := of(3, union); !ok || got != want {
				t.Errorf("JoinPruneSkipped = %+v, %t\nwant %+v", got, ok, want)
			}
		})
	}
	if c, ok := JoinPruneSkipped(3, nil); ok {
		t.Errorf("JoinPruneSkipped of nothing = %+v", c)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
