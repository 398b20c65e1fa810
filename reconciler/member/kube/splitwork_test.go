package kube

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/await"
)

// splitWork is Work name of placement's binding on member1 at gen,
// holding the ConfigMaps named in namespace (and the namespace itself
// when withNamespace), labelled as delivery labels the Works of one
// binding.
func splitWork(t *testing.T, placement, name string, gen int64, withNamespace bool, namespace string, configMaps []string) *fleet.Work {
	t.Helper()
	var docs []string
	if withNamespace {
		docs = append(docs, fmt.Sprintf("{apiVersion: v1, kind: Namespace, metadata: {name: %s}}", namespace))
	}
	for _, cm := range configMaps {
		docs = append(docs, fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: %s, namespace: %s}, data: {k: v}}", cm, namespace))
	}
	w := testWork(t, gen, docs...)
	w.Name = name
	w.Labels = map[string]string{fleet.ParentBindingLabel: placement + "-member1", fleet.PlacementTrackingLabel: placement}
	return w
}

// TestTheWorksOfABindingNeverPruneWhatAnotherOfThemHolds: a binding's
// Works (its main Work and an envelope's, as KubeFleet splits them) apply
// with the same owner labels, each recorded on its own. Objects move
// between them, and leave both, and each step is applied in both orders
// (the Work an object leaves first, or the one it moves to first), then
// applied again in the other order (a drift check): an object a Work's
// record holds, or another Work of the binding holds in its manifests on
// the hub (receiver first), is never deleted (its UID never changes); one
// neither holds nor claims is deleted. The envelope Work's removal (its
// Work deleted) spares what the main Work holds or claims too.
func TestTheWorksOfABindingNeverPruneWhatAnotherOfThemHolds(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	c, a := startWorkApplier(t)
	ctx := await.Context(t)

	// Each step is what the two Works hold; nil: the envelope Work is
	// deleted (removed from the member).
	type step struct{ main, envelope []string }
	steps := []step{
		{main: []string{"a", "b"}, envelope: []string{"c"}},
		{main: []string{"a"}, envelope: []string{"b", "c"}},   // b moves into the envelope
		{main: []string{"a", "c"}, envelope: []string{"b"}},   // c moves out of it
		{main: []string{"a", "b", "c"}, envelope: nil},        // the envelope goes, b back in the main Work
		{main: []string{"c"}, envelope: []string{"a"}},        // a new envelope takes a; b leaves both
		{main: []string{}, envelope: []string{"a", "c", "d"}}, // everything in the envelope
		{main: []string{"d"}, envelope: []string{}},           // a and c leave both, d moves
		{main: []string{}, envelope: nil},                     // nothing left
	}
	for _, envelopeFirst := range []bool{false, true} {
		name := "the-main-work-first"
		if envelopeFirst {
			name = "the-envelope-work-first"
		}
		t.Run(name, func(t *testing.T) {
			placement, ns := "web-"+name, name
			mainName, envName := placement+"-work", placement+"-work-envelope-0123456789abcdef"
			held := map[string][]string{} // by Work: what its last apply holds
			uids := map[string]types.UID{}
			var gen int64
			// check: what a Work holds is there, with the UID it had
			// while some Work held or claimed it all along; what none
			// holds nor claims (s: what the hub holds) is gone.
			check := func(what string, s step) {
				t.Helper()
				for _, cm := range []string{"a", "b", "c", "d"} {
					u := c.Get("v1", "ConfigMap", ns, cm)
					isHeld := slices.Contains(held[mainName], cm) || slices.Contains(held[envName], cm)
					wanted := isHeld || slices.Contains(s.main, cm) || slices.Contains(s.envelope, cm)
					switch {
					case !wanted && u != nil:
						t.Errorf("%s: ConfigMap %s, which no Work holds, is still on the member", what, cm)
						delete(uids, cm)
					case !wanted:
						delete(uids, cm)
					case u == nil && (isHeld || uids[cm] != ""):
						t.Fatalf("%s: ConfigMap %s, held or claimed by a Work, is gone from the member", what, cm)
					case u == nil:
						// Claimed by a Work not applied yet.
					case uids[cm] != "" && u.GetUID() != uids[cm]:
						t.Fatalf("%s: ConfigMap %s, held or claimed by a Work all along, was deleted and made again", what, cm)
					default:
						uids[cm] = u.GetUID()
					}
				}
			}
			apply := func(work string, s step) {
				t.Helper()
				gen++
				mainWork := splitWork(t, placement, mainName, gen, true, ns, s.main)
				var envWork *fleet.Work
				if s.envelope != nil {
					envWork = splitWork(t, placement, envName, gen, false, ns, s.envelope)
				}
				if work == mainName {
					var others []*fleet.Work
					if envWork != nil {
						others = append(others, envWork)
					}
					if _, err := a.Apply(ctx, mainWork, others, time.Now()); err != nil {
						t.Fatal(err)
					}
					held[mainName] = s.main
					check(fmt.Sprintf("main Work %v applied", s.main), s)
					return
				}
				if envWork == nil {
					if err := a.Remove(ctx, splitWork(t, placement, envName, gen, false, ns, nil), []*fleet.Work{mainWork}); err != nil {
						t.Fatal(err)
					}
					delete(held, envName)
					check("envelope Work removed", s)
					return
				}
				if _, err := a.Apply(ctx, envWork, []*fleet.Work{mainWork}, time.Now()); err != nil {
					t.Fatal(err)
				}
				held[envName] = s.envelope
				check(fmt.Sprintf("envelope Work %v applied", s.envelope), s)
			}
			// The namespace comes with the main Work: it goes first once.
			apply(mainName, steps[0])
			apply(envName, steps[0])
			for _, s := range steps[1:] {
				order := []string{mainName, envName}
				if envelopeFirst {
					order = []string{envName, mainName}
				}
				for _, w := range order {
					apply(w, s)
				}
				slices.Reverse(order)
				for _, w := range order {
					apply(w, s)
				}
			}
			var left []string
			for _, cm := range []string{"a", "b", "c", "d"} {
				if c.Get("v1", "ConfigMap", ns, cm) != nil {
					left = append(left, cm)
				}
			}
			sort.Strings(left)
			if len(left) > 0 {
				t.Errorf("ConfigMaps %v are still on the member, held by no Work", left)
			}
			if c.Get("v1", "ConfigMap", InventoryNamespace, envName) != nil {
				t.Error("the removed envelope Work's record is still on the member")
			}
			rec := c.Get("v1", "ConfigMap", InventoryNamespace, mainName)
			if rec == nil || rec.GetLabels()[RecordPlacementLabel] != placement {
				t.Errorf("the main Work's record is not labelled with its placement: %v", rec)
			}
		})
	}
}

// TestARecordWithoutItsPlacementIsLabelledOnItsNextPass: a record written
// before records carried their placement (an older gitfleet) gets its
// labels on the next pass of its Work, also one that applies nothing, and
// from then on another Work's prune spares what it holds.
func TestARecordWithoutItsPlacementIsLabelledOnItsNextPass(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	c, a := startWorkApplier(t)
	ctx := await.Context(t)
	const placement, ns = "web", "web"
	mainName, envName := placement+"-work", placement+"-work-envelope-0123456789abcdef"
	apply := func(w *fleet.Work) {
		t.Helper()
		if _, err := a.Apply(ctx, w, nil, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	apply(splitWork(t, placement, mainName, 1, true, ns, []string{"a", "b"}))
	apply(splitWork(t, placement, envName, 1, false, ns, []string{"b"}))
	uid := c.Get("v1", "ConfigMap", ns, "b").GetUID()

	// As an older gitfleet wrote it: no placement labels.
	rec := c.Get("v1", "ConfigMap", InventoryNamespace, envName)
	labels := rec.GetLabels()
	delete(labels, RecordPlacementLabel)
	rec.SetLabels(labels)
	if err := c.Client().Update(ctx, rec); err != nil {
		t.Fatal(err)
	}
	apply(splitWork(t, placement, envName, 1, false, ns, []string{"b"}))
	if got := c.Get("v1", "ConfigMap", InventoryNamespace, envName).GetLabels()[RecordPlacementLabel]; got != placement {
		t.Fatalf("the record's %s = %q after its Work's next pass, want %q", RecordPlacementLabel, got, placement)
	}

	apply(splitWork(t, placement, mainName, 2, true, ns, []string{"a"}))
	if u := c.Get("v1", "ConfigMap", ns, "b"); u == nil || u.GetUID() != uid {
		t.Errorf("ConfigMap b, which the envelope Work holds, was deleted by the main Work's prune: %v", u)
	}
}
