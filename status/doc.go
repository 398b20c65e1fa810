// Package status is gitfleet's side of the fleet repository: the status tree
// (`status/…`, kubectl-style YAML of every run, placement, snapshot, binding
// and cluster) and the approval request files (`approvals/…`).
//
// Encode/Decode turn fleet objects into files and back, byte-for-byte stable
// so an unchanged object never produces a commit. PathFor/RefFor map objects
// to their place in the tree. TreeStore is the embedded hub's Store over that
// tree: it batches changes into one Changeset per flush and hands it, with a
// commit message that says what happened, to a Committer (the Git loop).
package status
