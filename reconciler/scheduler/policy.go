package scheduler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// snapshotPolicy is the policy a snapshot freezes: the placement's, without
// numberOfClusters, which lives in the number-of-clusters annotation so
// scaling a PickN placement keeps its snapshot (spec §1.6).
func snapshotPolicy(p *fleet.Placement) *fleet.PlacementPolicy {
	if p.Spec.Policy == nil {
		return nil
	}
	policy := p.Spec.Policy.DeepCopy()
	policy.NumberOfClusters = nil
	return policy
}

// policyHash is the hex sha-256 of the snapshot policy's JSON, as
// KubeFleet's resource.HashOf computes it.
func policyHash(policy *fleet.PlacementPolicy) ([]byte, error) {
	data, err := json.Marshal(policy)
	if err != nil {
		return nil, fmt.Errorf("hash the scheduling policy: %w", err)
	}
	sum := sha256.Sum256(data)
	return []byte(hex.EncodeToString(sum[:])), nil
}

// wantedCount is the number-of-clusters annotation value for a PickN
// placement, and false for the other policies.
func wantedCount(p *fleet.Placement) (string, bool) {
	if p.Spec.Policy == nil || p.Spec.Policy.PlacementType != fleet.PickNPlacementType {
		return "", false
	}
	n := int32(0)
	if p.Spec.Policy.NumberOfClusters != nil {
		n = *p.Spec.Policy.NumberOfClusters
	}
	return strconv.Itoa(int(n)), true
}

// latestPolicySnapshot makes the placement's latest policy snapshot match
// its policy: it is kept while the policy hash is unchanged (a PickN count
// change only rewrites the annotation); otherwise the old latest is flipped
// to is-latest-snapshot=false and the next index is created.
func (s *Scheduler) latestPolicySnapshot(ctx context.Context, p *fleet.Placement) (*fleet.PolicySnapshot, error) {
	key := hub.Key{Namespace: p.Namespace, Name: p.Name}
	all, err := s.Hub.ListPolicySnapshots(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("list the policy snapshots of %s: %w", key, err)
	}
	policy := snapshotPolicy(p)
	hash, err := policyHash(policy)
	if err != nil {
		return nil, err
	}
	count, isPickN := wantedCount(p)

	var latest *fleet.PolicySnapshot
	next := 0
	for _, snap := range all {
		if i, err := strconv.Atoi(snap.Labels[fleet.PolicyIndexLabel]); err == nil && i >= next {
			next = i + 1
		}
		if snap.Labels[fleet.IsLatestSnapshotLabel] != "true" {
			continue
		}
		if latest == nil && string(snap.Spec.PolicyHash) == string(hash) {
			latest = snap
			continue
		}
		// A different policy (or a second "latest"): no longer the latest.
		snap.Labels[fleet.IsLatestSnapshotLabel] = "false"
		if err := s.Hub.UpdatePolicySnapshot(ctx, snap); err != nil {
			return nil, fmt.Errorf("mark policy snapshot %s as not the latest: %w", snap.Name, err)
		}
	}

	if latest != nil {
		if isPickN && latest.Annotations[fleet.NumberOfClustersAnnotation] != count {
			if latest.Annotations == nil {
				latest.Annotations = map[string]string{}
			}
			latest.Annotations[fleet.NumberOfClustersAnnotation] = count
			if err := s.Hub.UpdatePolicySnapshot(ctx, latest); err != nil {
				return nil, fmt.Errorf("update the cluster count of policy snapshot %s: %w", latest.Name, err)
			}
			return s.reread(ctx, key, latest.Name)
		}
		return latest, nil
	}

	snap := &fleet.PolicySnapshot{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: p.Namespace,
			Name:      fmt.Sprintf(fleet.PolicySnapshotNameFmt, p.Name, next),
			Labels: map[string]string{
				fleet.PlacementTrackingLabel: p.Name,
				fleet.IsLatestSnapshotLabel:  "true",
				fleet.PolicyIndexLabel:       strconv.Itoa(next),
			},
		},
		Spec: fleet.SchedulingPolicySnapshotSpec{Policy: policy, PolicyHash: hash},
	}
	if isPickN {
		snap.Annotations = map[string]string{fleet.NumberOfClustersAnnotation: count}
	}
	if err := s.Hub.CreatePolicySnapshot(ctx, snap); err != nil {
		return nil, fmt.Errorf("create policy snapshot %s: %w", snap.Name, err)
	}
	s.log().Info("new scheduling policy snapshot", "placement", hub.KeyString(key), "snapshot", snap.Name)
	return s.reread(ctx, key, snap.Name)
}

func (s *Scheduler) reread(ctx context.Context, placement hub.Key, name string) (*fleet.PolicySnapshot, error) {
	all, err := s.Hub.ListPolicySnapshots(ctx, placement)
	if err != nil {
		return nil, err
	}
	for _, snap := range all {
		if snap.Name == name {
			return snap, nil
		}
	}
	return nil, hub.NotFound(fleet.PolicySnapshotKind(placement.Namespace), hub.Key{Namespace: placement.Namespace, Name: name})
}
