// Package placement computes the status of a placement
// (ClusterResourcePlacement or ResourcePlacement) from its latest policy
// snapshot, its bindings and its resource snapshots, the way KubeFleet's
// placement controller does for an External rollout strategy (spec §5.3,
// seeds 000/001/004): a Scheduled condition copied from the scheduler, a
// per-cluster status for every picked cluster mirroring its binding, and —
// because a run, not the placement, rolls resources out — a RolloutStarted
// condition that stays Unknown (RolloutControlledByExternalController)
// until every cluster is on the same resource snapshot.
package placement
