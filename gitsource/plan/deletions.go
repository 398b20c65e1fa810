package plan

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
)

// deletions finds what the merge deletes from member clusters: for every
// run of the plan, the resources each of its clusters has now (by the
// index it has) that the snapshot the run rolls out lacks, and the
// clusters of its deletion stage; then the resources a new snapshot
// removes that no run of the plan rolls out, on the clusters that have
// them now (none: nothing to delete).
func deletions(ctx context.Context, h hub.Hub, start state, snaps []Snapshot, runs []Run) ([]Deletion, error) {
	groups := map[hub.Key]resourcesnapshot.Groups{}
	group := func(key hub.Key, index string) (map[resourcesnapshot.Resource][]byte, error) {
		gs, ok := groups[key]
		if !ok {
			all, err := h.ListResourceSnapshots(ctx, key)
			if err != nil {
				return nil, err
			}
			gs = resourcesnapshot.Of(all)
			groups[key] = gs
		}
		g, _ := gs.Find(index)
		return g.Resources()
	}
	var out []Deletion
	rolledOut := map[string]bool{} // placement + " " + index
	for _, r := range runs {
		key := hub.Key{Name: r.Placement}
		if ns, _, ok := strings.Cut(r.Name, "/"); ok {
			key.Namespace = ns
		}
		if len(r.Deleting) > 0 {
			out = append(out, Deletion{Placement: placementName(key), Run: r.Name, Clusters: r.Deleting})
		}
		if r.Snapshot == "" {
			continue
		}
		rolledOut[placementName(key)+" "+r.Snapshot] = true
		want, err := group(key, r.Snapshot)
		if err != nil {
			return nil, err
		}
		byResource := map[string]*Deletion{}
		for _, st := range r.Stages {
			for _, c := range st.Clusters {
				have, err := group(key, indexOf(start.clusters[key], c))
				if err != nil {
					return nil, err
				}
				for res := range have {
					if _, kept := want[res]; kept {
						continue
					}
					name := resourceName(res)
					d := byResource[name]
					if d == nil {
						d = &Deletion{Placement: placementName(key), Resource: name, Snapshot: r.Snapshot, Run: r.Name}
						byResource[name] = d
					}
					d.Clusters = append(d.Clusters, c)
				}
			}
		}
		for _, d := range byResource {
			out = append(out, *d)
		}
	}
	for _, s := range snaps {
		if rolledOut[s.Placement+" "+s.Index] {
			continue
		}
		key := hub.Key{Name: s.Placement}
		if ns, name, ok := strings.Cut(s.Placement, "/"); ok {
			key = hub.Key{Namespace: ns, Name: name}
		}
		for _, c := range s.Changes {
			if c.Change != "Removed" {
				continue
			}
			d := Deletion{Placement: s.Placement, Resource: c.Resource, Snapshot: s.Index}
			for _, ci := range s.Clusters {
				have, err := group(key, ci.Index)
				if err != nil {
					return nil, err
				}
				for res := range have {
					if resourceName(res) == c.Resource {
						d.Clusters = append(d.Clusters, ci.Cluster)
					}
				}
			}
			if len(d.Clusters) > 0 { // else no member has it: nothing to delete
				out = append(out, d)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Placement != b.Placement {
			return a.Placement < b.Placement
		}
		if a.Resource != b.Resource {
			return a.Resource < b.Resource
		}
		return a.Run < b.Run
	})
	return out, nil
}

// indexOf is the index cluster has among cs ("" when it has none).
func indexOf(cs []ClusterIndex, cluster string) string {
	if i := slices.IndexFunc(cs, func(c ClusterIndex) bool { return c.Cluster == cluster }); i >= 0 {
		return cs[i].Index
	}
	return ""
}

// resourceName is "Kind namespace/name", as plan lists changes.
func resourceName(r resourcesnapshot.Resource) string {
	if r.Namespace != "" {
		return r.Kind + " " + r.Namespace + "/" + r.Name
	}
	return r.Kind + " " + r.Name
}

// String says the deletion in a line: "Deletes: ConfigMap
// test-namespace/test-cm from 3 clusters (member2, member3, member1) when
// run example-run reaches them".
func (d Deletion) String() string {
	what := d.Resource
	if what == "" {
		what = "every resource of placement " + d.Placement
	}
	where := fmt.Sprintf("from %d clusters (%s)", len(d.Clusters), strings.Join(d.Clusters, ", "))
	if len(d.Clusters) == 1 {
		where = fmt.Sprintf("from 1 cluster (%s)", d.Clusters[0])
	}
	var when string
	switch {
	case d.Resource == "":
		when = fmt.Sprintf("when run %s reaches its deletion stage (the clusters leave the placement)", d.Run)
	case d.Run != "" && len(d.Clusters) == 1:
		when = fmt.Sprintf("when run %s reaches it", d.Run)
	case d.Run != "":
		when = fmt.Sprintf("when run %s reaches them", d.Run)
	default:
		when = fmt.Sprintf("when a run of placement %s rolls out resource snapshot %s (no run in this change does)", d.Placement, d.Snapshot)
	}
	return "Deletes: " + what + " " + where + " " + when
}
