package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// SnapshotSpec is the snapshot-ready form of selected resources: sorted
// (SortResources), stripped of server-set fields, each encoded as compact
// JSON with sorted keys. The input is not modified.
func SnapshotSpec(resources []*unstructured.Unstructured) (fleet.ResourceSnapshotSpec, error) {
	sorted := slices.Clone(resources)
	SortResources(sorted)
	spec := fleet.ResourceSnapshotSpec{SelectedResources: make([]runtime.RawExtension, 0, len(sorted))}
	for _, u := range sorted {
		raw, err := json.Marshal(sanitized(u))
		if err != nil {
			return fleet.ResourceSnapshotSpec{}, fmt.Errorf("encode %s: %w", refOf(u), err)
		}
		spec.SelectedResources = append(spec.SelectedResources, runtime.RawExtension{Raw: raw})
	}
	return spec, nil
}

// Hash is the resource hash of a snapshot (annotation
// kubernetes-fleet.io/resource-hash): the hex SHA-256 of the JSON of
// SnapshotSpec(resources), as KubeFleet hashes the snapshot spec. The same
// resources in any order give the same hash; any change of any field gives
// another. The snapshotter and the engine must both use this definition.
func Hash(resources []*unstructured.Unstructured) (string, error) {
	spec, err := SnapshotSpec(resources)
	if err != nil {
		return "", err
	}
	return HashSpec(spec)
}

// HashSpec hashes an already built snapshot spec.
func HashSpec(spec fleet.ResourceSnapshotSpec) (string, error) {
	data, err := json.Marshal(spec)
	if err != nil {
		return "", fmt.Errorf("encode snapshot spec: %w", err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}
