package placement

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// resourceSnapshots are a placement's resource snapshots.
type resourceSnapshots []*fleet.ResourceSnapshot

// latestIndex is the index of the latest snapshot group, "" when none.
func (rs resourceSnapshots) latestIndex() string {
	for _, s := range rs {
		if s.Labels[fleet.IsLatestSnapshotLabel] == "true" {
			return s.Labels[fleet.ResourceIndexLabel]
		}
	}
	return ""
}

// indexOf is the index of the named master snapshot, "" when the name is
// empty or the snapshot is gone (pruned by the revision history limit).
func (rs resourceSnapshots) indexOf(name string) string {
	if name == "" {
		return ""
	}
	for _, s := range rs {
		if s.Name == name {
			return s.Labels[fleet.ResourceIndexLabel]
		}
	}
	return ""
}

// identifiers names the resources of the snapshot group at index, master
// first, then sub-snapshots by subindex.
func (rs resourceSnapshots) identifiers(index string) ([]fleet.ResourceIdentifier, error) {
	if index == "" {
		return nil, nil
	}
	var group []*fleet.ResourceSnapshot
	for _, s := range rs {
		if s.Labels[fleet.ResourceIndexLabel] == index {
			group = append(group, s)
		}
	}
	sort.SliceStable(group, func(i, j int) bool { return subindex(group[i]) < subindex(group[j]) })
	var out []fleet.ResourceIdentifier
	for _, s := range group {
		for i, raw := range s.Spec.SelectedResources {
			data := raw.Raw
			if raw.Object != nil {
				var err error
				if data, err = json.Marshal(raw.Object); err != nil {
					return nil, fmt.Errorf("resource snapshot %s: resource %d: %w", s.Name, i, err)
				}
			}
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(data); err != nil {
				return nil, fmt.Errorf("resource snapshot %s: resource %d: %w", s.Name, i, err)
			}
			gvk := u.GroupVersionKind()
			out = append(out, fleet.ResourceIdentifier{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind,
				Name: u.GetName(), Namespace: u.GetNamespace()})
		}
	}
	return out, nil
}

// subindex orders a group: the master (no subindex) first.
func subindex(s *fleet.ResourceSnapshot) int {
	v, ok := s.Annotations[fleet.SubindexOfResourceSnapshotAnnotation]
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return -1
	}
	return n
}
