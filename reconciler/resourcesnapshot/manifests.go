package resourcesnapshot

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// Manifests decodes the selected resources of snapshots (a group's
// Snapshots), in order; each is stored as JSON (Raw) or, when a client
// built the snapshot in memory, as an object.
func Manifests(snapshots []*fleet.ResourceSnapshot) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, s := range snapshots {
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
			out = append(out, u)
		}
	}
	return out, nil
}
