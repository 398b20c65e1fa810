package resourcesnapshot

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// snap builds a snapshot of placement "web": index is its resource-index
// label (none when ""), opts set the rest.
func snap(name, index string, opts ...func(*fleet.ResourceSnapshot)) *fleet.ResourceSnapshot {
	s := &fleet.ResourceSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{fleet.PlacementTrackingLabel: "web"}, Annotations: map[string]string{}}}
	if index != "" {
		s.Labels[fleet.ResourceIndexLabel] = index
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// master marks a master of a group of count snapshots.
func master(count int) func(*fleet.ResourceSnapshot) {
	return func(s *fleet.ResourceSnapshot) {
		s.Annotations[fleet.ResourceGroupHashAnnotation] = "h-" + s.Name
		s.Annotations[fleet.NumberOfResourceSnapshotsAnnotation] = fmt.Sprint(count)
	}
}

func sub(subindex string) func(*fleet.ResourceSnapshot) {
	return func(s *fleet.ResourceSnapshot) { s.Annotations[fleet.SubindexOfResourceSnapshotAnnotation] = subindex }
}

func latest(s *fleet.ResourceSnapshot) { s.Labels[fleet.IsLatestSnapshotLabel] = "true" }

func notLatest(s *fleet.ResourceSnapshot) { s.Labels[fleet.IsLatestSnapshotLabel] = "false" }

func hashOnly(s *fleet.ResourceSnapshot) {
	s.Annotations[fleet.ResourceGroupHashAnnotation] = "h-" + s.Name
}

func deleting(s *fleet.ResourceSnapshot) { s.DeletionTimestamp = &metav1.Time{} }

func names(snaps []*fleet.ResourceSnapshot) string {
	var out []string
	for _, s := range snaps {
		out = append(out, s.Name)
	}
	return strings.Join(out, ",")
}

// describe prints groups as "index: master=… subs=… all=… complete".
func describe(gs Groups) string {
	var out []string
	for _, g := range gs {
		m := "-"
		if g.Master != nil {
			m = g.Master.Name
		}
		out = append(out, fmt.Sprintf("%d: master=%s subs=%s all=%s complete=%v", g.Index, m, names(g.Subs), names(g.All), g.Complete()))
	}
	return strings.Join(out, "; ")
}

// TestGroups pins what a group is where the copies this package replaced
// disagreed (each case says how). The master is the snapshot with the
// resource-hash annotation and no subindex, as KubeFleet finds it.
func TestGroups(t *testing.T) {
	tests := []struct {
		name  string
		snaps []*fleet.ResourceSnapshot
		want  string
	}{
		{"a master and its sub-snapshots in any list order are master first, then by subindex",
			[]*fleet.ResourceSnapshot{snap("web-0-1", "0", sub("1")), snap("web-0-snapshot", "0", master(3)), snap("web-0-0", "0", sub("0"))},
			"0: master=web-0-snapshot subs=web-0-0,web-0-1 all=web-0-0,web-0-1,web-0-snapshot complete=true"},
		// The engine's recordOverrideSnapshots read a group in list order.
		{"subindexes order as numbers, not as text",
			[]*fleet.ResourceSnapshot{snap("web-0-snapshot", "0", master(12)), snap("web-0-10", "0", sub("10")), snap("web-0-9", "0", sub("9"))},
			"0: master=web-0-snapshot subs=web-0-9,web-0-10 all=web-0-10,web-0-9,web-0-snapshot complete=false"},
		// The approval pull request's and plan's diff listed the
		// sub-snapshots' resources, validate counted the index as recorded,
		// the engine said "no master".
		{"sub-snapshots without their master are a group without a master that holds nothing",
			[]*fleet.ResourceSnapshot{snap("web-0-0", "0", sub("0"))},
			"0: master=- subs=web-0-0 all=web-0-0 complete=false"},
		// Ensure counted snapshots (3 >= 3) and reused such a group.
		{"a gap in the subindexes leaves the group incomplete though the count matches",
			[]*fleet.ResourceSnapshot{snap("web-0-snapshot", "0", master(3)), snap("web-0-0", "0", sub("0")), snap("web-0-2", "0", sub("2"))},
			"0: master=web-0-snapshot subs=web-0-0,web-0-2 all=web-0-0,web-0-2,web-0-snapshot complete=false"},
		{"a sub-snapshot not created yet leaves the group incomplete",
			[]*fleet.ResourceSnapshot{snap("web-0-snapshot", "0", master(3)), snap("web-0-0", "0", sub("0"))},
			"0: master=web-0-snapshot subs=web-0-0 all=web-0-0,web-0-snapshot complete=false"},
		{"a master without a count needs its sub-snapshots numbered from 0 without a gap",
			[]*fleet.ResourceSnapshot{snap("web-0-snapshot", "0", hashOnly), snap("web-0-1", "0", sub("1")), snap("web-1-snapshot", "1", hashOnly), snap("web-1-0", "1", sub("0"))},
			"0: master=web-0-snapshot subs=web-0-1 all=web-0-1,web-0-snapshot complete=false; 1: master=web-1-snapshot subs=web-1-0 all=web-1-0,web-1-snapshot complete=true"},
		// The engine took the first with a hash in list order, the diff
		// and the placement status merged both, delivery the one named.
		{"of several masters for one index the first by name is the master",
			[]*fleet.ResourceSnapshot{snap("web-0-snapshot", "0", master(1)), snap("web-0-other", "0", master(1))},
			"0: master=web-0-other subs= all=web-0-other,web-0-snapshot complete=true"},
		// Delivery, the placement status and printers took any snapshot
		// without a subindex for the master, the engine (and KubeFleet)
		// only one with the hash.
		{"a snapshot with neither the hash nor a subindex is no master",
			[]*fleet.ResourceSnapshot{snap("web-0-snapshot", "0", latest)},
			"0: master=- subs= all=web-0-snapshot complete=false"},
		{"a sub-snapshot with the hash annotation is still a sub-snapshot",
			[]*fleet.ResourceSnapshot{snap("web-0-0", "0", sub("0"), hashOnly)},
			"0: master=- subs=web-0-0 all=web-0-0 complete=false"},
		// Delivery sorted it as subindex 0, the placement status beside the
		// master.
		{"a subindex that is no number makes a snapshot neither master nor sub-snapshot",
			[]*fleet.ResourceSnapshot{snap("web-0-snapshot", "0", master(2)), snap("web-0-x", "0", sub("x")), snap("web-0-n", "0", sub("-1"))},
			"0: master=web-0-snapshot subs= all=web-0-n,web-0-snapshot,web-0-x complete=false"},
		{"an empty subindex is no subindex, as KubeFleet reads it",
			[]*fleet.ResourceSnapshot{snap("web-0-snapshot", "0", master(1), sub(""))},
			"0: master=web-0-snapshot subs= all=web-0-snapshot complete=true"},
		{"of two sub-snapshots with one subindex the first by name is kept",
			[]*fleet.ResourceSnapshot{snap("web-0-snapshot", "0", master(2)), snap("web-0-0b", "0", sub("0")), snap("web-0-0a", "0", sub("0"))},
			"0: master=web-0-snapshot subs=web-0-0a all=web-0-0a,web-0-0b,web-0-snapshot complete=true"},
		// Ensure parsed the label as a number, every other copy compared it
		// as text with the run's index.
		{"an index label is read as a number",
			[]*fleet.ResourceSnapshot{snap("web-7-snapshot", "007", master(1))},
			"7: master=web-7-snapshot subs= all=web-7-snapshot complete=true"},
		{"a snapshot without an index, with a negative one or one that is no number is in no group",
			[]*fleet.ResourceSnapshot{snap("a", "", master(1)), snap("b", "-1", master(1)), snap("c", "x", master(1))},
			""},
		{"a snapshot being deleted counts until it is gone",
			[]*fleet.ResourceSnapshot{snap("web-0-snapshot", "0", master(1), deleting)},
			"0: master=web-0-snapshot subs= all=web-0-snapshot complete=true"},
		{"groups are ordered by index as numbers",
			[]*fleet.ResourceSnapshot{snap("web-10-snapshot", "10", master(1)), snap("web-9-snapshot", "9", master(1))},
			"9: master=web-9-snapshot subs= all=web-9-snapshot complete=true; 10: master=web-10-snapshot subs= all=web-10-snapshot complete=true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := describe(Of(tt.snaps)); got != tt.want {
				t.Errorf("groups\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestFindingAGroup pins which group Latest, Named, Find, Before and Next
// return.
func TestFindingAGroup(t *testing.T) {
	index := func(g Group, ok bool) string {
		if !ok {
			return "none"
		}
		return fmt.Sprint(g.Index)
	}
	history := Of([]*fleet.ResourceSnapshot{
		snap("web-0-snapshot", "0", master(1), notLatest),
		snap("web-2-snapshot", "2", master(2), latest), snap("web-2-0", "2", sub("0")),
		snap("web-5-0", "5", sub("0")), // a later index without its master
	})
	tests := []struct{ name, got, want string }{
		// The placement status took any snapshot labelled latest.
		{"the latest is the master labelled latest", index(history.Latest()), "2"},
		{"the latest of several labelled is the highest index", index(Of([]*fleet.ResourceSnapshot{
			snap("web-0-snapshot", "0", master(1), latest), snap("web-1-snapshot", "1", master(1), latest)}).Latest()), "1"},
		// validate's removed-resources warning took the highest index.
		{"no master labelled latest is no latest, whatever the indexes", index(Of([]*fleet.ResourceSnapshot{
			snap("web-0-snapshot", "0", master(1), notLatest), snap("web-1-snapshot", "1", latest)}).Latest()), "none"},
		{"a binding's snapshot is found by its master's name", index(history.Named("web-2-snapshot")), "2"},
		{"a sub-snapshot's name names no group", index(history.Named("web-2-0")), "none"},
		{"a pruned snapshot's name names no group", index(history.Named("web-1-snapshot")), "none"},
		{"no name names no group", index(history.Named("")), "none"},
		{"a run's index finds its group", index(history.Find("2")), "2"},
		{"an index with only sub-snapshots is a group", index(history.Find("5")), "5"},
		{"an index nothing has is no group", index(history.Find("1")), "none"},
		{"a run's index that is no number is no group", index(history.Find("latest")), "none"},
		{"before an index is the highest index below it", index(history.Before(5)), "2"},
		{"before an index that is gone too", index(history.Before(1)), "0"},
		{"before the first index is none", index(history.Before(0)), "none"},
		{"the last index may lack its master", index(history.Last()), "5"},
		{"the next index is one above the highest in use", fmt.Sprint(history.Next()), "6"},
		{"the first index is 0", fmt.Sprint(Of(nil).Next()), "0"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, tt.got, tt.want)
		}
	}
}

// TestAGroupsCommitAndResourcesAreItsMasters: a sub-snapshot never records
// the commit (the approval pull request took it from any snapshot of the
// index), and a group without its master holds nothing.
func TestAGroupsCommitAndResourcesAreItsMasters(t *testing.T) {
	res := func(names ...string) func(*fleet.ResourceSnapshot) {
		return func(s *fleet.ResourceSnapshot) {
			for _, n := range names {
				s.Spec.SelectedResources = append(s.Spec.SelectedResources, runtime.RawExtension{
					Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + n + `","namespace":"app"}}`)})
			}
		}
	}
	commit := func(c string) func(*fleet.ResourceSnapshot) {
		return func(s *fleet.ResourceSnapshot) { s.Annotations[fleet.CommitAnnotation] = c }
	}
	gs := Of([]*fleet.ResourceSnapshot{
		snap("web-0-snapshot", "0", master(2), commit("c0"), res("a")), snap("web-0-0", "0", sub("0"), commit("stray"), res("b")),
		snap("web-1-0", "1", sub("0"), commit("c1"), res("c")),
	})
	for _, tt := range []struct {
		index             int
		commit, resources string
	}{
		{0, "c0", "[{ConfigMap app a} {ConfigMap app b}]"},
		{1, "", "[]"},
	} {
		g, _ := gs.At(tt.index)
		have, err := g.Resources()
		if err != nil {
			t.Fatal(err)
		}
		var ids []Resource
		for _, c := range Diff(nil, have) {
			ids = append(ids, Resource{c.Kind, c.Namespace, c.Name})
		}
		if g.Commit() != tt.commit || fmt.Sprint(ids) != tt.resources {
			t.Errorf("group %d: commit %q resources %v, want %q %s", tt.index, g.Commit(), ids, tt.commit, tt.resources)
		}
	}
}
