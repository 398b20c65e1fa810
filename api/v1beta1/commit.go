package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// gitfleet's own API group: records of how gitfleet processed the fleet
// repository. They are not KubeFleet objects and live only in status/.
const (
	GitfleetAPIVersion = "gitfleet.io/v1alpha1"
	KindCommit         = "Commit"
)

// Commit records a commit of the tracked branch that gitfleet could not turn
// into hub content (status/commits/<sha>.yaml). Such a commit is skipped, as
// Flux keeps the last good revision: no snapshot is made from it, the hub
// keeps the fleet objects of the last commit that rendered, and the next
// commit that renders (a revert, a fix) is processed as usual. Its name is
// the full commit hash.
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type Commit struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CommitSpec   `json:"spec"`
	Status CommitStatus `json:"status,omitempty"`
}

// CommitSpec says which commit this is, for people reading the file.
type CommitSpec struct {
	// Subject is the first line of the commit message.
	Subject string `json:"subject,omitempty"`
	// Author is "Name <email>".
	Author string `json:"author,omitempty"`
}

// CommitStatus holds the Rendered condition.
type CommitStatus struct {
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Commit condition type and reasons.
const (
	// CommitConditionRendered is False on a commit that did not render.
	CommitConditionRendered = "Rendered"
	// RenderFailedReason: kustomize or the manifest reader refused the
	// commit (a missing file, a file outside --path, a plugin, a file or
	// tree over the size limits); the message is their error, naming the
	// file.
	RenderFailedReason = "RenderFailed"
	// RenderTimedOutReason: rendering took longer than --render-timeout.
	RenderTimedOutReason = "RenderTimedOut"
	// RenderMemoryExceededReason: rendering needed more memory than
	// --render-memory-limit.
	RenderMemoryExceededReason = "RenderMemoryExceeded"
)
