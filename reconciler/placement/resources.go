package placement

import (
	"strconv"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
)

// resourceSnapshots are a placement's resource snapshots, as listed and by
// group.
type resourceSnapshots struct {
	list   []*fleet.ResourceSnapshot
	groups resourcesnapshot.Groups
}

func newResourceSnapshots(list []*fleet.ResourceSnapshot) resourceSnapshots {
	return resourceSnapshots{list: list, groups: resourcesnapshot.Of(list)}
}

// latestIndex is the index of the latest snapshot group, "" when none.
func (rs resourceSnapshots) latestIndex() string {
	if g, ok := rs.groups.Latest(); ok {
		return strconv.Itoa(g.Index)
	}
	return ""
}

// indexOf is the index of the named master snapshot, "" when the name is
// empty or the snapshot is gone (pruned by the revision history limit).
func (rs resourceSnapshots) indexOf(name string) string {
	if g, ok := rs.groups.Named(name); ok {
		return strconv.Itoa(g.Index)
	}
	return ""
}

// identifiers names the resources of the snapshot group at index, master
// first, then sub-snapshots by subindex.
func (rs resourceSnapshots) identifiers(index string) ([]fleet.ResourceIdentifier, error) {
	if index == "" {
		return nil, nil
	}
	g, _ := rs.groups.Find(index)
	manifests, err := resourcesnapshot.Manifests(g.Snapshots())
	if err != nil {
		return nil, err
	}
	var out []fleet.ResourceIdentifier
	for _, u := range manifests {
		gvk := u.GroupVersionKind()
		out = append(out, fleet.ResourceIdentifier{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind,
			Name: u.GetName(), Namespace: u.GetNamespace()})
	}
	return out, nil
}
