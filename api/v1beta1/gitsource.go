package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KindGitSource is the kind of serve's record of the branch it follows;
// GitfleetGroup is the API group of gitfleet's own kinds.
const (
	KindGitSource = "GitSource"
	GitfleetGroup = "gitfleet.io"
)

// GitSource records how `gitfleet serve` follows the tracked branch
// (status/sources/<branch>.yaml; a '/' in the branch becomes '.'), as Flux's
// GitRepository status does: what it fetched and applied, and since when it
// fails. `gitfleet get sources` prints it. Only what a person acts on is
// recorded, so the file changes when the commits change or an error begins
// or ends, never at every fetch.
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type GitSource struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GitSourceSpec   `json:"spec"`
	Status GitSourceStatus `json:"status,omitempty"`
}

// GitSourceSpec is what serve was told to follow.
type GitSourceSpec struct {
	// URL is the remote, without credentials.
	URL string `json:"url,omitempty"`
	// Branch is the tracked branch.
	Branch string `json:"branch"`
	// StatusBranch is where status/ is written, when not on Branch.
	StatusBranch string `json:"statusBranch,omitempty"`
	// Path is the folder of the hub content.
	Path string `json:"path,omitempty"`
}

// GitSourceStatus is how following the branch goes.
type GitSourceStatus struct {
	// LastFetchedCommit is the newest commit of the branch that a person
	// made (gitfleet's own status commits are not counted: they would
	// change this file at every status commit).
	LastFetchedCommit string `json:"lastFetchedCommit,omitempty"`
	// LastAppliedCommit is the newest commit whose hub content rendered
	// and was handed to the hub.
	LastAppliedCommit string `json:"lastAppliedCommit,omitempty"`
	// LastError is the error that began the last failure, kept after it
	// ended; LastErrorTime is when it began.
	LastError     string       `json:"lastError,omitempty"`
	LastErrorTime *metav1.Time `json:"lastErrorTime,omitempty"`
	// Conditions holds Ready: True while fetch and sync succeed and the
	// newest commit that changed hub content rendered; False since the
	// failure began (its lastTransitionTime), with the error: a fetch or
	// sync that fails (GitOperationFailed), or that commit refused
	// (RenderFailed, RenderTimedOut: the reason of its status/commits/
	// record, whose commit and error the message names). While it is
	// refused, LastFetchedCommit is ahead of LastAppliedCommit, the commit
	// whose content the hub keeps; commits that touch only approvals/ or
	// status/ leave it refused.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// GitSource condition type and reasons, as Flux's source controller names
// them. A refused commit takes the reason of its Rendered condition
// (RenderFailedReason, RenderTimedOutReason), where Flux's Kustomization
// says BuildFailed.
const (
	GitSourceConditionReady = "Ready"
	// GitSourceConditionReconciling is True while a commit's render runs
	// beside the loop (reason Rendering), as kstatus reads Reconciling.
	GitSourceConditionReconciling = "Reconciling"
	GitSourceRenderingReason      = "Rendering"
	GitSourceSucceededReason      = "Succeeded"
	GitSourceFailedReason         = "GitOperationFailed"
)
