// Package scheduler turns a placement's policy and the fleet's member
// clusters into what KubeFleet's scheduler leaves for an External
// placement: scheduling policy snapshots and bindings (spec §1.6, §5.3).
//
// A run reads exactly these objects to plan its stages, so their shape
// follows KubeFleet: policy snapshot `<placement>-<index>` with the
// parent-CRP / is-latest-snapshot / policy-index labels and a Scheduled
// condition; bindings `<placement>-<cluster>-<hash>` that start Scheduled,
// keep their state (and the run's snapshot fields) while their cluster stays
// picked, and turn Unscheduled when it is not picked any more or has left
// the fleet. The scheduler never deletes a binding and never touches the
// fields a run owns (resource snapshot, overrides, apply strategy).
package scheduler
